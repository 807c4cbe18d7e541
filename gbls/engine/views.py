"""Each workspace file's view of the analyses that reached it.

One analysis (a file's, or a run's) finds breaks, recompilations and compiled functions in many
files: the ``print`` in ``model.py`` that splits the graph of a model compiled in ``train.py``.
``by_file`` gives each file the findings that belong to it (its ``FileView``), and the
breaks that split a compiled function's graph there; ``combined`` puts one file's views from
several analyses together. A file no analysis reached has no view: it is not analysed, never clean.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable
from typing import TypeVar

from ..worker.shared.protocol import Outcome
from .model import BreakReport, FileReport, FileView, FunctionReport, RecompileReport


def by_file(report: FileReport) -> dict[str, FileView]:
    """The analysis ``report`` split into the view of each file it reached, its analysed file first."""
    placed = [
        report.path,
        *(b.path for b in report.breaks + report.suppressed),
        *(b.split.path for b in report.breaks if b.split is not None),
        *(r.path for r in report.recompiles),
        *(f.path for f in report.functions),
        *(s.path for s in report.shapes),
    ]
    # A workspace file whose code Dynamo translated was analysed, even where it found nothing; one
    # the program merely executed (a data loader's) was not.
    executed = set(report.executed)
    translated = {
        *(code.path for f in report.functions for code in f.reached),
        *(location.path for b in report.breaks + report.suppressed for location in b.chain),
        *(r.frame.path for r in report.recompiles),
        *(f.path for f in report.functions),
    }
    reached = [path for path in translated if path in executed]
    files = {path: _empty(report, path) for path in dict.fromkeys([*placed, *reached]) if path}
    for path, view in files.items():
        failure_here = report.message and (report.failure_path or report.path) == path
        files[path] = dataclasses.replace(
            view,
            status=report.status if path == report.path or failure_here else "ok",
            message=report.message if failure_here else "",
            failure_kind=report.failure_kind if failure_here else "",
            failure_span=report.failure_span if failure_here else None,
            failure_path="",
            functions=tuple(f for f in report.functions if f.path == path),
            breaks=tuple(b for b in report.breaks if b.path == path),
            suppressed=tuple(b for b in report.suppressed if b.path == path),
            splits=tuple(b for b in report.breaks if b.split is not None and b.split.path == path),
            elsewhere=tuple(
                b
                for b in report.breaks
                if b.path != path
                and any(f.path == path and f.qualname in b.functions for f in report.functions)
            ),
            recompiles=tuple(r for r in report.recompiles if r.path == path),
            notes=report.notes if path == report.path else (),
            translated=path in translated,
            cuda_only=report.cuda_only if path == report.path else (),
            cut=report.cut,
            elided=report.elided,
            reached_from=(report.path,) if path != report.path else (),
            shapes=tuple(s for s in report.shapes if s.path == path),
            stances=tuple(s for s in report.stances if s.stance.path == path),
            # What the program did is its analysed file's: the proof of a fix on that file's view
            # (the CLI proves the views) holds the fixed program to it.
            outcome=report.outcome if path == report.path else Outcome(),
        )
    return files


def _empty(report: FileReport, path: str) -> FileView:
    return FileView(
        path=path,
        status="ok",
        message="",
        failure_kind="",
        failure_span=None,
        functions=(),
        breaks=(),
        suppressed=(),
        output=report.output,
        torch=report.torch,
        seconds=report.seconds,
        executed=report.executed,
        origin=report.origin,
    )


def combined(views: list[FileView]) -> FileView:
    """One file's views from several analyses as one: each finding once (the first analysis's word
    for it), the first failure; the file's own analysis first if it is among them."""
    first, *others = sorted(views, key=lambda view: view.origin != "")
    if not others:
        return first
    failed = next((view for view in views if view.message), first)
    return dataclasses.replace(
        first,
        status=failed.status,
        message=failed.message,
        failure_kind=failed.failure_kind,
        failure_span=failed.failure_span,
        functions=_unique(_reached([f for view in views for f in view.functions]), _function_key),
        breaks=_unique([b for view in views for b in view.breaks], _break_key),
        suppressed=_unique([b for view in views for b in view.suppressed], _break_key),
        splits=_unique([b for view in views for b in view.splits], _break_key),
        elsewhere=_unique([b for view in views for b in view.elsewhere], _break_key),
        recompiles=_unique([r for view in views for r in view.recompiles], _recompile_key),
        notes=tuple(dict.fromkeys(note for view in views for note in view.notes)),
        executed=tuple(dict.fromkeys(path for view in views for path in view.executed)),
        translated=any(view.translated for view in views),
        cuda_only=_unique([c for view in views for c in view.cuda_only], lambda call: (call.call, call.span)),
        cut=next((view.cut for view in views if view.cut is not None), None),
        elided=tuple(dict.fromkeys(e for view in views for e in view.elided)),
        reached_from=tuple(dict.fromkeys(path for view in views for path in view.reached_from)),
        shapes=_unique([s for view in views for s in view.shapes], lambda found: (found.path, found.shape)),
        stances=_unique([s for view in views for s in view.stances], lambda found: found.stance),
    )


def _reached(functions: list[FunctionReport]) -> list[FunctionReport]:
    """``functions`` but those one analysis could not run that another ran (a library method its
    file's own analysis could not call, which the project's tests called), and the compile calls
    that functions went through in another analysis (a decorator's, which compiles each)."""
    ran = {(f.path, f.qualname) for f in functions if f.analysed}
    calls = {(f.target.call_path, f.target.call_line) for f in functions if f.analysed}
    return [
        f for f in functions if f.analysed or ((f.path, f.qualname) not in ran and not went_through(f, calls))
    ]


def went_through(site: FunctionReport, calls: set[tuple[str, int]]) -> bool:
    """Whether any of ``calls`` (where torch.compile ran: path, line) is ``site``'s compile call."""
    call = site.call
    return call is not None and any(
        (site.path, line) in calls for line in range(call.line, call.end_line + 1)
    )


def _break_key(brk: BreakReport) -> Hashable:
    return (brk.path, brk.key)


def _recompile_key(found: RecompileReport) -> Hashable:
    return (found.path, found.key)


def _function_key(function: FunctionReport) -> Hashable:
    return (function.path, function.qualname, function.span.line, function.span.column)


T = TypeVar("T")


def _unique(items: list[T], key: Callable[[T], Hashable]) -> tuple[T, ...]:
    seen: dict[Hashable, T] = {}
    for item in items:
        seen.setdefault(key(item), item)
    return tuple(seen.values())
