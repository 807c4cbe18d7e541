"""What the server writes in the client's log about an analysis."""

from __future__ import annotations

from ..engine.model import FileReport


def analysis_line(name: str, seconds: float, report: FileReport) -> str:
    """The log's line for one analysis: ``analysed model.py in 1.8 s: 2 graph breaks, 1 recompilation``."""

    def count(number: int, what: str) -> str:
        return f"{number} {what}{'' if number == 1 else 's'}"

    recompilations = sum(found.count for found in report.recompiles if not found.suppressed)
    line = (
        f"analysed {name} in {seconds:.1f} s: {count(len(report.breaks), 'graph break')}, "
        f"{count(recompilations, 'recompilation')}"
    )
    if report.message:  # the first line: the message can be a traceback's last lines
        line += f"; stopped: {report.message.splitlines()[0]}"
    return line
