"""The text output, like ruff's: ``path:line:col: CODE [*] message`` per finding, then a summary."""

from __future__ import annotations

import os

from ..engine.baseline import Applied, Entry
from ..engine.fixes.policy import Fixes
from ..engine.model import LIMIT_CODE, BreakReport, FileReport, FunctionReport, RecompileReport, imported_from
from ..engine.ranges import Span
from ..engine.runs import shell_command
from .common import Ran, relative, status


def where(span: Span) -> str:
    return f"{span.line}:{span.column + 1}"


def render(
    reports: list[FileReport],
    applied: Fixes,
    baselined: Applied | None = None,
    runs: Ran | None = None,
    missed: dict[str, str] | None = None,
    analysed: list[FileReport] | None = None,
    ignored: tuple[str, ...] = (),
) -> str:
    """ruff's shape: ``path:line:col: CODE [*] message``, ``[*]`` where ``--fix`` would fix it (its
    safe fix in ``applied``: proven by re-analysis, ``policy.applied``); with a baseline, what it
    held and which of its entries no longer occur; each run first (as the command that does it),
    and the files asked for that nothing reached; then each compile site with what became of it,
    and the counts, each saying what it counts. ``analysed``: the reports before the codes
    ``ignored`` and what the baseline holds were left out, whose compile sites found them."""
    lines: list[str] = []
    for run, analysis in runs or []:
        how = "ok" if analysis.status == "ok" else analysis.status
        lines.append(f"run `{run.name}` ({how}): {shell_command(run, os.getcwd())}")
    fixable = 0
    for report in reports:
        path = relative(report.path)
        for brk in report.breaks:
            fix = applied.get((report.path, brk.key))
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
            if not function.analysed and not function.untaken:
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
    lines += compile_sites(analysed or reports, reports, ignored)
    lines.append(summary(reports, baselined, missed) + ".")
    if fixable:
        lines.append(f"[*] {fixable} fixable with `gbls check --fix`.")
    if baselined is not None and baselined.removable:
        lines.append(removable(baselined.path, baselined.removable))
    return "\n".join(lines) + "\n"


def compile_sites(
    reports: list[FileReport], shown: list[FileReport], ignored: tuple[str, ...] = ()
) -> list[str]:
    """Each compile site, as ``ruff --statistics`` lists codes: where, which, and what became of it
    (its compilations, graphs and breaks, the guard of each recompilation; or why it was not
    analysed, or the branch the run did not take). ``shown``: the reports as printed, without the
    codes ``ignored`` and what a baseline holds."""
    recompiles: dict[str, list[RecompileReport]] = {}
    for report in reports:
        for found in report.recompiles:
            recompiles.setdefault(found.function, []).append(found)
    printed = {report.path: report for report in shown}
    rows = [
        (
            f"{relative(function.path)}:{where(function.span)}",
            function.qualname,
            state(report, function, recompiles, printed.get(report.path, report), ignored),
        )
        for report in reports
        for function in report.functions
    ]
    if not rows:
        return []
    place, name = max(len(row[0]) for row in rows), max(len(row[1]) for row in rows)
    return ["Compile sites:", *(f"  {row[0]:<{place}}  {row[1]:<{name}}  {row[2]}" for row in rows)]


def state(
    report: FileReport,
    function: FunctionReport,
    recompiles: dict[str, list[RecompileReport]],
    shown: FileReport,
    ignored: tuple[str, ...] = (),
) -> str:
    """What became of a compile site: ``compiled 4 times, 4 graphs, no graph break, 3 recompilations
    (guard `n == 1` failed)``; or why it was not analysed; or the branch the run did not take.
    ``shown``: its file's report as printed, without the codes ``ignored`` and what a baseline
    holds."""
    if function.untaken:
        return function.reason
    if not function.analysed:
        return f"not analysed: {function.reason}"
    if function.target.inlined:
        return f"traced inline in `{function.target.inlined}`"
    parts = [_compiled(function)] if function.compilations else []
    parts.append(_count(len(function.graphs), "graph"))
    breaks = report.breaks_of(function.qualname)
    left_out = sum(1 for brk in breaks if brk.code in ignored)
    held = len(breaks) - left_out - len(shown.breaks_of(function.qualname))
    parts.append(_count(len(breaks), "graph break") if breaks else "no graph break")
    said = [f"{left_out} ignored"] * bool(left_out) + [f"{held} in the baseline"] * bool(held)
    if said:
        parts[-1] += f" ({', '.join(said)})"
    for found in recompiles.get(function.qualname, []):
        guard = found.guard
        failed = f" (guard `{guard.text}` failed)" if guard is not None and guard.text else ""
        who = "" if found.direct else f" of `{found.frame.name}`"
        parts.append(f"{_count(found.count, 'recompilation')}{who}{failed}")
        if found.limit is not None:
            parts.append(f"hit the recompile limit ({found.limit.limit_value})")
    if function.elided:
        parts.append("shapes only, not computed")
    if report.cut is not None:
        parts.append(f"run cut at {report.cut.seconds:g} s")
    return ", ".join(parts)


