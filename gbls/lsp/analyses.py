"""When each analysis runs: a document's own, and in the background the runs and unopened files
that reach an open one (``reaching``), one at a time per analysis through the ``Scheduler`` (those in
the background take turns: the open file's goes first). A result whose version is gone is dropped;
a kept one is an event (``events.Finished``) that the features publish and prove. The process
never imports torch: the ``Session``'s workers translate.

A save (``saved``) schedules every analysis that executed the file, then the file's own
(``request``); the scheduler calls ``analyse``, which runs the document's or the run's analysis
(``_analysed``: its progress, the "analysing" and "re-checking" statuses, the report or the failure
it ended in) and keeps its result (``record``)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..engine import reach, runs
from ..engine.model import FileReport, failure_report
from ..engine.sources import read_source
from ..runtime.errors import WorkerError
from ..runtime.scheduler import Scheduler
from ..runtime.session import Analysed, AnalysisKey, DocumentKey, RunKey
from .events import Finished
from .progress import progress_begin, progress_end
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer

log = logging.getLogger(__name__)


class Analyses:
    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls
        self.scheduler: Scheduler[AnalysisKey] = Scheduler(self.analyse)
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
            if now.view is not None:  # the run is done: the file opened after it
                ls.publishing.publish_snapshot(now)
                ls.status.show(now, "done")
            return
        source = document.source
        if not reach.compiles(snapshot.path, lambda _: source):
            ls.reaching.reach(snapshot)
        if fresh:
            ls.session.forget_memory(snapshot.key)
        else:
            report = ls.session.from_cache(snapshot.key, snapshot.path, source)
            if report is not None:
                self.scheduler.cancel(snapshot.key)
                self.record(snapshot.key, Analysed(snapshot.version, source, report))
                return
            if snapshot.own is None and ls.notebooks.program(snapshot.uri) is None:
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
        own, document = snapshot.own, snapshot.document
        if own is not None and document is not None and own.version == document.version and not own.cached:
            if own.report.failure_kind not in ("worker", "internal", "cancelled"):
                return  # its text as saved is the text just analysed: the same answer again
        self.request(snapshot)

    def closed(self, snapshot: Snapshot) -> None:
        """The document is closed: its diagnostics stay in the Problems panel, as its file on disk has
        them (analysed again from disk if the text closed was not saved), until an analysis changes
        them. An untitled document, which is no file, takes its own with it."""
        self.scheduler.cancel(snapshot.key)
        own = snapshot.own
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

    async def analyse(self, key: AnalysisKey) -> None:
        """Run the analysis ``key``: a run, or a file's (open, or on disk: it reaches an open one)."""
        if isinstance(key, RunKey):
            async with self._one_at_a_time:
                await self._run(key)
            return
        snapshot = self._ls.documents.snapshot(key.name)
        if snapshot.document is None:
            async with self._one_at_a_time:
                await self._document(snapshot)
        else:
            await self._document(snapshot)

    async def _run(self, key: RunKey) -> None:
        ls = self._ls
        run = ls.reaching.runs.get(key.name)
        if run is None:
            return
        path = runs.entry_of(run)
        report = await self._analysed(key, f"run {key.name}", path, lambda: ls.session.analyse_run(run))
        if ls.reaching.runs.get(key.name) != run:
            return  # reconfigured meanwhile: its own analysis is on its way
        self.record(key, Analysed(None, ls.documents.text_of(path) or "" if path else "", report))

    async def _document(self, snapshot: Snapshot) -> None:
        """Analyse, publish, and say it is done, whatever fails on the way (and log it). A document
        that is not open (it reaches one that is) is analysed as it is on disk."""
        ls, key = self._ls, snapshot.key
        path, version = snapshot.path, snapshot.version
        source = snapshot.source if snapshot.document is not None else read_source(path)
        if source is None:
            return
        analysis = lambda: ls.session.analyse(key, path, source)  # noqa: E731
        report = await self._analysed(key, os.path.basename(path), path, analysis, snapshot)
        current = ls.documents.open_document(key.name)
        if (current.version if current is not None else None) != version:
            return  # a newer version is on its way; this result belongs to none that exists
        try:
            self.record(key, Analysed(version, source, report))
        except Exception as error:
            self.record(key, Analysed(version, source, _internal_failure(path, error)))
            return
        if report.failure_kind == "worker":  # warm a fresh worker now, not when the next edit waits for it
            ls.in_background(ls.warm())
        view = ls.session.view(path)
        if view is not None and reach.unanalysed([view]):  # a script or the project's tests may run it
            ls.in_background(ls.reaching.by_importers(snapshot))
        try:
            await ls.session.remember(key, path, source, report)
            if ls.notebooks.program(key.name) is None:
                await ls.session.keep(report)
        except Exception:
            log.exception("gbls failed to remember the analysis of %s", path)

    async def _analysed(
        self,
        key: AnalysisKey,
        title: str,
        path: str,
        analysis: Callable[[], Awaitable[FileReport]],
        snapshot: Snapshot | None = None,
    ) -> FileReport:
        """The report of ``analysis``, or of the failure it ended in (the worker's; or gbls's own,
        logged with its traceback), its progress shown meanwhile (cancelling it cancels the
        analysis); the open files its last result reached show that result as being re-checked.
        ``snapshot``: the document analysed, if it is one."""
        ls = self._ls
        progress = await progress_begin(ls, title, lambda: self.scheduler.cancel(key))
        ls.status.starting(key, snapshot)
        try:
            return await analysis()
        except WorkerError as error:
            return failure_report(path, "worker", str(error))
        except Exception as error:  # a bug in gbls: say so, with the traceback in the log
            return _internal_failure(path, error)
        finally:
            progress_end(ls, progress)


def _internal_failure(path: str, error: Exception) -> FileReport:
    log.exception("gbls failed while analysing %s", path)
    return failure_report(path, "internal", f"gbls itself failed ({type(error).__name__}: {error})")
