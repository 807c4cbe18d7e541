"""The plugin's checks: a callable, or a test's whole body, run under the capture; the test fails
with the graph breaks and recompilations gbls finds, said as gbls says them: where, the chain to
the root cause, the gb_type, Dynamo's explanation and hints, the guard that failed.

A finding the project's baseline holds (``--gbls-baseline``) does not fail; while the baseline is
being updated (``--gbls-update-baseline``) nothing does, and every finding is recorded.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

import torch
import torch._dynamo.eval_frame

from ..engine import baseline
from ..engine.model import BreakReport, FileReport, RecompileReport
from ..engine.ranges import Span
from ..engine.sources import read_source
from . import state
from .session import capturing

T = TypeVar("T")


class GraphBreaksFound(AssertionError):
    """The check found graph breaks (or could not run what it was to check)."""


class RecompilesFound(AssertionError):
    """The check found recompilations."""


def assert_no_graph_breaks(
    fn: Callable[..., T], /, *args: Any, own_code_only: bool = False, **kwargs: Any
) -> T:
    """Call ``fn(*args, **kwargs)`` compiled on gbls's backend (a compiled ``fn`` is compiled again from
    what it compiles) and fail with every graph break in it; what ``fn`` returned otherwise.

    ``own_code_only``: only the breaks whose root cause is the project's own code (see ``state``),
    not a library's.
    """
    with capturing() as captured:
        compiled: Callable[..., T] = torch.compile(uncompiled(fn))
        result = compiled(*args, **kwargs)
    _check_breaks(captured.reports(), own_code_only, f"`{name_of(fn)}`")
    return result


def assert_no_recompiles(
    fn: Callable[..., T],
    calls: Iterable[tuple[Any, ...] | Mapping[str, Any]],
    *,
    dynamic: bool | None = None,
) -> list[T]:
    """Call ``fn`` compiled once (with ``dynamic`` as ``torch.compile`` takes it) for each of ``calls``,
    positional arguments as a tuple or keyword arguments as a dict, and fail if Dynamo compiled it
    again for one, with the guard that failed and where; what the calls returned otherwise."""
    with capturing() as captured:
        compiled: Callable[..., T] = torch.compile(uncompiled(fn), dynamic=dynamic)
        results = [compiled(**call) if isinstance(call, Mapping) else compiled(*call) for call in calls]
    reports = captured.reports()
    _check_analysed(reports)
    project = state.current()
    found = [(report, r) for report in reports for r in report.recompiles if not r.suppressed]
    entries = [baseline.recompile_entry(report.path, r, project.folder, read_source) for report, r in found]
    failing = [
        pair for pair, new in zip(found, project.new(_functions(reports), entries), strict=True) if new
    ]
    if failing:
        said = [describe_recompile(report, r) for report, r in failing]
        raise RecompilesFound(f"gbls: `{name_of(fn)}` recompiled:\n\n" + "\n\n".join(said) + _notes(reports))
    return results


@contextlib.contextmanager
def fullgraph(own_code_only: bool = False) -> Iterator[None]:
    """The ``fullgraph`` marker: the block (a test's body) under the capture, failing with every graph
    break in what it compiled."""
    with capturing() as captured:
        yield
    _check_breaks(captured.reports(), own_code_only, "what the test compiled")


def uncompiled(fn: Any) -> Any:
    """What ``torch.compile`` compiled into ``fn``, if it did; else ``fn``."""
    if isinstance(fn, torch._dynamo.eval_frame.OptimizedModule):
        return fn._orig_mod
    return getattr(fn, "_torchdynamo_orig_callable", fn)


def name_of(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", type(fn).__qualname__))


def _check_breaks(reports: list[FileReport], own_code_only: bool, what: str) -> None:
    _check_analysed(reports)
    project = state.current()
    found = [
        (report, brk)
        for report in reports
        for brk in report.breaks
        if not own_code_only or project.owns(brk.root.path)
    ]
    entries = [baseline.break_entry(report.path, brk, project.folder, read_source) for report, brk in found]
    failing = [
        pair for pair, new in zip(found, project.new(_functions(reports), entries), strict=True) if new
    ]
    if failing:
        count = f"{len(failing)} graph break{'s' * (len(failing) != 1)}"
        said = [describe_break(report, brk) for report, brk in failing]
        raise GraphBreaksFound(f"gbls: {count} in {what}:\n\n" + "\n\n".join(said) + _notes(reports))


def _check_analysed(reports: list[FileReport]) -> None:
    """A compiled function that never ran under Dynamo passes no check: say why it did not."""
    missed = [(report, f) for report in reports for f in report.functions if not f.analysed]
    if missed:
        said = [f"{_at(report.path, f.span)}: not analysed: {f.qualname}: {f.reason}" for report, f in missed]
        raise GraphBreaksFound("gbls:\n" + "\n".join(said) + _notes(reports))


def _functions(reports: list[FileReport]) -> set[tuple[str, str]]:
    return {(f.path, f.qualname) for report in reports for f in report.functions if f.analysed}


def _at(path: str, span: Span) -> str:
    """``path:line:column``, the path relative to the current folder when it is under it."""
    shown = os.path.relpath(path)
    return f"{path if shown.startswith('..') else shown}:{span.line}:{span.column + 1}"


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def describe_break(report: FileReport, brk: BreakReport) -> str:
    lines = [f"{_at(report.path, brk.span)}: {brk.code} {brk.message} [in {brk.function}]"]
    if brk.explanation:
        lines.append(_indented(brk.explanation))
    lines.append("  from the compiled function to the root cause:")
    lines += [f"    {_at(loc.path, loc.span)} in {loc.function}" for loc in brk.chain]
    lines += [_indented(f"hint: {hint}") for hint in brk.hints]
    if brk.url:
        lines.append(f"  {brk.url}")
    return "\n".join(lines)


def describe_recompile(report: FileReport, found: RecompileReport) -> str:
    lines = [f"{_at(report.path, found.span)}: {found.code} {found.message}"]
    where = found.guard_at
    if where is not None:
        lines.append(f"  the guard was installed at {_at(where.path, where.span)} in {where.function}")
    guard = found.guard
    if guard is not None and guard.hint:
        lines.append(_indented(f"hint: {guard.hint}"))
    lines.append(f"  compilations: {', '.join(r.compile_id for r in found.recompiles)}; see {found.url}")
    return "\n".join(lines)


def _notes(reports: list[FileReport]) -> str:
    notes = dict.fromkeys(note for report in reports for note in report.notes)
    return "".join(f"\ngbls: {note}" for note in notes)
