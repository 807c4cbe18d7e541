"""``gbls check`` output formats: text (like ruff) and JSON; SARIF and GitHub annotations are in
``scanning.py``.

Lines and columns are 1-based here; ends are exclusive.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import __version__
from .engine import views
from .engine.baseline import Applied, Entry
from .engine.fixes.edits import Fix
from .engine.fixes.policy import Fixes
from .engine.model import (
    BreakReport,
    FileReport,
    Location,
    Provenance,
    RecompileReport,
    costliest_first,
    imported_from,
)
from .engine.ranges import Span
from .worker.shared.protocol import Run

if TYPE_CHECKING:  # the trace reader, imported only where a trace is read
    from .traces.load import Imported

# A project run as the outputs list it: what ran, and the analysis of it.
Ran = list[tuple[Run, FileReport]]


def relative(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def where(span: Span) -> str:
    return f"{span.line}:{span.column + 1}"


def status(report: FileReport) -> str:
    return report.status if report.status in ("ok", "timeout") else "error"


def unanalysed(reports: list[FileReport]) -> int:
    """Compile sites gbls did not run: none of them may pass for clean."""
    return sum(1 for report in reports for function in report.functions if not function.analysed)


def unreached(reports: list[FileReport], named: list[str], why: Callable[[str], str]) -> dict[str, str]:
    """The files asked for whose code no analysis translated, though it ran, each with why (``why``
    of its path, after "not analysed: "): they are not analysed, never clean. A file whose analysis
    failed (a syntax error) says its failure instead."""
    return {
        report.path: f"not analysed: {why(report.path)}"
        for report in reports
        if report.path in named and not report.translated and not report.failure_kind
    }


def command(run: Run) -> str:
    """``python train.py --config c.json``, or ``python -m scripts.train ...``, as the user types it."""
    target = ["-m", run.module] if run.module else [relative(run.script)]
    return " ".join(["python", *target, *run.args])


def text(
    reports: list[FileReport],
    fixes: Fixes,
    baselined: Applied | None = None,
    runs: Ran | None = None,
    missed: dict[str, str] | None = None,
) -> str:
    """ruff's shape: ``path:line:col: CODE [*] message``, ``[*]`` where ``--fix`` would fix it; with a
    baseline, what it held and which of its entries no longer occur; each run first, and the files
    asked for that nothing reached."""
    lines: list[str] = []
    for run, analysis in runs or []:
        how = "ok" if analysis.status == "ok" else analysis.status
        lines.append(f"run `{run.name}`: {command(run)} (in {relative(run.cwd) or '.'}): {how}")
    fixable = 0
    for report in reports:
        path = relative(report.path)
        for brk in report.breaks:
            fix = fixes.get((report.path, brk.key))
            mark = ""
            if fix is not None and fix.safe:
                mark = "[*] "
                fixable += 1
            lines.append(f"{path}:{where(brk.span)}: {brk.code} {mark}{message_of(brk)}")
        for problem in report.problems:
            lines.append(f"{path}:{where(problem.span)}: {problem.code} {problem_text(problem)}")
        for function in report.functions:
            if not function.analysed:
                lines.append(
                    f"{path}:{where(function.span)}: not analysed: {function.qualname}: {function.reason}"
                )
        if report.message and report.failure_span is not None:
            lines.append(f"{path}:{where(report.failure_span)}: error: {report.message}")
        for call in report.cuda_only:
            lines.append(f"{path}:{where(call.span)}: note: {call.message}")
        if report.path in (missed or {}):
            lines.append(f"{path}:1:1: {(missed or {})[report.path]}")
    breaks = sum(len(r.breaks) for r in reports)
    failed = sum(1 for r in reports if status(r) != "ok")
    files = len(reports)
    summary = f"Found {breaks} graph break{'s' * (breaks != 1)}"
    raising = sum(1 for r in reports for brk in r.breaks if brk.raises)
    if raising:
        summary += f" ({raising} raise{'s' * (raising == 1)} at run time)"
    summary += f" in {files} file{'s' * (files != 1)}"
    if failed:
        summary += f" ({failed} could not be fully analysed)"
    functions = unanalysed(reports)
    if functions:
        summary += f"; {functions} compiled function{'s' * (functions != 1)} not analysed"
    if missed:
        summary += f"; {len(missed)} file{'s' * (len(missed) != 1)} not analysed"
    problems = [problem for r in reports for problem in r.problems]
    if problems:
        limited = sum(1 for problem in problems if problem.limit is not None)
        summary += f"; {len(problems)} recompiling function{'s' * (len(problems) != 1)}"
        summary += f" ({limited} hit the recompile limit)" if limited else ""
    if baselined is not None:
        summary += f"; {baselined.matched} more in the baseline {relative(baselined.path)}"
    lines.append(summary + ".")
    if fixable:
        lines.append(f"[*] {fixable} fixable with `gbls check --fix`.")
    if baselined is not None and baselined.removable:
        lines.append(removable(baselined.path, baselined.removable))
    return "\n".join(lines) + "\n"


def removable(path: str, entries: list[Entry], option: str = "--update-baseline") -> str:
    """The entries of the baseline ``path`` that no longer occur, and the ``option`` that removes them:
    each one left in could let its finding come back unnoticed."""
    if len(entries) == 1:
        said = f"1 entry no longer occurs; `{option}` removes it"
    else:
        said = f"{len(entries)} entries no longer occur; `{option}` removes them"
    return "\n".join([f"{relative(path)}: {said}:", *(f"  {entry.describe()}" for entry in entries)])


def message_of(brk: BreakReport) -> str:
    where = f"in {brk.function}"
    if brk.via:
        where += f" via {' → '.join(brk.via)}"
    if brk.eager:
        where += f"; {brk.function} {brk.eager}"
    if brk.nested:
        where += f"; nested graph break: {brk.nested}"
    elif brk.own_frame:
        where += f"; {brk.own_frame}"
    if brk.cause.processes:
        where += f"; {', '.join(brk.cause.processes)}"
    count = f" (hit {brk.count} times)" if brk.count > 1 else ""
    text = f"{brk.title} [{where}]{count}{imported_from(brk.provenance)}"
    return f"{brk.raises}: {text}" if brk.raises else text


def problem_text(problem: RecompileReport) -> str:
    """A recompilation's message, and where it came from if a real run's trace said it."""
    return problem.message + imported_from(problem.provenance)


def provenance_json(provenance: Provenance | None) -> dict[str, Any] | None:
    if provenance is None:
        return None
    return {
        "path": provenance.trace,
        "date": provenance.date,
        "ranks": list(provenance.ranks),
        "of_ranks": provenance.of_ranks,
        "compile_ids": list(provenance.compile_ids),
    }


def _range(span: Span) -> dict[str, Any]:
    return {
        "start": {"line": span.line, "column": span.column + 1},
        "end": {"line": span.end_line, "column": span.end_column + 1},
    }


def _frame(location: Location) -> dict[str, Any]:
    span = location.span
    return {
        "path": location.path,
        "function": location.function,
        "line": span.line,
        "column": span.column + 1,
        "end_line": span.end_line,
        "end_column": span.end_column + 1,
    }


def _position(span: Span, end: bool) -> dict[str, int]:
    return (
        {"line": span.end_line, "column": span.end_column + 1}
        if end
        else {"line": span.line, "column": span.column + 1}
    )


def _fix(fix: Fix | None) -> dict[str, Any] | None:
    """ruff's fix object: what it does, whether ``--fix`` applies it, and its edits."""
    if fix is None:
        return None
    return {
        "message": fix.title,
        "applicability": "safe" if fix.safe else "unsafe",
        "edits": [
            {
                "path": edit.path,
                "content": edit.plain_text,
                "location": _position(edit.span, end=False),
                "end_location": _position(edit.span, end=True),
            }
            for edit in fix.edits
        ],
    }


