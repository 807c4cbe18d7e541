"""When each analysis runs: a document's own, and in the background the runs and unopened files
that reach an open one (``reaching``), one at a time per analysis through the ``Scheduler`` (those in
the background take turns: the open file's goes first). A result whose version is gone is dropped;
a kept one is an event (``events.Finished``) that the features publish and prove. The process
never imports torch: the ``Session``'s workers translate.

A save (``saved``) schedules every analysis that executed the file, then the file's own
(``request``: its last result moved onto the text where the edit cannot change it, else the
scheduler); the scheduler calls ``run``, which takes the document's snapshot and hands its text to
the session's cycle (``Session.analysed``), watched by ``progress.Watching`` (its progress, the
"analysing" and "re-checking" statuses, the report of the failure it ended in); the result the
cycle keeps is heard as the ``Finished`` event, carrying the snapshot."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING

from ..engine import reach
from ..engine.sources import read_source
from ..runtime.scheduler import Scheduler
from ..runtime.session import Analysed, Analysis, AnalysisKey, DocumentKey, RunKey
from .events import Finished
from .notebooks import Program
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer

log = logging.getLogger(__name__)


class Analyses:
    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls
        self.scheduler: Scheduler[AnalysisKey] = Scheduler(self.run)
        # Analyses in the background (runs, unopened files) take turns: the open file's goes first.
        self._one_at_a_time = asyncio.Lock()

    def request(self, snapshot: Snapshot, delay: float = 0.0, fresh: bool = False) -> None:
        """Analyse the document after ``delay``; or, when the edit cannot change the result, publish it
        now. A file with no compile site of its own is also reached from what compiles it."""
        ls, document = self._ls, snapshot.document
        if not ls.settings.enable or document is None:
            return
        ls.documents.opened.add(snapshot.path)
        if reach.starting(snapshot.path, snapshot.folder) is not None:
            self.forget(snapshot.key, clear=False)  # the run's result replaces the script's own, at once
            ls.reaching.reach(snapshot)  # a script its configured run starts shows that run's result
            now = ls.documents.snapshot(snapshot.uri)
            if now.shown.view is not None:  # the run is done: the file opened after it
                ls.publishing.publish_snapshot(now)
                ls.status.show(now, "done")
            return
        source = document.source
        if not reach.compiles(snapshot.path, lambda _: source):
            ls.reaching.reach(snapshot)
        if fresh:
            ls.session.forget_memory(snapshot.key)
        else:
            moved = ls.session.moved(snapshot.key, snapshot.path, source, snapshot.version)
            if moved is not None:
                self.scheduler.cancel(snapshot.key)
                self.record(snapshot.key, moved)
                return
            if snapshot.shown.own is None and not isinstance(document, Program):
                self.show_stored(snapshot.key, document.version)
        self.scheduler.schedule(snapshot.key, delay)

    def show_stored(self, key: DocumentKey, version: int | None = None) -> None:
        """Show the persistent cache's result of a document just opened (or of a file not open that
        reaches one, ``version`` None), marked cached, while its analysis runs behind it; unless
        that analysis is done first, or the document changed (was opened, or closed)."""
        self._ls.in_background(self._stored(key, version))

    async def _stored(self, key: DocumentKey, version: int | None) -> None:
        ls = self._ls
        path = ls.documents.path_of(key.name)
        try:
            report = await ls.session.stored(path)
        except Exception:
            log.exception("gbls failed to read the cache for %s", key.name)
            return
        document = ls.documents.open_document(key.name)
        if report is None or (document.version if document is not None else None) != version:
            return
        if ls.session.analysed_of(key) is not None:
            return
        source = document.source if document is not None else read_source(path)
        if source is not None:
            self.record(key, Analysed(version, source, report, cached=True))

    def edited(self, snapshot: Snapshot) -> None:
        """The document's text changed: analyse it after the edits' pause, or, with analysis on change
        off, drop the analysis on its way (its result, for the old text, would land on moved lines)."""
        settings = self._ls.settings
        if settings.analyse_on_change:
            self.request(snapshot, settings.debounce_ms / 1000)
        else:
            self.scheduler.cancel(snapshot.key)

    def saved(self, snapshot: Snapshot) -> None:
        """The file is saved: its own analysis, and every other analysis that executed it, again
        (those first: what the file shows of them meanwhile is being re-checked)."""
        for key in self._ls.session.executing(snapshot.path):
            if key != snapshot.key:  # a save is no keystroke: no pause (those in the background take turns)
                self.scheduler.schedule(key)
        own = snapshot.shown.own
        if own is not None and snapshot.document is not None and own.version == snapshot.version:
            if not own.cached and own.report.failure_kind not in ("worker", "internal", "cancelled"):
                return  # its text as saved is the text just analysed: the same answer again
        self.request(snapshot)

    def closed(self, snapshot: Snapshot) -> None:
        """The document is closed: its diagnostics stay in the Problems panel, as its file on disk has
        them (analysed again from disk if the text closed was not saved), until an analysis changes
        them. An untitled document, which is no file, takes its own with it."""
        self.scheduler.cancel(snapshot.key)
        own = snapshot.shown.own
        on_disk = read_source(snapshot.path)
        if on_disk is None:
            self.forget(snapshot.key)
        elif own is not None and own.source != on_disk:
            self.scheduler.schedule(snapshot.key)  # its publication replaces what the closed text had
        else:
            self._ls.publishing.publish(snapshot.uri)  # no longer of a version of the document: of the file

    def forget(self, key: AnalysisKey, clear: bool = True) -> None:
        """The analysis goes, and what it showed (a notebook closed, a run no longer configured, gbls
        turned off). ``clear``: a document's own diagnostics too (else another analysis has them)."""
        ls = self._ls
        self.scheduler.cancel(key)
        analysed = ls.session.forget(key)
        shown = list(analysed.views) if analysed else []
        if isinstance(key, DocumentKey) and clear:
            path = ls.documents.path_of(key.name)
            ls.publishing.clear(key.name)
            shown = [other for other in shown if other != path]
        ls.publishing.publish_files(shown)

    def record(self, key: AnalysisKey, analysed: Analysed) -> None:
        """Keep ``analysed`` as the analysis's result; the features publish and prove it."""
        previous = self._ls.session.record(key, analysed)
        self._ls.events.finished(Finished(key, previous, analysed))

    async def run(self, key: AnalysisKey) -> None:
        """Run the analysis ``key``: a run, or a file's (open, or on disk: it reaches an open one)."""
        if isinstance(key, RunKey):
            async with self._one_at_a_time:
                await self._project_run(key)
            return
        snapshot = self._ls.documents.snapshot(key.name)
        if snapshot.document is None:
            async with self._one_at_a_time:
                await self._document(snapshot)
        else:
            await self._document(snapshot)

    async def _project_run(self, key: RunKey) -> None:
        ls = self._ls
        run = ls.reaching.runs.get(key.name)
        if run is None:
            return
        # Not kept in the persistent cache. A run configured anew cancels this analysis (``Reaching``).
        heard = functools.partial(ls.events.heard, None)
        analysis = Analysis.of_run(run, ls.documents.text_of)
        await ls.session.analysed(analysis, reuse=False, keep=False, watch=ls.watching, heard=heard)

    async def _document(self, snapshot: Snapshot) -> None:
        """Analyse, publish, and say it is done, whatever fails on the way (and log it). A document
        that is not open (it reaches one that is) is analysed as it is on disk. Its result is kept
        only while the document is at the version analysed: a newer one is on its way otherwise."""
        ls, path = self._ls, snapshot.path
        source = snapshot.source if snapshot.document is not None else read_source(path)
        if source is None:
            return
        analysis = Analysis(snapshot.key, path, source, snapshot.version, snapshot.document)
        heard = functools.partial(ls.events.heard, snapshot)
        # A notebook's program is no file: the persistent cache keeps none of it.
        keep = not isinstance(snapshot.document, Program)
        await ls.session.analysed(analysis, reuse=False, keep=keep, watch=ls.watching, heard=heard)
