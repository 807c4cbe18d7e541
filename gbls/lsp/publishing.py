"""Where results show: each file's diagnostics (pushed, or pulled: ``pull``), the status of each
open file, the code lenses and inlay hints asked for again, and the log's line for each analysis.

A finished analysis publishes every file its last and new results touch (a file whose breaks are
gone too); an open file it was to reach but did not is told why."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ..engine.sources import Sources
from . import notebooks, suppressions
from .diagnostics import as_set, file_diagnostics, split_diagnostics
from .events import Finished
from .messages import analysis_line
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer


class Publishing:
    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls

    def publish(self, uri: str) -> None:
        """The document's diagnostics: what every analysis says of its file."""
        self.publish_snapshot(self._ls.documents.snapshot(uri))

    def publish_snapshot(self, snapshot: Snapshot) -> None:
        self.send(snapshot.uri, *self.diagnostics(snapshot))

    def publish_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.publish(self._ls.documents.uri_of(path))

    def diagnostics_of(self, uri: str) -> tuple[list[lsp.Diagnostic], int | None]:
        return self.diagnostics(self._ls.documents.snapshot(uri))

    def diagnostics(self, snapshot: Snapshot) -> tuple[list[lsp.Diagnostic], int | None]:
        """What every analysis says of the document's file, as diagnostics (a push's, or a pull's), and
        the version of the document they are of (None for a closed one's: its file's)."""
        ls = self._ls
        view, source, version = snapshot.shown.view, snapshot.shown.text, snapshot.shown.version
        diagnostics: list[lsp.Diagnostic] = []
        if view is not None:
            sources = Sources(ls.documents.text_of)
            severity = ls.session.settings_for(view.path).severity
            diagnostics += file_diagnostics(view, source, severity, sources.lines)
            diagnostics += split_diagnostics(view, source, sources.lines)
            diagnostics += suppressions.unused_diagnostics(view, source, ls.session)
            if view.path not in ls.documents.opened:
                diagnostics = [d for d in diagnostics if not _about_the_analysis(d)]
        if snapshot.document is None:
            version = None  # a closed document's diagnostics are its file's
        elif version is None:
            version = snapshot.version
        return as_set(diagnostics, ls.session.settings_for(snapshot.path)), version

    def send(self, uri: str, diagnostics: list[lsp.Diagnostic], version: int | None) -> None:
        """Publish ``diagnostics`` of the document ``uri``; a notebook's, each in its cell. A client
        that pulls them is asked to pull again instead."""
        ls = self._ls
        if ls.pull.pulling:
            ls.pull.changed(ls)
            return
        program = ls.notebooks.program(uri)
        if program is None:
            ls.pull.pushed.add(uri)
            ls.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
            return
        for cell, found in notebooks.in_cells(program, diagnostics).items():
            ls.pull.pushed.add(cell)
            self.clear(cell, found)

    def clear(self, uri: str, diagnostics: list[lsp.Diagnostic] | None = None) -> None:
        """Publish ``diagnostics`` (none: clear them) of ``uri`` as they are: a cell's, or a document
        whose analysis went."""
        self._ls.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics or [])
        )

    def refresh(self) -> None:
        """Ask the client for the code lenses and inlay hints again: they show the last analysis, and
        clients ask for them on open and edit only, before the analysis is done."""
        if self._ls.capabilities.lens_refresh:
            self._ls.workspace_code_lens_refresh(None)  # the answer says nothing: not awaited
        self._ls.inlays.changed(self._ls)

    def _touched(self, event: Finished, path: str) -> Snapshot:
        """The file ``path`` the finished analysis touched, as it is now. The document analysed is the
        one resolved when its analysis started, held since (its version is the one analysed: the
        result is kept only then), shown as the session shows it now."""
        analysed = event.snapshot
        if analysed is not None and analysed.path == path:
            return dataclasses.replace(analysed, shown=self._ls.session.shown(path))
        return self._ls.documents.snapshot(self._ls.documents.uri_of(path))

    def finished(self, event: Finished) -> None:
        """Publish every file the analysis's last and new results touch, with its status; the
        statuses of the open files it was to reach; the lenses; and the analysis's line in the log."""
        ls = self._ls
        touched = dict.fromkeys([*(event.previous.views if event.previous else {}), *event.analysed.views])
        for path in touched:
            snapshot = self._touched(event, path)
            self.publish_snapshot(snapshot)
            if snapshot.document is not None:
                ls.status.show(snapshot, "done", finishing=event.key)
        for path in ls.reaching.reached_by(event.key):
            if path in touched:
                continue
            waiting = ls.documents.snapshot(ls.documents.uri_of(path))
            if waiting.document is not None:
                ls.status.show(waiting, "done", finishing=event.key)
        self.refresh()
        report = event.analysed.report
        what = (
            f"run `{report.origin}`"
            if report.origin
            else os.path.relpath(report.path, ls.session.folder_of(report.path))
        )
        views = tuple(event.analysed.views.values())
        ls.notes.log(analysis_line(what, report.seconds, report, views, event.analysed.cached))
        for note in report.notes:  # about gbls itself: said once, not on every analysis
            ls.notes.note_once(note)


def _about_the_analysis(diagnostic: lsp.Diagnostic) -> bool:
    """A note of how an analysis went (it failed, was cut, left a function unanalysed), not a finding
    in the code: of a file the user never opened (a script gbls ran to reach another), it goes to the
    log and to the status of the file it was looking for, not to the Problems panel."""
    data = diagnostic.data
    return isinstance(data, dict) and data.get("kind") in ("failure", "cut", "not-analysed")
