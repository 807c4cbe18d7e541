"""What every output format says alike: paths as the user reads them, a file's status, what gbls
did not analyse (which no format may pass for clean), and the findings as the settings want them
(the codes ``ignore`` holds left out, each finding's severity)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable

from ..engine.model import BreakReport, FileReport, RecompileReport
from ..settings import Settings, Severity, above
from ..worker.shared.protocol import Run

# A project run as the outputs list it: what ran, and the analysis of it.
Ran = list[tuple[Run, FileReport]]


def relative(path: str) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    return path if relative.startswith("..") else relative


def status(report: FileReport) -> str:
    return report.status if report.status == "ok" else "error"


def findings_only(report: FileReport) -> FileReport:
    """What a file gbls ran only to reach the files asked for (an importer, a folder's script) shows:
    the breaks and recompilations found in it. How its own run went (it failed, was cut, left a
    compile site unreached, skipped a GPU call) is its own story, not the one asked for: the file it
    was to reach says it, where it matters ("not analysed: sample.py stopped at line 8 …")."""
    return dataclasses.replace(
        report,
        status="ok",
        message="",
        failure_kind="",
        failure_span=None,
        failure_path="",
        cut=None,
        cuda_only=(),
        functions=tuple(f for f in report.functions if f.analysed),
    )


def unanalysed_count(reports: list[FileReport]) -> int:
    """Compile sites gbls did not run: none of them may pass for clean; but one in a branch the run
    did not take, which is what the run is."""
    return sum(
        1
        for report in reports
        for function in report.functions
        if not function.analysed and not function.untaken
    )


def not_translated(reports: list[FileReport], named: list[str], why: Callable[[str], str]) -> dict[str, str]:
    """The files asked for whose code no analysis translated, though it ran, each with why (``why``
    of its path, after "not analysed: "): they are not analysed, never clean. A file whose analysis
    failed (a syntax error) says its failure instead."""
    return {
        report.path: f"not analysed: {why(report.path)}"
        for report in reports
        if report.path in named and not report.translated and not report.failure_kind
    }


def ignoring(report: FileReport, settings: Settings) -> FileReport:
    """``report`` without the findings of the codes ``settings.ignore`` holds (ruff's ``--ignore``):
    those breaks wherever a view lists them, and those recompilations worth a finding. What they
    were not reported for fails nothing either."""
    if not settings.ignore:
        return report

    def kept(breaks: tuple[BreakReport, ...]) -> tuple[BreakReport, ...]:
        return tuple(brk for brk in breaks if brk.code not in settings.ignore)

    problems = {id(problem) for problem in report.problems if problem.code in settings.ignore}
    return dataclasses.replace(
        report,
        breaks=kept(report.breaks),
        splits=kept(report.splits),
        elsewhere=kept(report.elsewhere),
        recompiles=tuple(found for found in report.recompiles if id(found) not in problems),
    )


def severity(finding: BreakReport | RecompileReport, settings: Settings) -> Severity:
    """A finding's severity, as the editor gives its diagnostic: ``settings.severity``, a step above
    it for a recompile limit hit, an error where the program raises there; then as its code's own
    severity places it (``Settings.severity_of``)."""
    placed = settings.severity
    if finding.raises:
        placed = "error"
    elif isinstance(finding, RecompileReport) and finding.limit is not None:
        placed = above(settings.severity)
    return settings.severity_of(finding.code, placed)
