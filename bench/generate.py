"""Write the benchmark's input files: 1, 10 and 50 compiled functions with a realistic mix of breaks.

Deterministic: the same sizes always give the same text, so the committed files under
``bench/files`` are what this writes (``python bench/generate.py`` rewrites them).

Function ``i`` has kind ``KINDS[i % len(KINDS)]``; every file of 10 or more functions has each
kind. Every compiled function is called once at module level with small real tensors, so that
``python file.py``, ``torch._dynamo.explain`` and gbls all run the same calls.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

FILES = Path(__file__).parent / "files"
SIZES = (1, 10, 50)
KINDS = ("print", "clean", "item", "branch", "nonzero", "graph_break", "chain", "module", "clean", "print")
CHAIN_DEPTH = 5


def _print(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_print(x):
    y = x.sin() * {i + 1}.5
    print("f{i}_print", y.shape)
    return y.cos().sum()
"""
    return code, f"f{i}_print(torch.randn(8))"


def _clean(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_clean(x, w):
    h = torch.relu(x @ w + {i})
    return h.softmax(dim=-1).sum(dim=0)
"""
    return code, f"f{i}_clean(torch.randn(4, 8), torch.randn(8, 8))"


def _item(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_item(x):
    scale = x.abs().max().item()
    return x / (scale + {i})
"""
    return code, f"f{i}_item(torch.randn(8))"


def _branch(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * {i}
    return x.relu()
"""
    return code, f"f{i}_branch(torch.randn(8))"


def _nonzero(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * {i}
"""
    return code, f"f{i}_nonzero(torch.randn(8))"


def _graph_break(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - {i}).tanh()
"""
    return code, f"f{i}_explicit(torch.randn(8))"


def _chain(i: int) -> tuple[str, str]:
    """A compiled function whose print is CHAIN_DEPTH helpers deep."""
    last = CHAIN_DEPTH
    helpers = [
        f"""
def f{i}_h{last}(x):
    print("deep in f{i}", x.shape)
    return x + {last}
"""
    ]
    for depth in range(last - 1, 0, -1):
        helpers.append(
            f"""
def f{i}_h{depth}(x):
    return f{i}_h{depth + 1}(x * 2) - {depth}
"""
        )
    code = (
        "\n\n\n".join(h.strip() for h in helpers)
        + f"""


@torch.compile
def f{i}_chain(x):
    return f{i}_h1(x.sin()).sum()
"""
    )
    return code, f"f{i}_chain(torch.randn(8))"


def _module(i: int) -> tuple[str, str]:
    code = f"""
class Head{i}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > {i % 3} * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head{i} = torch.compile(Head{i}())
"""
    return code, f"head{i}(torch.randn(2, 16))"


TEMPLATES: dict[str, Callable[[int], tuple[str, str]]] = {
    "print": _print,
    "clean": _clean,
    "item": _item,
    "branch": _branch,
    "nonzero": _nonzero,
    "graph_break": _graph_break,
    "chain": _chain,
    "module": _module,
}


def source(count: int) -> str:
    plural = "s" * (count != 1)
    header = f'''"""gbls benchmark input: {count} compiled function{plural} (written by bench/generate.py)."""

# revision 0 (the benchmark edits this comment)
import torch
'''
    blocks, calls = [header.strip()], []
    for i in range(count):
        body, call = TEMPLATES[KINDS[i % len(KINDS)]](i)
        blocks.append(body.strip())
        calls.append(call)
    blocks.append("torch.manual_seed(0)\n" + "\n".join(calls))
    return "\n\n\n".join(blocks) + "\n"


LIBRARY = Path(__file__).parent / "library"
LIBRARY_BLOCKS = 50
LIBRARY_SHAPES = ((4,), (4, 4), (8, 4), (4, 8), (8, 8))
LIBRARY_HEADER = '''"""gbls benchmark input: a library in HeavyBall's shape (written by bench/generate.py).

{count} building blocks, each compiled by a decorator on its first call with dynamic=False (every new
shape recompiles) and run as it is inside compiled code; tests/test_blocks.py runs them in
{tests} tests."""

import functools

import torch

dynamic = False


def decorator(func, fullgraph=True):
    compiled = None

    @functools.wraps(func)
    def _fn(*args, **kwargs):
        if torch.compiler.is_compiling():
            return func(*args, **kwargs)
        nonlocal compiled
        if compiled is None:
            compiled = torch.compile(fullgraph=fullgraph, dynamic=dynamic)(func)
        return compiled(*args, **kwargs)

    return _fn


def decorator_no_fullgraph(func):
    return decorator(func, fullgraph=False)


no_compile_qr = torch.compiler.disable(torch.linalg.qr)


@decorator
def compiled_einsum(expr, *args):
    return torch.einsum(expr, *args)


def orthogonal_(x):
    if x.dim() == 2 and x.shape[0] == x.shape[1]:
        return no_compile_qr(x).Q
    return x / x.norm()


def copy_(target, source):
    target.copy_(source)
'''


def _library_block(i: int) -> str:
    """Block ``i``: clean, an einsum traced inline, a disabled call in a helper, a helper re-entered
    after a break, or an early return (an empty graph under fullgraph=True), in turn."""
    kind = i % 5
    if kind == 0:
        return f"""
@decorator
def block{i}(xs, beta):
    for x in xs:
        x.mul_(beta).add_({i})
    return xs
"""
    if kind == 1:
        return f"""
@decorator
def block{i}(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * {i}
"""
    if kind == 2:
        return f"""
@decorator_no_fullgraph
def block{i}(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + {i})
    return y.sum()
"""
    if kind == 3:
        return f"""
@decorator_no_fullgraph
def block{i}(x):
    y = x.sin() + {i}
    print("block{i}")
    copy_(x, y)
    return x
"""
    return f"""
@decorator
def block{i}(x):
    if x.dim() == 1:
        return
    x.mul_({i})
"""


def library(count: int = LIBRARY_BLOCKS) -> dict[str, str]:
    """The library's files by their path in its folder: its blocks, the test file that runs them in
    groups of five, one test per group and shape, and the pytest settings (one order, always)."""
    groups = count // 5
    tests = groups * len(LIBRARY_SHAPES)
    blocks = LIBRARY_HEADER.format(count=count, tests=tests).strip()
    blocks += "\n\n\n" + "\n\n\n".join(_library_block(i).strip() for i in range(count)) + "\n"
    test = f'''"""The library's tests: {tests} of them, each running five blocks on one shape."""

import pytest
import torch
from heavylib import blocks


@pytest.mark.parametrize("shape", {list(LIBRARY_SHAPES)!r}, ids=str)
@pytest.mark.parametrize("group", range({groups}))
def test_a_group_of_blocks(group, shape):
    x = torch.randn(shape)
    first = 5 * group
    getattr(blocks, f"block{{first}}")([x.clone()], 0.9)
    for i in range(first + 1, first + 5):
        getattr(blocks, f"block{{i}}")(x.clone())
'''
    return {
        "heavylib/__init__.py": "",
        "heavylib/blocks.py": blocks,
        "tests/test_blocks.py": test,
        "pytest.ini": "[pytest]\naddopts = -p no:randomly\n",
    }


def write_library() -> Path:
    """Write the library's files that differ from what is on disk; return its folder."""
    for name, text in library().items():
        path = LIBRARY / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return LIBRARY


def path_for(count: int) -> Path:
    return FILES / f"fns_{count:03d}.py"


def write(sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """Write the files that differ from what is on disk; return every file's path."""
    FILES.mkdir(exist_ok=True)
    paths = []
    for count in sizes:
        path = path_for(count)
        text = source(count)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in [*write(), write_library()]:
        print(written.relative_to(Path.cwd()) if written.is_relative_to(Path.cwd()) else written)
    sys.exit(0)
