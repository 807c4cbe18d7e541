"""Static discovery: every compile site a file writes, found from its own syntax, and nothing else."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gbls.engine.discovery import find_compiled

from ..support import FIXTURES, ROOT

# What an outer call's arguments and the loops around compiled calls are made of: never compiled.
NOT_COMPILED = {"randn", "ones", "zeros", "Tensor", "tensor", "list", "zip", "range", "full", "arange", "re"}


def sites(source: str) -> list[tuple[str, str, int]]:
    return [(site.qualname, site.kind, site.line) for site in find_compiled(source)]


@pytest.mark.parametrize(
    "fixture", sorted(FIXTURES.rglob("*.py")), ids=lambda path: str(path.relative_to(FIXTURES))
)
def test_no_fixture_has_a_phantom_site(fixture: Path) -> None:
    try:
        source = fixture.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return  # tests/fixtures/faults/non_utf8.py: not Python's default encoding on purpose
    for site in find_compiled(source, str(fixture)):
        assert site.name not in NOT_COMPILED, (fixture, site)
        # The site's name span is what the compile call compiles, inside that call.
        if site.call_span is not None:
            call, name = site.call_span, site.name_span
            assert call.start <= name.start and name.end <= call.end, site


def test_an_outer_calls_arguments_are_not_compile_sites() -> None:
    assert sites((FIXTURES / "engine" / "phantoms.py").read_text()) == [
        ("double", "function", 24),
        ("Tiny", "module", 25),
        ("double", "function", 26),
        ("pair", "function", 27),
        ("double", "function", 28),
        ("pair", "function", 29),
    ]


def test_aliases_factories_and_compile_methods() -> None:
    source = """
import re
import functools
import torch as T
from torch import compile as jit
from torch._dynamo import optimize

fast = T.compile(mode="max-autotune")
eager = functools.partial(T.compile, backend="eager")
compiler = T.compile
pattern = re.compile("x")

@fast
def a(x): return x

@eager
def b(x): return x

@optimize("eager")
def c(x): return x

def d(x): return x

e = compiler(d)
f = jit(lambda x: x)
model = T.nn.Linear(2, 2)
model.compile(fullgraph=True)
code = compile("1", "<s>", "eval")
"""
    assert sites(source) == [
        ("a", "function", 14),
        ("b", "function", 17),
        ("c", "function", 20),
        ("d", "function", 24),
        ("<lambda>", "function", 25),
        ("Linear", "module", 27),
    ]


def test_a_decorator_s_or_a_factory_s_compile_call_is_generic() -> None:
    """It compiles what its enclosing function is given: no one function of its own."""
    utils = FIXTURES / "runs" / "optlib" / "optlib" / "utils.py"
    found = [(site.name, site.kind, site.scope, site.generic) for site in find_compiled(utils.read_text())]
    assert found == [
        ("func", "function", "decorator.<locals>._fn", True),  # torch.compile(...)(func), in a closure
        ("func", "function", "compile_if_available", True),  # a functools.partial of torch.compile
    ]
    source = """
import torch


def helper(x):
    return x


def compile_it(fn, **options):
    local = helper
    return torch.compile(fn, **options), torch.compile(local)
"""
    assert [(site.name, site.generic) for site in find_compiled(source)] == [("fn", True), ("local", False)]


def test_a_file_that_does_not_import_torch_compiles_nothing() -> None:
    assert sites("import re\nx = re.compile('a')\nmodel.compile()\n") == []


def test_discovery_imports_no_inference_library() -> None:
    """Syntax only: jedi is the fixes' (a definition across files), never imported for discovery."""
    code = "import sys, gbls.engine.discovery; print('jedi' in sys.modules)"
    found = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert found.stdout == "False\n", found.stderr


def test_what_a_compile_call_compiles_as_far_as_the_syntax_shows() -> None:
    source = """
import torch
from transformers import BertModel

class Net(torch.nn.Module):
    pass

def build():
    return Net()

def main():
    net = Net()
    model = BertModel(config)
    other = build()
    torch.compile(net)
    torch.compile(model)
    torch.compile(other)
    torch.compile(model.forward)
    model.forward = torch.compile(model.forward)

if __name__ == "__main__":
    main()
"""
    found = find_compiled(source)
    assert [(s.name, s.qualname, s.kind, s.first_line, s.scope, s.in_main_block) for s in found] == [
        ("Net", "Net", "module", 5, "main", True),  # the class's line
        ("BertModel", "BertModel", "module", 16, "main", True),  # a library's: the call's line
        ("other", "other", "module", 17, "main", True),  # the run will say what build() built
        ("forward", "model.forward", "method", 18, "main", True),
        ("forward", "model.forward", "method", 19, "main", True),
    ]


def test_main_only_functions_are_those_only_the_main_block_calls() -> None:
    source = """
import torch

@torch.compile
def helper(x): return x

@torch.compile
def shared(x): return x

def train():
    helper(1)

def main():
    train()

shared(1)
if __name__ == "__main__":
    main()
    shared(2)
"""
    assert [(s.qualname, s.in_main_block) for s in find_compiled(source)] == [
        ("helper", True),  # only main() calls it, through train()
        ("shared", False),
    ]
    called = source.replace("@torch.compile\ndef helper(x): return x", "def helper(x): return x")
    called = called.replace("    helper(1)", "    torch.compile(helper)(1)")
    assert [(s.qualname, s.in_main_block, s.scope) for s in find_compiled(called)] == [
        ("shared", False, ""),
        ("helper", True, "train"),
    ]
