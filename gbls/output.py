"""``gbls check`` output formats: text (like ruff), JSON, SARIF 2.1.0 and GitHub annotations.

Lines and columns are 1-based here; ends are exclusive.
"""

from __future__ import annotations

import json
import os
from typing import Any

from . import __version__
from .engine import views
from .engine.fixes.edits import Fix
from .engine.fixes.policy import Fixes
from .engine.model import (
    STOPPED,
    BreakReport,
    FileReport,
    Location,
    Provenance,
    RecompileReport,
)
from .engine.model import (
    imported_from as _from,
)
from .engine.ranges import Span
from .traces.load import Imported
from .worker.shared.protocol import Run

# A project run as the outputs list it: what ran, and the analysis of it.
Ran = list[tuple[Run, FileReport]]
UNREACHED = (
    "not analysed: nothing compiled runs code of this file (it has no compile site of its own, and no "
    "analysed run reaches it); configure a run: [[tool.gbls.run]] in pyproject.toml, or gbls run SCRIPT ARGS"
)

LIMIT_CODE = "recompile-limit"  # the SARIF rule of a recompilation that hit the recompile limit


def relative(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def _where(span: Span) -> str:
    return f"{span.line}:{span.column + 1}"


def _status(report: FileReport) -> str:
    return report.status if report.status in ("ok", "timeout") else "error"


def unanalysed(reports: list[FileReport]) -> int:
    """Compile sites gbls did not run: none of them may pass for clean."""
    return sum(1 for report in reports for function in report.functions if not function.analysed)


def unreached(reports: list[FileReport], named: list[str]) -> list[str]:
    """The files asked for whose code no analysis translated: they are not analysed, never clean."""
    return [report.path for report in reports if report.path in named and not report.translated]


def command(run: Run) -> str:
    """``python train.py --config c.json``, or ``python -m scripts.train ...``, as the user types it."""
    target = ["-m", run.module] if run.module else [relative(run.script)]
    return " ".join(["python", *target, *run.args])


def text(
    reports: list[FileReport], fixes: Fixes, runs: Ran | None = None, missed: list[str] | None = None
) -> str:
    """ruff's shape: ``path:line:col: CODE [*] message``, ``[*]`` where ``--fix`` would fix it."""
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
            lines.append(f"{path}:{_where(brk.span)}: {brk.code} {mark}{_text_message(brk)}")
        for problem in report.problems:
            lines.append(
                f"{path}:{_where(problem.span)}: {problem.code} {problem.message}{_from(problem.provenance)}"
            )
        for function in report.functions:
            if not function.analysed:
                lines.append(
                    f"{path}:{_where(function.span)}: not analysed: {function.qualname}: {function.reason}"
                )
        if report.message and report.failure_span is not None:
            lines.append(f"{path}:{_where(report.failure_span)}: error: {report.message}")
        if report.stopped is not None:
            lines.append(f"{path}:{_where(report.stopped)}: note: {STOPPED}")
        if report.path in (missed or []):
            lines.append(f"{path}:1:1: {UNREACHED}")
    breaks = sum(len(r.breaks) for r in reports)
    failed = sum(1 for r in reports if _status(r) != "ok")
    files = len(reports)
    summary = f"Found {breaks} graph break{'s' * (breaks != 1)} in {files} file{'s' * (files != 1)}"
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
    lines.append(summary + ".")
    if fixable:
        lines.append(f"[*] {fixable} fixable with `gbls check --fix`.")
    return "\n".join(lines) + "\n"


def _text_message(brk: BreakReport) -> str:
    where = f"in {brk.function}"
    if brk.via:
        where += f" via {' → '.join(brk.via)}"
    if brk.eager:
        where += f"; {brk.function} {brk.eager}"
    count = f" (hit {brk.count} times)" if brk.count > 1 else ""
    return f"{brk.title} [{where}]{count}{_from(brk.provenance)}"


def _provenance(provenance: Provenance | None) -> dict[str, Any] | None:
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
    runs: Ran | None = None,
    missed: list[str] | None = None,
    traces: list[Imported] | None = None,
) -> str:
    files = []
    for report in reports:
        reached = report.path not in (missed or [])
        files.append(
            {
                "path": report.path,
                "status": _status(report),
                "analysed": reached,
                "message": report.message if reached else UNREACHED,
                "notes": list(report.notes),
                "failure": (
                    {"kind": report.failure_kind, "range": _range(report.failure_span)}
                    if report.message and report.failure_span is not None
                    else None
                ),
                "stopped_line": report.stopped.line if report.stopped is not None else None,
                "functions": [
                    {
                        "name": f.name,
                        "qualname": f.qualname,
                        "line": f.line,
                        "analysed": f.analysed,
                        "reason": f.reason,
                        "inputs": f.target.inputs,
                        "input_source": f.target.input_source,
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
                        "count": b.count,
                        "gaps": list(b.cause.gaps),
                        "compile_ids": list(b.cause.compile_ids),
                        "trace": _provenance(b.provenance),
                        "fix": _fix(fixes.get((report.path, b.key))),
                    }
                    for b in report.breaks
                ],
                "recompiles": [
                    _recompile_json(r, fixes.get((report.path, r.key))) for r in report.recompiles
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
            "status": _status(analysis),
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
    document = {"gbls": __version__, "torch": torch_version, "runs": ran, "traces": imported, "files": files}
    return json.dumps(document, indent=2) + "\n"


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
        "trace": _provenance(found.provenance),
        "fix": _fix(fix),
    }


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column + 1,
        "endLine": span.end_line,
        "endColumn": span.end_column + 1,
    }


def _physical(path: str, span: Span) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": relative(path)}, "region": _region(span)}}


def _properties(provenance: Provenance | None) -> dict[str, Any]:
    """SARIF's bag of extra facts: where an imported finding came from."""
    return {"properties": {"trace": _provenance(provenance)}} if provenance is not None else {}


def sarif(reports: list[FileReport], missed: list[str] | None = None) -> str:
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for report in reports:
        for brk in report.breaks:
            rules.setdefault(
                brk.code,
                {
                    "id": brk.code,
                    "name": brk.gb_type,
                    "shortDescription": {"text": brk.gb_type},
                    **({"helpUri": brk.url} if brk.url else {}),
                },
            )
            results.append(
                {
                    "ruleId": brk.code,
                    "level": "warning",
                    "message": {"text": f"{brk.message}. {brk.cause.explanation}{_from(brk.provenance)}"},
                    "locations": [_physical(report.path, brk.span)],
                    **_properties(brk.provenance),
                    "relatedLocations": [
                        {
                            "id": index,
                            **_physical(location.path, location.span),
                            "message": {"text": location.function},
                        }
                        for index, location in enumerate(brk.chain)
                    ],
                }
            )
        for problem in report.problems:
            rule = LIMIT_CODE if problem.limit else problem.code
            rules.setdefault(
                rule,
                {
                    "id": rule,
                    "name": "recompile limit hit" if problem.limit else "recompilation",
                    "shortDescription": {
                        "text": (
                            "A function hit the recompile limit: Dynamo compiles it no more"
                            if problem.limit
                            else "A function recompiles: a guard fails between calls"
                        )
                    },
                    "helpUri": problem.url,
                },
            )
            results.append(
                {
                    "ruleId": rule,
                    "level": "error" if problem.limit else "warning",
                    "message": {"text": problem.message + _from(problem.provenance)},
                    "locations": [_physical(report.path, problem.span)],
                    **_properties(problem.provenance),
                    "relatedLocations": (
                        [
                            {
                                "id": 0,
                                **_physical(problem.guard_at.path, problem.guard_at.span),
                                "message": {"text": f"the guard, in {problem.guard_at.function}"},
                            }
                        ]
                        if problem.guard_at
                        else []
                    ),
                }
            )
        if report.message and report.failure_span is not None:
            results.append(
                {
                    "ruleId": "analysis-failed",
                    "level": "error",
                    "message": {"text": report.message},
                    "locations": [_physical(report.path, report.failure_span)],
                }
            )
        if report.path in (missed or []):
            results.append(
                {
                    "ruleId": "not-analysed",
                    "level": "error",
                    "message": {"text": UNREACHED},
                    "locations": [_physical(report.path, Span(1, 0, 1, 0))],
                }
            )
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "gbls",
                        "version": __version__,
                        "rules": sorted(rules.values(), key=lambda rule: rule["id"]),
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2) + "\n"


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def github(reports: list[FileReport], missed: list[str] | None = None) -> str:
    lines = []
    for report in reports:
        path = relative(report.path)
        for brk in report.breaks:
            s = brk.span
            lines.append(
                f"::warning title=gbls ({brk.code}),file={path},line={s.line},col={s.column + 1},"
                f"endLine={s.end_line},endColumn={s.end_column + 1}::"
                + _escape(f"{path}:{_where(s)}: {brk.code} {_text_message(brk)}")
            )
        for problem in report.problems:
            s = problem.span
            level = "error" if problem.limit else "warning"
            lines.append(
                f"::{level} title=gbls ({problem.code}),file={path},line={s.line},col={s.column + 1},"
                f"endLine={s.end_line},endColumn={s.end_column + 1}::"
                + _escape(f"{path}:{_where(s)}: {problem.code} {problem.message}{_from(problem.provenance)}")
            )
        if report.message and report.failure_span is not None:
            s = report.failure_span
            lines.append(
                f"::error title=gbls,file={path},line={s.line},col={s.column + 1}::" + _escape(report.message)
            )
        if report.path in (missed or []):
            lines.append(f"::error title=gbls,file={path},line=1,col=1::" + _escape(UNREACHED))
    return "\n".join(lines) + ("\n" if lines else "")