def to_json(
    reports: list[FileReport],
    torch_version: str,
    fixes: Fixes,
    baselined: Applied | None = None,
    runs: Ran | None = None,
    missed: dict[str, str] | None = None,
    traces: list[Imported] | None = None,
) -> str:
    """The report as ``gbls.schema.json`` describes it."""
    files = []
    for report in reports:
        reached = report.path not in (missed or {})
        ranks = _ranks(report)
        files.append(
            {
                "path": report.path,
                "status": status(report),
                "analysed": reached,
                "message": report.message if reached else (missed or {})[report.path],
                "notes": list(report.notes),
                "failure": (
                    {"kind": report.failure_kind, "range": _range(report.failure_span)}
                    if report.message and report.failure_span is not None
                    else None
                ),
                "functions": [
                    {
                        "name": f.name,
                        "qualname": f.qualname,
                        "line": f.line,
                        "analysed": f.analysed,
                        "reason": f.reason,
                        "inputs": f.target.inputs,
                        "input_source": f.target.input_source,
                        "inlined": f.target.inlined or None,
                        "processes": list(f.target.processes),
                        "graphs": len(f.graphs),
                        "ops": f.ops,
                        "breaks": f.breaks,
                        "suppressed": f.suppressed,
                        "compilations": f.compilations,
                    }
                    for f in report.functions
                ],
                "breaks": [
                    {
                        "function": b.function,
                        "gb_type": b.gb_type,
                        "gb_id": b.gb_id,
                        "url": b.url,
                        "explanation": b.cause.explanation,
                        "hints": list(b.cause.hints),
                        "context": b.cause.context,
                        "effect": b.effect,
                        "eager_from": b.cause.eager_from,
                        "range": _range(b.span),
                        "split": _frame(b.splits_at),
                        "chain": [_frame(location) for location in b.chain],
                        "paths": [[_frame(location) for location in other] for other in b.paths],
                        "processes": list(b.cause.processes),
                        "count": b.count,
                        "gaps": list(b.cause.gaps),
                        "compile_ids": list(b.cause.compile_ids),
                        "trace": provenance_json(b.provenance),
                        "fix": _fix(fixes.get((report.path, b.key))),
                        "split_index": b.cause.split,
                        "raises": b.cause.raises or None,
                        "classes": list(b.cause.classes),
                        "owner": {"kind": b.owner, "library": b.library or None},
                        "rank": ranks[id(b)],
                    }
                    for b in report.breaks
                ],
                "recompiles": [
                    _recompile_json(r, fixes.get((report.path, r.key))) for r in report.recompiles
                ],
                "cuda_only": [
                    {
                        "call": call.call,
                        "skipped": call.skipped,
                        "message": call.message,
                        "range": _range(call.span),
                    }
                    for call in report.cuda_only
                ],
            }
        )
    ran = [
        {
            "name": run.name,
            "script": run.script or None,
            "module": run.module or None,
            "args": list(run.args),
            "cwd": run.cwd,
            "env": dict(run.env),
            "status": status(analysis),
            "message": analysis.message,
            "seconds": analysis.seconds,
            "files": [path for path in views.by_file(analysis) if path],
        }
        for run, analysis in runs or []
    ]
    imported = [
        {
            "path": trace.source,
            "date": trace.date,
            "torch": trace.torch,
            "ranks": trace.ranks,
            "problems": trace.problems,
            "notes": trace.notes,
        }
        for trace in traces or []
    ]
    document = {
        "gbls": __version__,
        "torch": torch_version,
        "runs": ran,
        "traces": imported,
        "files": files,
        "baseline": _baseline_json(baselined) if baselined is not None else None,
    }
    return json.dumps(document, indent=2) + "\n"


