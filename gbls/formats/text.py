"""The text output, like ruff's: ``path:line:col: CODE [*] message`` per finding, then a summary."""

from __future__ import annotations

from ..engine.baseline import Applied, Entry
from ..engine.fixes.policy import Fixes
from ..engine.model import LIMIT_CODE, BreakReport, FileReport, RecompileReport, imported_from
from ..engine.ranges import Span
from ..worker.shared.protocol import Run
from .common import Ran, relative, status, unanalysed


def where(span: Span) -> str:
    return f"{span.line}:{span.column + 1}"


def command(run: Run) -> str:
    """``python train.py --config c.json``, or ``python -m scripts.train ...``, as the user types it."""
    target = ["-m", run.module] if run.module else [relative(run.script)]
    return " ".join(["python", *target, *run.args])


def render(
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
            at = problem.raises_at
            if at is not None and at.path == report.path:
                lines.append(f"{path}:{where(at.span)}: {LIMIT_CODE} {problem.raise_message}")
        for function in report.functions:
            if not function.analysed:
                lines.append(
                    f"{path}:{where(function.span)}: not analysed: {function.qualname}: {function.reason}"
                )
        if report.message and report.failure_span is not None:
            lines.append(f"{path}:{where(report.failure_span)}: error: {report.message}")
        for call in report.cuda_only:
            lines.append(f"{path}:{where(call.span)}: note: {call.message}")
        for stance in report.stances:
            lines.append(f"{path}:{where(stance.span)}: note: {stance.message}")
        cut = report.cut.span_in(report.path) if report.cut is not None else None
        if report.cut is not None and cut is not None:
            lines.append(f"{path}:{where(cut)}: note: {report.cut.message}")
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
