"""What a program means and how many graphs it compiles, as plain torch has it (no gbls): the oracle
of the fixes' proofs.

- ``eager_run``: the program run with ``torch.compile`` (the program's own calls of it) as the
  identity, as its users run it without compiling: what each call of a compiled function (a
  module's forward) returns (a generator function's: the list of what it yielded, as the program
  iterated it), what it prints on stdout, and its exit status. torch's generators,
  Python's ``random`` and NumPy's start from one seed in each run, so that two runs agree.
- ``graphs_compiled``: the program run compiled, on a backend that counts the graphs Dynamo hands it.

Each runs forked from an interpreter that imported torch once (``forked``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .forked import run_forked

_folder = tempfile.mkdtemp(prefix="gbls-meaning-")

SEEDED = r"""
import atexit, functools, inspect, os, random, sys
def _seeded():
    torch.manual_seed(0)
    random.seed(0)
    import numpy
    numpy.random.seed(0)
"""

# torch.compile as the identity, recording what the compiled functions return, saved as the child exits
# (torch's own compile calls, as torch.cond makes run eagerly, compile as they would).
EAGER = (
    SEEDED
    + r"""
RETURNS = []
NAMES = []  # the compiled function each of RETURNS is a call of
def _portable(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_portable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _portable(item) for key, item in value.items()}
    return f"<{type(value).__qualname__}>"
_compile = torch.compile
_torch = os.path.dirname(torch.__file__)
def _identity(model=None, **options):
    if sys._getframe(1).f_code.co_filename.startswith(_torch):  # torch's own (torch.cond eagerly)
        return _compile(model, **options)
    if model is None:
        return lambda actual: _identity(actual, **options)
    if isinstance(model, torch.nn.Module):
        def hooked(module, args, out):
            NAMES.append(type(module).__qualname__)
            RETURNS.append(_portable(out))
        model.register_forward_hook(hooked)
        return model
    @functools.wraps(model)
    def recorded(*args, **kwargs):
        out = model(*args, **kwargs)
        NAMES.append(getattr(model, "__qualname__", type(model).__qualname__))
        if inspect.isgenerator(out):  # what it returns is what it yields, recorded as it is iterated
            items = []
            RETURNS.append(items)
            return _yielding(out, items)
        RETURNS.append(_portable(out))
        return out
    return recorded
def _yielding(generator, items):
    for item in generator:
        items.append(_portable(item))
        yield item
torch.compile = _identity
def _in_child():
    _seeded()
    folder = os.environ["GBLS_MEANING"]
    atexit.register(lambda: torch.save((RETURNS, NAMES), os.path.join(folder, f"{os.getpid()}.pt")))
os.register_at_fork(after_in_child=_in_child)
"""
)

# torch.compile on a backend that counts the graphs, the count saved as the child exits.
COUNTED = (
    SEEDED
    + r"""
GRAPHS = [0]
_compile = torch.compile
def _counting(gm, example_inputs):
    GRAPHS[0] += 1
    return gm.forward
def _counted(model=None, **options):
    options["backend"] = _counting
    options.pop("mode", None)
    options.pop("options", None)
    if model is None:
        return lambda actual: _compile(actual, **options)
    return _compile(model, **options)
torch.compile = _counted
def _in_child():
    _seeded()
    folder = os.environ["GBLS_MEANING"]
    def save():
        with open(os.path.join(folder, f"{os.getpid()}.graphs"), "w") as handle:
            handle.write(str(GRAPHS[0]))
    atexit.register(save)
os.register_at_fork(after_in_child=_in_child)
"""
)


@dataclass
class Eager:
    returns: list[Any]  # what each call of a compiled function returned, in order
    functions: list[str]  # the compiled function each of them is a call of
    stdout: str
    status: int


def _run(path: Path, setup: str) -> tuple[int, int, str]:
    output = Path(_folder) / f"{path.stem}-{os.urandom(4).hex()}.out"
    output.touch()
    environment = dict(os.environ, GBLS_MEANING=_folder)
    environment.pop("TORCH_LOGS", None)
    errors = Path(_folder) / "stderr"
    errors.touch()
    ran = run_forked(
        path, cwd=path.parent, environment=environment, stdout=output, stderr=errors, setup=setup
    )
    return ran.pid, ran.status, output.read_text()


def eager_run(path: Path) -> Eager:
    pid, status, stdout = _run(path, EAGER)
    saved = Path(_folder) / f"{pid}.pt"
    returns, functions = torch.load(saved, weights_only=False) if saved.exists() else ([], [])
    return Eager(returns, functions, stdout, status)


def graphs_compiled(path: Path) -> int:
    pid, _, _ = _run(path, COUNTED)
    return int((Path(_folder) / f"{pid}.graphs").read_text())


def assert_same_returns(before: Any, after: Any) -> None:
    """The same values: tensors within a float's tolerance, the rest equal, in the same structure."""
    if isinstance(before, torch.Tensor):
        assert isinstance(after, torch.Tensor), (before, after)
        torch.testing.assert_close(after, before, rtol=1e-4, atol=1e-6, equal_nan=True)
    elif isinstance(before, list):
        assert isinstance(after, list) and len(after) == len(before), (before, after)
        for old, new in zip(before, after, strict=True):
            assert_same_returns(old, new)
    elif isinstance(before, dict):
        assert isinstance(after, dict) and after.keys() == before.keys(), (before, after)
        for key in before:
            assert_same_returns(before[key], after[key])
    else:
        assert after == before


def assert_same_meaning(
    before: Eager,
    after: Eager,
    checked_after: Mapping[str, str] | None = None,
    returns_first: Mapping[str, int] | None = None,
) -> None:
    """The same exit, output and results (within a float's tolerance). ``checked_after``: the compiled
    functions a fix replaced by a compiled one whose result a check then reads in Python, (was, now):
    that one also returns on the calls where the check raises, which the program never sees; what
    the old one returned is returned by the new one in the same order, among those calls.
    ``returns_first``: the compiled functions a fix replaced by one that returns the first items of
    what they returned (one: the item itself), Python computing the rest after it."""
    assert (after.status, after.stdout) == (before.status, before.stdout)
    first = dict(returns_first or {})

    def returned(value: Any, name: str) -> Any:
        count = first.get(name, 0)
        if not count:
            return value
        assert isinstance(value, list) and len(value) > count, (name, value)
        return value[0] if count == 1 else value[:count]

    pairs = dict(checked_after or {})
    for old, new in pairs.items():
        now = iter(value for value, name in zip(after.returns, after.functions, strict=True) if name == new)
        for value, name in zip(before.returns, before.functions, strict=True):
            if name == old:
                assert any(_same(returned(value, name), was) for was in now), (old, value, new)
    kept = set(pairs) | set(pairs.values())

    def others(run: Eager) -> list[Any]:
        return [
            returned(value, name)
            for value, name in zip(run.returns, run.functions, strict=True)
            if name not in kept
        ]

    assert_same_returns(others(before), others(after))


def _same(before: Any, after: Any) -> bool:
    try:
        assert_same_returns(before, after)
    except AssertionError:
        return False
    return True