def _compiled(function: FunctionReport) -> str:
    """``compiled once``; for a function a break splits, its frames (its code, and its rest after each
    break, which Dynamo compiles apart): ``2 frames compiled (its code, and its rest after the break
    at line 8)``, ``5 compilations of 2 frames (…)`` where they recompiled."""
    own = [frame for frame in function.target.frames if frame.own]
    count = function.compilations
    if len(own) <= 1:
        return _times("compiled", count)
    after = sorted(frame.resumes_at for frame in own if frame.resumes_at is not None)
    several = "s" * (len(after) > 1)
    rest = f"its code, and its rest after the break{several} at line{several} {', '.join(map(str, after))}"
    head = (
        f"{len(own)} frames compiled"
        if count == len(own)
        else f"{_count(count, 'compilation')} of {len(own)} frames"
    )
    return f"{head} ({rest})"


def summary(reports: list[FileReport], baselined: Applied | None, missed: dict[str, str] | None) -> str:
    """What was found, each count saying what it counts: the breaks in the files they are in (and
    the files whose analyses reached them), the compile sites by what became of them, the
    recompiling functions, the baseline's."""
    breaks = sum(len(r.breaks) for r in reports)
    if not reports:
        return "Found no graph break: nothing to analyse"
    if breaks:
        holding = [r for r in reports if r.breaks]
        said = f"Found {_count(breaks, 'graph break')}"
        raising = sum(1 for r in reports for brk in r.breaks if brk.raises)
        if raising:
            said += f" ({raising} raise{'s' * (raising == 1)} at run time)"
        said += f" in {_files(holding)}"
    else:
        holding = reports
        said = f"Found no graph break in {_files(holding)}"
    if all(r.reached_from for r in holding):
        entries = dict.fromkeys(
            p for r in holding for p in r.reached_from if p not in {h.path for h in holding}
        )
        said += f", reached from {_names(list(entries))}" if entries else ""
    failed = sum(1 for r in reports if status(r) != "ok")
    if failed:
        said += f" ({failed} could not be fully analysed)"
    sites = [f for r in reports for f in r.functions]
    if sites:
        said += f"; {_sites(sites)}"
    if missed:
        said += f"; {_count(len(missed), 'file')} not analysed"
    problems = [problem for r in reports for problem in r.problems]
    if problems:
        limited = sum(1 for problem in problems if problem.limit is not None)
        said += f"; {_count(len(problems), 'recompiling function')}"
        said += f" ({limited} hit the recompile limit)" if limited else ""
    if baselined is not None:
        said += f"; {baselined.matched} more in the baseline {relative(baselined.path)}"
    return said


def _sites(functions: list[FunctionReport]) -> str:
    """``3 compile sites: 1 analysed, 2 not compiled in this run``, ``1 compile site, analysed``."""
    kinds = {
        "analysed": sum(1 for f in functions if f.analysed),
        "not analysed": sum(1 for f in functions if not f.analysed and not f.untaken),
        "not compiled in this run": sum(1 for f in functions if f.untaken),
    }
    counted = [(kind, count) for kind, count in kinds.items() if count]
    total = _count(len(functions), "compile site")
    if len(counted) == 1 and len(functions) == 1:
        return f"{total}, {counted[0][0]}"
    if len(counted) == 1:
        kind = counted[0][0]
        every = "both" if len(functions) == 2 else "all"
        return (
            f"{total}, {every} {kind}" if kind == "analysed" else f"{total}, none {kind.removeprefix('not ')}"
        )
    return f"{total}: " + ", ".join(f"{count} {kind}" for kind, count in counted)


def _files(reports: list[FileReport]) -> str:
    """The files, by name when they are few: ``model.py``, ``a.py and b.py``, ``5 files``."""
    return _names([r.path for r in reports]) if len(reports) <= 3 else f"{len(reports)} files"


def _names(paths: list[str]) -> str:
    names = [relative(path) for path in paths]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" and {names[-1]}"


def _count(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def _times(verb: str, count: int) -> str:
    return f"{verb} once" if count == 1 else f"{verb} {count} times"


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
    if brk.also:
        where += f"; {brk.also}"
    if brk.torch_asks:
        where += f"; {brk.torch_asks}"
    if brk.cause.processes:
        where += f"; {', '.join(brk.cause.processes)}"
    count = f" (hit {brk.count} times)" if brk.count > 1 else ""
    text = f"{brk.title} [{where}]{count}{imported_from(brk.provenance)}"
    return f"{brk.raises}: {text}" if brk.raises else text


def problem_text(problem: RecompileReport) -> str:
    """A recompilation's message, and where it came from if a real run's trace said it."""
    return problem.message + imported_from(problem.provenance)
