"""The GitHub output: workflow annotations (``::warning file=…::``), each with the text output's line."""

from __future__ import annotations

from ..engine.model import FileReport, imported_from
from .common import relative
from .text import message_of, where


def _escape(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def render(reports: list[FileReport], missed: dict[str, str] | None = None) -> str:
    lines = []
    for report in reports:
        path = relative(report.path)
        for brk in report.breaks:
            s = brk.span
            level = "error" if brk.raises else "warning"
            lines.append(
                f"::{level} title=gbls ({brk.code}),file={path},line={s.line},col={s.column + 1},"
                f"endLine={s.end_line},endColumn={s.end_column + 1}::"
                + _escape(f"{path}:{where(s)}: {brk.code} {message_of(brk)}")
            )
        for problem in report.problems:
            s = problem.span
            level = "error" if problem.limit else "warning"
            lines.append(
                f"::{level} title=gbls ({problem.code}),file={path},line={s.line},col={s.column + 1},"
                f"endLine={s.end_line},endColumn={s.end_column + 1}::"
                + _escape(
                    f"{path}:{where(s)}: {problem.code} {problem.message}{imported_from(problem.provenance)}"
                )
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
