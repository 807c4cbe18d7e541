"""The GitHub output: workflow annotations (``::warning file=…::``), each with the text output's line."""

from __future__ import annotations

from ..engine.model import FileReport, imported_from
from ..engine.ranges import Span
from ..settings import Settings
from .common import relative, severity
from .text import message_of, where


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _annotation(level: str, code: str, path: str, s: Span, text: str) -> str:
    """A finding's annotation over its range, with the text output's line as its message."""
    return (
        f"::{level} title=gbls ({code}),file={path},line={s.line},col={s.column + 1},"
        f"endLine={s.end_line},endColumn={s.end_column + 1}::" + _escape(f"{path}:{where(s)}: {code} {text}")
    )


# A workflow's annotations are errors, warnings and notices.
LEVELS = {"error": "error", "warning": "warning", "information": "notice", "hint": "notice"}


def render(reports: list[FileReport], settings: Settings, missed: dict[str, str] | None = None) -> str:
    lines = []
    for report in reports:
        path = relative(report.path)
        for brk in report.breaks:
            lines.append(
                _annotation(LEVELS[severity(brk, settings)], brk.code, path, brk.span, message_of(brk))
            )
        for problem in report.problems:
            text = f"{problem.message}{imported_from(problem.provenance)}"
            lines.append(
                _annotation(LEVELS[severity(problem, settings)], problem.code, path, problem.span, text)
            )
        if report.message and report.failure_span is not None:
            s = report.failure_span
            lines.append(
                f"::error title=gbls,file={path},line={s.line},col={s.column + 1}::" + _escape(report.message)
            )
        if report.path in (missed or {}):
            lines.append(
                f"::error title=gbls,file={path},line=1,col=1::" + _escape((missed or {})[report.path])
            )
    return "\n".join(lines) + ("\n" if lines else "")
