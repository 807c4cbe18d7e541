"""The JSON output: the whole report, as ``gbls.schema.json`` describes it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..engine import costs, views
from ..engine.baseline import Applied
from ..engine.fixes.edits import Fix
from ..engine.fixes.policy import Fixes
from ..engine.model import (
    FileReport,
    FunctionReport,
    Location,
    Provenance,
    RecompileReport,
    ShapeReport,
    costliest_first,
)
from ..engine.ranges import Span
from .common import Ran, status

if TYPE_CHECKING:  # the trace reader, imported only where a trace is read
    from ..traces.load import Imported


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


def _fix(fix: Fix | None, applied: bool = False) -> dict[str, Any] | None:
    """ruff's fix object: what it does, whether ``--fix`` applies it (``applied``: re-analysis proved
    it, ``policy.applied``; "safe", or "unsafe": with ``--unsafe-fixes``; else "display-only": a
    workaround, a fix not proven, a recompilation's fix), and its edits."""
    if fix is None:
        return None
    return {
        "message": fix.title,
        "applicability": ("safe" if fix.safe else "unsafe") if applied else "display-only",
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


def _cut(report: FileReport) -> dict[str, Any] | None:
    """Where the budget ended the program, if it did: the file and line of its innermost frame in the
    workspace, and the script's own line when that is another file's."""
    cut = report.cut
    if cut is None:
        return None
    return {
        "seconds": cut.seconds,
        "path": cut.path,
        "range": _range(cut.span) if cut.span is not None else None,
        "script": cut.script,
        "script_range": _range(cut.script_span) if cut.script_span is not None else None,
        "tracing": cut.tracing or None,
        "message": cut.message,
    }


def render(
    reports: list[FileReport],
    torch_version: str,
    fixes: Fixes,
    applied: Fixes | None = None,
    baselined: Applied | None = None,
    runs: Ran | None = None,
    missed: dict[str, str] | None = None,
    traces: list[Imported] | None = None,
) -> str:
    """The report as ``gbls.schema.json`` describes it: each break's fix is the one ``--fix`` applies
    (of ``applied``), else its preferred one (of ``fixes``), display-only."""
    applied = applied or {}
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
                        "untaken": f.untaken or None,
                        "inputs": f.target.inputs,
                        "input_source": f.target.input_source,
                        "inlined": f.target.inlined or None,
                        "processes": list(f.target.processes),
                        "graphs": len(f.graphs),
                        "ops": f.ops,
                        "breaks": f.breaks,
                        "suppressed": f.suppressed,
                        "compilations": f.compilations,
                        "elided": [
                            {"frame": e.frame, "compile_id": e.compile_id, "work": e.work} for e in f.elided
                        ],
                        "frames": [
                            {
                                "frame": c.frame,
                                "path": c.path,
                                "line": c.line,
                                "resumes_at": c.resumes_at,
                                "own": c.own,
                                "compile_ids": list(c.compile_ids),
                                "compilations": c.compilations,
                            }
                            for c in f.target.frames
                        ],
                        "compiled_at": (
                            {"path": f.target.call_path, "line": f.target.call_line}
                            if f.target.call_path and f.target.call_line
                            else None
                        ),
                        "seconds": f.seconds,
                        "cost": costs.summary(f, report.recompiles_of(f.qualname)) or None,
                        "costs": _costs_json(f, report),
                    }
                    for f in report.functions
                ],
                "breaks": [
                    {
                        "function": b.function,
                        "functions": list(b.functions),
                        "gb_type": b.gb_type,
                        "gb_id": b.gb_id,
                        "url": b.url,
                        "explanation": b.explanation,
                        "hints": list(b.hints),
                        "context": b.context,
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
                        "fix": _fix(
                            applied.get((report.path, b.key)) or fixes.get((report.path, b.key)),
                            (report.path, b.key) in applied,
                        ),
                        "split_index": b.cause.split,
                        "raises": b.cause.raises or None,
                        "classes": list(b.cause.classes),
                        "owner": {"kind": b.owner, "library": b.library or None},
                        "rank": ranks[id(b)],
                        "seconds": b.seconds,
                        "cost_compile_ids": [c.compile_id for c in b.costs],
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
                "cut": _cut(report),
                "shapes": [_shape_json(found) for found in report.shapes],
                "stances": [
                    {"stance": found.stance.stance, "message": found.message, "range": _range(found.span)}
                    for found in report.stances
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
            "cut": _cut(analysis),
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
        "resumes_at": found.resumes_at,
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
                "origin": _frame(found.origin) if found.origin else None,
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
        "changed": found.changed or None,
        "seconds": found.seconds,
        "raises": (
            {"setting": found.raises, "message": found.raise_message, "location": _frame(found.raises_at)}
            if found.raises and found.raises_at is not None
            else None
        ),
    }


def _costs_json(function: FunctionReport, report: FileReport) -> list[dict[str, Any]]:
    """Each compilation of ``function``: what it cost, and why it happened."""
    return [
        {
            "compile_id": row.cost.compile_id,
            "frame": row.cost.frame,
            "seconds": row.cost.seconds,
            "backend_seconds": row.cost.backend_seconds,
            "guards": row.cost.guards,
            "shape_guards": row.cost.shape_guards,
            "graphs": row.cost.graphs,
            "ops": row.cost.ops,
            "restarts": list(row.reasons),
            "restart_seconds": row.cost.restart_seconds,
            "why": row.why,
            "computed": row.computed,
        }
        for row in costs.rows(function, report.recompiles_of(function.qualname))
    ]


def _shape_json(found: ShapeReport) -> dict[str, Any]:
    shape = found.shape
    return {
        "function": shape.function,
        "compile_id": shape.compile_id,
        "decision": shape.decision,
        "subject": shape.subject,
        "dim": shape.dim,
        "value": shape.value,
        "reason": shape.reason,
        "code": found.code or None,
        "path": found.path,
        "range": _range(found.span),
        "message": found.message,
    }
