"""``gbls/status``: each open document's state, for the client's status bar and the tests: an
analysis that will reach it runs ("analysing"), or its result is shown ("done", with its counts,
where its breaks are, what was reused or cached, and why nothing reached it)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Literal

from ..engine.model import BreakReport, FileView
from ..runtime.session import Analysed, Analysis, AnalysisKey, DocumentKey
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer

STATUS = "gbls/status"
State = Literal["analysing", "done"]


class Status:
    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls

    def show(self, snapshot: Snapshot, state: State, finishing: AnalysisKey | None = None) -> None:
        """``finishing``: the analysis whose result is being published (it is still running)."""
        status: dict[str, Any] = {"uri": snapshot.uri, "state": state}
        if state == "done":
            status = self._done(snapshot, finishing)
        self._ls.protocol.notify(STATUS, status)

    def _done(self, snapshot: Snapshot, finishing: AnalysisKey | None) -> dict[str, Any]:
        ls, uri = self._ls, snapshot.uri
        view, path = snapshot.shown.view, snapshot.path
        # A failure of the file's own (a syntax error) is what its status says, not "not reached".
        reached = view is not None and bool(view.translated or view.functions or view.message)
        if not reached and ls.reaching.still_looking(path):
            return {"uri": uri, "state": "analysing"}  # "not analysed" only once nothing will reach it
        return {
            "uri": uri,
            "state": "done",
            "breaks": len(view.breaks) if view else 0,
            "elsewhere": _elsewhere(view, snapshot.folder) if view else [],
            "notAnalysed": [f.qualname for f in view.functions if not f.analysed] if view else [],
            "reused": list(snapshot.shown.own.reused) if snapshot.shown.own else [],
            # From the persistent cache, until the analysis that runs behind it is done.
            "cached": snapshot.shown.cached,
            # An analysis that reached the file last time runs again: this may change.
            "rechecking": any(
                other != finishing and ls.analyses.scheduler.pending(other) and path in analysed.views
                for other, analysed in ls.session.results()
            ),
            "message": (view.message if view else "") if reached else ls.reaching.why(path),
            "cut": _cut(view) if reached and view is not None else None,
        }

    def starting(self, analysis: Analysis, previous: Analysed | None) -> None:
        """The worker starts ``analysis``: its document, if open, is being analysed, and the other
        open files its last result (``previous``) reached show that result as being re-checked, not
        as current."""
        ls, key, documents = self._ls, analysis.key, self._ls.documents
        if isinstance(key, DocumentKey) and analysis.document is not None:
            ls.protocol.notify(STATUS, {"uri": key.name, "state": "analysing"})
        for uri in (documents.uri_of(path) for path in previous.views) if previous else ():
            if DocumentKey(uri) != key and documents.open_document(uri) is not None:
                self.show(documents.snapshot(uri), "done")


def _cut(view: FileView) -> dict[str, Any] | None:
    """The budget that ended the analysis's program, where, and in words, if it did."""
    cut = view.cut
    if cut is None:
        return None
    return {"seconds": cut.seconds, "where": cut.where, "message": cut.message}


def _elsewhere(view: FileView, folder: str) -> list[dict[str, Any]]:
    """The file's compiled functions whose breaks are in other files, and where: what its status
    says besides its own count ("TinyNet's 2 breaks are in model.py")."""
    found: dict[str, list[BreakReport]] = {}
    for brk in view.elsewhere:
        found.setdefault(brk.function, []).append(brk)
    return [
        {
            "function": function,
            "breaks": len(breaks),
            "files": list(dict.fromkeys(os.path.relpath(b.path, folder) for b in breaks)),
        }
        for function, breaks in found.items()
    ]
