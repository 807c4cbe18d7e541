"""What the server writes in the client's log about an analysis."""

from __future__ import annotations

from ..engine.model import FileReport


def analysis_line(
    name: str, seconds: float, report: FileReport, views: tuple[FileReport, ...], cached: bool = False
) -> str:
    """The log's line for one analysis: ``analysed model.py in 1.8 s: 2 graph breaks, 1 recompilation``;
    ``views``: what it says of each file it touched, counted together (and named when more than one)."""

    def count(number: int, what: str) -> str:
        return f"{number} {what}{'' if number == 1 else 's'}"

    breaks = sum(len(view.breaks) for view in views)
    recompilations = sum(found.count for view in views for found in view.recompiles if not found.suppressed)
    counted = f"{count(breaks, 'graph break')}, {count(recompilations, 'recompilation')}"
    if not report.functions and not breaks and not recompilations and not report.message:
        # Not "0 graph breaks": a model file compiled elsewhere gets its breaks from that analysis.
        counted = "it compiles nothing itself"
    line = f"analysed {name} in {seconds:.1f} s{' (from the cache)' if cached else ''}: {counted}"
    if len(views) > 1:
        line += f" in {len(views)} files"
    if report.message:  # the first line: the message can be a traceback's last lines
        line += f"; stopped: {report.message.splitlines()[0]}"
    return line
