"""What the server writes in the client's log about an analysis, and the notes it says once."""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

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


class Notes:
    """What the server tells the user once, however often it comes up."""

    def __init__(self, ls: LanguageServer) -> None:
        self._ls = ls
        self._said: set[str] = set()

    def log(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        self._ls.window_log_message(lsp.LogMessageParams(type=kind, message=message))

    def note_once(self, note: str) -> None:
        """In the log (the output channel), not a pop-up: a note informs, it asks nothing of the user."""
        if note not in self._said:
            self._said.add(note)
            self.log(f"gbls: {note}", lsp.MessageType.Warning)

    def say_once(self, note: str) -> None:
        if note not in self._said:
            self._said.add(note)
            self._ls.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"gbls: {note}")
            )