def _baseline_json(baselined: Applied) -> dict[str, Any]:
    return {
        "path": baselined.path,
        "matched": baselined.matched,
        "removable": [entry.as_json() for entry in baselined.removable],
    }


def _ranks(report: FileReport) -> dict[int, int]:
    """Each break's place among its function's, the one to fix first 1 (by ``id`` of the break)."""
    ranks: dict[int, int] = {}
    for function in {brk.function for brk in report.breaks}:
        own = costliest_first(tuple(brk for brk in report.breaks if brk.function == function))
        ranks.update((id(brk), rank) for rank, brk in enumerate(own, start=1))
    return ranks


def _recompile_json(found: RecompileReport, fix: Fix | None) -> dict[str, Any]:
    guard = found.guard
    limit = found.limit
    return {
        "function": found.function,
        "frame": found.frame.name,
        "count": found.count,
        "problem": not found.settled,
        "suppressed": found.suppressed,
        "message": found.message,
        "range": _range(found.span),
        "guard": (
            {
                "text": guard.text,
                "kind": guard.kind,
                "subject": guard.subject,
                "global": guard.is_global,
                "hint": guard.hint,
                "location": _frame(found.guard_at) if found.guard_at else None,
            }
            if guard
            else None
        ),
        "why": found.why,
        "compile_ids": [r.compile_id for r in found.recompiles],
        "dynamic": found.dynamic,
        "limit": (
            {"name": limit.limit, "value": limit.limit_value, "compile_id": limit.compile_id}
            if limit
            else None
        ),
        "url": found.url,
        "trace": provenance_json(found.provenance),
        "fix": _fix(fix),
    }
