"""The language server's state: when each analysis runs, and where its results are published.

The process never imports torch. The analyses belong to a ``Session`` (the engine ``gbls check``
drives): each open document's own, the project's runs, and those of unopened files that reach an
open one (``project``), each named by an ``AnalysisKey``. This module runs them (one at a time per
analysis, through the ``Scheduler``; those in the background take turns), publishes each file's
view (``Session.view``) to every file an analysis touched, before and after, drops a result whose
version is gone, and on a save analyses again every analysis that executed the file. Real runs'
traces are read in the background and shown with the rest, each finding while its lines still read
as the run's.

A save, top-down: ``saved`` schedules every analysis that executed the file, then the file's own
(``request``); the scheduler calls ``analyse_key``, which runs ``analyse_document`` or
``analyse_run``; each goes through ``_analysed`` (progress, the "analysing" and "re-checking"
statuses, the report or the failure it ended in), then ``_record``/``_published``, which publish
every file the result touches (``publish``) and their statuses (``_status``)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Literal
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls import uris
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..engine import reach, runs
from ..engine.model import BreakReport, FileReport, FileView, FunctionReport, failure_report
from ..engine.sources import Sources, read_source
from ..runtime import persistent
from ..runtime.errors import WorkerError
from ..runtime.scheduler import Scheduler
from ..runtime.session import Analysed, AnalysisKey, DocumentKey, RunKey, Session, entry_of
from ..settings import Settings
from ..worker.shared.protocol import Run
from . import configuration, inlays, notebooks, project, pull, suppressions, traces
from .actions import offer
from .diagnostics import as_configured, file_diagnostics, split_diagnostics
from .documents import GblsProtocol
from .hover import FixOf
from .markdown import Where
from .messages import analysis_line
from .progress import progress_begin, progress_end
from .proving import Proven

log = logging.getLogger(__name__)

STATUS = "gbls/status"
# A document's state in ``gbls/status``: an analysis that will reach it runs, or its result is shown.
State = Literal["analysing", "done"]


class GblsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gbls", __version__, protocol_cls=GblsProtocol, notebook_document_sync=notebooks.SYNC
        )
        # What the client said at start; the workspace's configuration is read on top of it each time,
        # so a key the user removes goes back to its default instead of keeping its last value.
        self.initial_settings = Settings()
        # Until the client says its settings and folders (``begin``): nothing is analysed before.
        self.session = Session(Settings(), [], self.text_of)
        self.scheduler: Scheduler[AnalysisKey] = Scheduler(self.analyse_key)
        self._said_sandbox_note = False
        self._said_notes: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self._runs: dict[str, Run] = {}  # the configured runs and the tests' runs, by name, as last read
        self._configured: dict[str, str] = {}  # of those, the configured ones: the folder of each
        # The files the user opened in this session: a file only an analysis in the background
        # reached (an importer gbls ran to reach another) shows its breaks, never its own failure.
        self._opened: set[str] = set()
        # A file that compiles nothing: the analyses of the files that import it.
        self._importers: dict[str, list[DocumentKey]] = {}
        self._looking: set[str] = set()  # the files whose importers and tests are being looked for
        self._commanded: set[str] = set()  # the traces imported by command, not by the settings
        # Analyses in the background (runs, unopened files) take turns: the open file's goes first.
        self._one_at_a_time = asyncio.Lock()
        self.notebooks = notebooks.Notebooks(lambda: self.workspace)
        self.proven = Proven(self.session, self.window_log_message)
        self.pull = pull.Pulling()
        self.inlays = inlays.Asked()

    def begin(self, settings: Settings, folders: list[str]) -> None:
        """The client's settings and workspace folders, at its start: the session that analyses them."""
        self.initial_settings = settings
        # The cache's notes come from the threads that read and write it: logged, not sent from there.
        self.session = Session(settings, folders, self.text_of, persistent.from_environment(log.warning))
        self.proven = Proven(self.session, self.window_log_message)

    @property
    def settings(self) -> Settings:
        return self.session.settings

    # -- documents --------------------------------------------------------------------------

    def open_document(self, uri: str) -> Any:
        """The open text document at ``uri``, or the open notebook as the program gbls analyses."""
        return self.notebooks.program(uri) or self.workspace.text_documents.get(unquote(uri))

    def uri_of(self, path: str) -> str:
        """The URI of the file ``path``: an open document's own, an untitled one's too, whose path
        (``Untitled-1``, in the first workspace folder) has no URI of its own."""
        uri = uris.from_fs_path(path) or path
        if self.open_document(uri) is None:
            for other in list(self.workspace.text_documents):
                if other.startswith("untitled:") and self.path_of(other) == path:
                    return str(other)
        return uri

    def text_of(self, path: str) -> str | None:
        document = self.open_document(self.uri_of(path))
        return document.source if document is not None else read_source(path)

    def report_of(self, path: str) -> FileView | None:
        """What every analysis says about the file ``path``."""
        return self.session.view(path)

    def view_of(self, uri: str) -> tuple[FileView, str, int | None] | None:
        """The document's view, the text its positions are in, and that text's version if it is the
        document's own analysis's; None if no analysis reached it."""
        path = self.path_of(uri)
        view = self.session.view(path)
        if view is None:
            return None
        own = self.session.analysed_of(uri)
        if own is not None and own.report.path == path:
            return view, own.source, own.version
        return view, self.text_of(path) or "", None

    def path_of(self, uri: str) -> str:
        document = self.open_document(uri)
        path = document.path if document is not None else uris.to_fs_path(uri) or uri
        if uri.startswith("untitled:") and self.session.folders:
            # In the first workspace folder, where it runs as a file there would (not wherever the
            # server happens to run: that folder, unknown to the sandbox, is no place to start it).
            return os.path.join(self.session.folders[0], os.path.basename(path))
        return os.path.abspath(path)

    def reports(self) -> list[FileReport]:
        """Every analysis's report: what fix all applies, as ``gbls check --fix`` would."""
        return [analysed.report for _, analysed in self.session.analysed()]

    def compiled_elsewhere(self, view: FileView) -> tuple[tuple[FunctionReport, FileReport], ...]:
        """The functions compiled in other files whose code or breaks are in the file of ``view`` (a
        model compiled in ``train.py``), each with the analysis that ran it: the file's report tells
        them, clean ones too."""
        wanted = {brk.function for brk in view.breaks}
        found: dict[str, tuple[FunctionReport, FileReport]] = {}
        for _, analysed in self.session.results():
            for function in analysed.report.functions:
                name = function.qualname
                if name in found or any(f.qualname == name for f in view.functions):
                    continue
                breaks_here = name in wanted and any(
                    b.path == view.path for b in analysed.report.breaks_of(name)
                )
                code = {function.code_path, *(reached.path for reached in function.reached)}
                if breaks_here or (function.analysed and view.path in code):
                    found[name] = (function, analysed.report)
        return tuple(found.values())

    def where(self, path: str, links: bool) -> Where:
        """How hovers and reports name places for the file ``path``."""
        sources = Sources(self.text_of)
        return Where(path, self.session.folder_of(path), links, self.notebooks.cell_line, sources.qualname)

    def analysed_of(self, brk: BreakReport, path: str) -> str:
        """The file whose analysis found ``brk``, shown in the file ``path``: its fixes are made and
        proven for that analysis (the flag an ``.item()`` in ``model.py`` needs goes into the
        ``train.py`` that compiles it). The file's own analysis first; ``path`` if none has it."""
        having = [
            report.path
            for report in self.reports()
            if any((b.path, b.key) == (brk.path, brk.key) for b in report.breaks)
        ]
        return path if path in having or not having else having[0]

    def fix_of(self, path: str) -> FixOf:
        """Each break's first proven fix, for the file ``path`` (what to do first: the first quick
        fix), or why it has none."""
        sources = Sources(self.text_of)
        verdicts = lambda fix, brk: self.proven.proofs.known(fix, brk, sources)  # noqa: E731
        return lambda brk: offer(brk, self.analysed_of(brk, path), sources, self.session.folders, verdicts)

    # -- the worker -----------------------------------------------------------------------------

    def in_background(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def warm(self) -> None:
        """Start the worker for the current settings, and say how it went."""
        worker = self.session.worker
        try:
            info = await self.session.warm()
        except WorkerError as error:
            if worker is not self.session.worker:
                return  # replaced (restart, new interpreter) while it was starting: nothing to say
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"gbls cannot analyse: {error}")
            )
            return
        ready = f"gbls worker ready: torch {info.torch}, Python {info.python} ({info.executable})"
        self.window_log_message(
            lsp.LogMessageParams(type=lsp.MessageType.Info, message=f"{ready}, sandbox {info.sandbox}")
        )
        if worker.note and not self._said_sandbox_note:
            self._said_sandbox_note = True
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=worker.note))

    async def restart_worker(self) -> None:
        await self.session.restart()
        self.in_background(self.warm())
        for uri in self.notebooks.documents():
            self.request(uri, fresh=True)

    async def stop(self) -> None:
        """Stop the proofs, then the worker: a proof left running would start a new worker after the
        shutdown (and a process still being started when the event loop closes keeps the server
        from exiting)."""
        self.scheduler.cancel_all()
        await self.proven.stop()
        await self.session.stop()

    # -- analysis -----------------------------------------------------------------------------

    def request(self, uri: str, delay: float = 0.0, fresh: bool = False) -> None:
        """Analyse ``uri`` after ``delay``; or, when the edit cannot change the result, publish it now.
        A file with no compile site of its own is also reached from what compiles it (``reach``)."""
        if not self.settings.enable:
            return
        document = self.open_document(uri)
        if document is None:
            return
        path = self.path_of(uri)
        self._opened.add(path)
        if project.starting(path, self.session.folder_of(path)) is not None:
            own = self.session.forget(uri)  # the run's result replaces the script's own, at once
            if own is not None:
                self._publish_files(own.views)
            self.reach(uri)  # a script its configured run starts shows that run's result, from disk
            if self.session.view(path) is not None:  # the run is done: the file opened after it
                self.publish(uri)
                self._status(uri, "done")
            return
        if not reach.compiles(path, lambda _: document.source):
            self.reach(uri)
        if fresh:
            self.session.forget_memory(uri)
        else:
            report = self.session.from_cache(uri, self.path_of(uri), document.source)
            if report is not None:
                self.scheduler.cancel(DocumentKey(uri))
                self._record(uri, Analysed(document.version, document.source, report))
                return
            if self.session.analysed_of(uri) is None and self.notebooks.program(uri) is None:
                self.in_background(self._from_store(uri, document.version))
        self.scheduler.schedule(DocumentKey(uri), delay)

    async def _from_store(self, uri: str, version: int | None) -> None:
        """Show the persistent cache's result of a document just opened (or of a file not open that
        reaches one, ``version`` None), marked cached, while its analysis runs behind it; unless
        that analysis is done first, or the document changed (was opened, or closed)."""
        path = self.path_of(uri)
        try:
            report = await self.session.stored(path)
        except Exception:
            log.exception("gbls failed to read the cache for %s", uri)
            return
        document = self.open_document(uri)
        if report is None or (document.version if document is not None else None) != version:
            return
        if self.session.analysed_of(uri) is not None:
            return
        source = document.source if document is not None else read_source(path)
        if source is not None:
            self._record(uri, Analysed(version, source, report, cached=True))

    def cached(self, uri: str) -> bool:
        """Whether the document shows the persistent cache's result, its analysis not yet done."""
        own = self.session.analysed_of(uri)
        return own is not None and own.cached

    def reach(self, uri: str) -> None:
        """Analyse in the background what reaches the file: the configured runs that have not run yet,
        else the workspace files that import it and compile something."""
        path = self.path_of(uri)
        found = runs.configured(self.session.folder_of(path), path)
        for problem in found.problems:
            self._say_once(problem)
        if not found.runs:
            self.in_background(self._reach_by_importers(uri, path))
            return
        for run in found.runs:
            self._configured[run.name] = self.session.folder_of(path)
            self._start_run(run)

    def reconfigured(self, folder: str) -> None:
        """The folder's runs were edited (its pyproject.toml or .vscode/launch.json changed on disk): a
        run it no longer configures as it was goes, with what it showed; every open document of the
        folder is asked for again, so that a script a run now starts shows that run's result at once,
        and one no run starts any more is analysed itself."""
        for name, where in list(self._configured.items()):
            run = self._runs.get(name)
            if where != folder or run is None:
                continue
            if run not in runs.configured(folder, entry_of(run)).runs:
                del self._configured[name], self._runs[name]
                self.scheduler.cancel(RunKey(name))
                analysed = self.session.forget_run(name)
                self._publish_files(analysed.views if analysed else {})
        for uri in self.notebooks.documents():
            if self.session.folder_of(self.path_of(uri)) == folder:
                self.request(uri)

    async def _reach_by_importers(self, uri: str, path: str) -> None:
        folder = self.session.folder_of(path)
        self._looking.add(path)  # till then, "nothing compiles this file" is not known
        try:
            found = (await asyncio.to_thread(reach.importers, [path], folder, self.text_of))[path]
            self._importers[path] = [
                DocumentKey(uris.from_fs_path(importer) or importer) for importer in found
            ]
            for key in self._importers[path]:
                if self.session.analysed_of(key.name) is None:
                    self.in_background(self._from_store(key.name, None))  # a new window: shown at once
                    self.scheduler.schedule(key)
            reached = bool(found) or await self._reach_by_tests(path)
        finally:
            self._looking.discard(path)
        if not reached and self.open_document(uri) is not None:
            self._status(uri, "done")

    async def _reach_by_tests(self, path: str) -> bool:
        run = await asyncio.to_thread(project.tests_run, path, self.session.folder_of(path), self.text_of)
        if run is not None:
            self._start_run(run)
        return run is not None

    def _start_run(self, run: Run) -> None:  # in the background, unless it ran and has not changed
        known, self._runs[run.name] = self._runs.get(run.name), run
        if known != run or self.session.run_analysed(run.name) is None:
            self.scheduler.schedule(RunKey(run.name))

    def edited(self, uri: str) -> None:
        """The document's text changed: analyse it after the edits' pause, or, with analysis on change
        off, drop the analysis on its way (its result, for the old text, would land on moved lines)."""
        if self.settings.analyse_on_change:
            self.request(uri, self.settings.debounce_ms / 1000)
        else:
            self.scheduler.cancel(DocumentKey(uri))

    def saved(self, uri: str) -> None:
        """The file is saved: its own analysis, and every other analysis that executed it, again
        (those first: what the file shows of them meanwhile is being re-checked)."""
        for key in self.session.executing(self.path_of(uri)):
            if key != DocumentKey(
                uri
            ):  # a save is no keystroke: no pause (those in the background take turns)
                self.scheduler.schedule(key)
        own, document = self.session.analysed_of(uri), self.open_document(uri)
        if own is not None and document is not None and own.version == document.version and not own.cached:
            if own.report.failure_kind not in ("worker", "internal", "cancelled"):
                return  # its text as saved is the text just analysed: the same answer again
        self.request(uri)

    def _record(self, uri: str, analysed: Analysed) -> None:
        """Keep ``analysed`` as the document's result and publish it where it shows."""
        previous = self.session.record(uri, self.path_of(uri), analysed)
        self._published(DocumentKey(uri), previous, analysed)

    def _published(self, key: AnalysisKey, previous: Analysed | None, analysed: Analysed) -> None:
        """Publish every file the analysis ``key``'s last and new results touch (a file whose breaks are
        gone too), say the analysis in the log, and its notes once; an open file it was to reach but did
        not is told why."""
        report = analysed.report
        touched = dict.fromkeys([*(previous.views if previous else {}), *analysed.views])
        for path in touched:
            uri = self.uri_of(path)
            self.publish(uri)
            if self.open_document(uri) is not None:
                self._status(uri, "done", finishing=key)
        for path in self._importers:
            if path not in touched and key in self._reaching(path):
                uri = self.uri_of(path)
                if self.open_document(uri) is not None:
                    self._status(uri, "done", finishing=key)
        self.refresh_lenses()
        what = (
            f"run `{report.origin}`"
            if report.origin
            else os.path.relpath(report.path, self.session.folder_of(report.path))
        )
        line = analysis_line(what, report.seconds, report, tuple(analysed.views.values()), analysed.cached)
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=line))
        for note in report.notes:  # about gbls itself: said once, not on every analysis
            self._note_once(note)
        self.proven.start(report, self.text_of)

    def _note_once(self, note: str) -> None:
        """In the log (the output channel), not a pop-up: a note informs, it asks nothing of the user."""
        if note not in self._said_notes:
            self._said_notes.add(note)
            self.window_log_message(
                lsp.LogMessageParams(type=lsp.MessageType.Warning, message=f"gbls: {note}")
            )

    def _say_once(self, note: str) -> None:
        if note not in self._said_notes:
            self._said_notes.add(note)
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"gbls: {note}")
            )

    async def analyse_key(self, key: AnalysisKey) -> None:
        """Run the analysis ``key``: a run, or a file's (open, or on disk: it reaches an open one)."""
        if isinstance(key, RunKey):
            async with self._one_at_a_time:
                await self.analyse_run(key.name)
        elif self.open_document(key.name) is None:
            async with self._one_at_a_time:
                await self.analyse_document(key.name)
        else:
            await self.analyse_document(key.name)

    async def analyse_run(self, name: str) -> None:
        run = self._runs.get(name)
        if run is None:
            return
        path = entry_of(run)
        report = await self._analysed(
            RunKey(name), f"run {name}", path, lambda: self.session.analyse_run(run)
        )
        if self._runs.get(name) != run:
            return  # reconfigured meanwhile: its own analysis is on its way
        analysed = Analysed(None, self.text_of(path) or "" if path else "", report)
        previous = self.session.record_run(name, analysed)
        self._published(RunKey(name), previous, analysed)

    async def analyse_document(self, uri: str) -> None:
        """Analyse, publish, and say it is done, whatever fails on the way (and log it). A document
        that is not open (it reaches one that is) is analysed as it is on disk."""
        document = self.open_document(uri)
        path = self.path_of(uri)
        version, source = (document.version, document.source) if document else (None, read_source(path))
        if source is None:
            return
        report = await self._analysed(
            DocumentKey(uri), os.path.basename(path), path, lambda: self.session.analyse(uri, path, source)
        )
        current = self.open_document(uri)
        if (current.version if current is not None else None) != version:
            return  # a newer version is on its way; this result belongs to none that exists
        try:
            self._record(uri, Analysed(version, source, report))
        except Exception as error:
            self._record(uri, Analysed(version, source, self._internal_failure(path, error)))
            return
        if report.failure_kind == "worker":  # warm a fresh worker now, not when the next edit waits for it
            self.in_background(self.warm())
        if project.unreached(self.session.view(path), path):  # a script or the project's tests may run it
            self.in_background(self._reach_by_importers(uri, path))
        try:
            await self.session.remember(uri, path, source, report)
            if self.notebooks.program(uri) is None:
                await self.session.keep(report)
        except Exception:
            log.exception("gbls failed to remember the analysis of %s", path)

    async def _analysed(
        self, key: AnalysisKey, title: str, path: str, analysis: Callable[[], Awaitable[FileReport]]
    ) -> FileReport:
        """The report of ``analysis``, or of the failure it ended in (the worker's; or gbls's own,
        logged with its traceback), its progress shown meanwhile (cancelling it cancels the
        analysis); the open files its last result reached show that result as being re-checked."""
        progress = await progress_begin(self, title, lambda: self.scheduler.cancel(key))
        if isinstance(key, DocumentKey) and self.open_document(key.name) is not None:
            self._status(key.name, "analysing")
        self._rechecking(key)
        try:
            return await analysis()
        except WorkerError as error:
            return failure_report(path, "worker", str(error))
        except Exception as error:  # a bug in gbls: say so, with the traceback in the log
            return self._internal_failure(path, error)
        finally:
            progress_end(self, progress)

    @staticmethod
    def _internal_failure(path: str, error: Exception) -> FileReport:
        log.exception("gbls failed while analysing %s", path)
        return failure_report(path, "internal", f"gbls itself failed ({type(error).__name__}: {error})")

    def _rechecking(self, key: AnalysisKey) -> None:
        """The analysis ``key`` starts: the other open files its last result reached show that
        result as being re-checked, not as current."""
        previous = dict(self.session.results()).get(key)
        for path in previous.views if previous else ():
            uri = self.uri_of(path)
            if DocumentKey(uri) != key and self.open_document(uri) is not None:
                self._status(uri, "done")

    def _status(self, uri: str, state: State, finishing: AnalysisKey | None = None) -> None:
        """``finishing``: the analysis whose result is being published (it is still running)."""
        status: dict[str, Any] = {"uri": uri, "state": state}
        if state == "done":
            seen = self.view_of(uri)
            view = seen[0] if seen else None
            # A failure of the file's own (a syntax error) is what its status says, not "not reached".
            reached = view is not None and bool(view.translated or view.functions or view.message)
            path = self.path_of(uri)
            if not reached and (path in self._looking or self._still_reaching(path)):
                status["state"] = "analysing"  # "not analysed" only once nothing will reach it
                self.protocol.notify(STATUS, status)
                return
            status |= {
                "breaks": len(view.breaks) if view else 0,
                "elsewhere": _elsewhere(view, self.session.folder_of(view.path)) if view else [],
                "notAnalysed": [f.qualname for f in view.functions if not f.analysed] if view else [],
                "reused": self.session.reused(uri),
                # From the persistent cache, until the analysis that runs behind it is done.
                "cached": self.cached(uri),
                # An analysis that reached the file last time runs again: this may change.
                "rechecking": any(
                    other != finishing and self.scheduler.pending(other) and path in analysed.views
                    for other, analysed in self.session.results()
                ),
                "message": (view.message if view else "") if reached else self.unreached(uri),
                "cut": _cut(view) if reached and view is not None else None,
            }
        self.protocol.notify(STATUS, status)

    def _reaching(self, path: str) -> list[AnalysisKey]:
        """The analyses that may reach the file: its importers', the configured runs'."""
        return [*self._importers.get(path, []), *(RunKey(name) for name in self._runs)]

    def _still_reaching(self, path: str) -> bool:
        """Whether an analysis that may reach the file has yet to give its first result."""
        done = {key for key, _ in self.session.results()}
        return any(key not in done for key in self._reaching(path))

    def unreached(self, uri: str) -> str:
        """Why no analysis ran compiled code of the document: the importer or configured run that
        would have stopped first, or nothing compiles it."""
        path = self.path_of(uri)
        reaching = set(self._reaching(path))
        analyses = [analysed.report for key, analysed in self.session.results() if key in reaching]
        return reach.unreached(path, analyses, self.session.folder_of(path))

    def refresh_lenses(self) -> None:
        """Ask the client for the code lenses again: they show the last analysis, and clients ask for
        them on open and edit only, before the analysis is done."""
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)  # the answer says nothing: not awaited
        self.inlays.changed(self)

    # -- publishing ---------------------------------------------------------------------------

    def publish(self, uri: str) -> None:
        """The document's diagnostics: what every analysis says of its file."""
        self.send(uri, *self.diagnostics_of(uri))

    def diagnostics_of(self, uri: str) -> tuple[list[lsp.Diagnostic], int | None]:
        """What every analysis says of the document's file, as diagnostics (a push's, or a pull's), and
        the version of the document they are of (None for a closed one's: its file's)."""
        sources = Sources(self.text_of)
        diagnostics: list[lsp.Diagnostic] = []
        seen = self.view_of(uri)
        version = None
        if seen is not None:
            view, source, version = seen
            severity = self.session.settings_for(view.path).severity
            diagnostics += file_diagnostics(view, source, severity, sources.lines)
            diagnostics += split_diagnostics(view, source, sources.lines)
            diagnostics += suppressions.unused_diagnostics(view, source, self.session)
            if view.path not in self._opened:
                diagnostics = [d for d in diagnostics if not _about_the_analysis(d)]
        open_document = self.open_document(uri)
        if open_document is None:
            version = None  # a closed document's diagnostics are its file's
        elif version is None:
            version = open_document.version
        return as_configured(diagnostics, self.session.settings_for(self.path_of(uri))), version

    def send(self, uri: str, diagnostics: list[lsp.Diagnostic], version: int | None) -> None:
        """Publish ``diagnostics`` of the document ``uri``; a notebook's, each in its cell. A client
        that pulls them is asked to pull again instead."""
        if self.pull.pulling:
            self.pull.changed(self)
            return
        program = self.notebooks.program(uri)
        if program is None:
            self.pull.pushed.add(uri)
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
            return
        for cell, found in notebooks.in_cells(program, diagnostics).items():
            self.pull.pushed.add(cell)
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell, diagnostics=found))

    def closed(self, uri: str) -> None:
        """The document is closed: its diagnostics stay in the Problems panel, as its file on disk has
        them (analysed again from disk if the text closed was not saved), until an analysis changes
        them. An untitled document, which is no file, takes its own with it."""
        self.scheduler.cancel(DocumentKey(uri))
        path = self.path_of(uri)
        own = self.session.analysed_of(uri)
        on_disk = read_source(path)
        if on_disk is None:
            self.forget(uri)
        elif own is not None and own.source != on_disk:
            self.scheduler.schedule(DocumentKey(uri))  # its publication replaces what the closed text had
        else:
            self.publish(uri)  # no longer of a version of the document: of the file

    def forget(self, uri: str) -> None:
        """The document's analysis goes, and what it showed (a notebook closed, gbls turned off)."""
        self.scheduler.cancel(DocumentKey(uri))
        path = self.path_of(uri)
        analysed = self.session.forget(uri)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self._publish_files(other for other in (analysed.views if analysed else {}) if other != path)

    # -- real runs' traces ------------------------------------------------------------------------

    async def import_configured(self) -> None:
        """Read the traces ``gbls.traces`` names; forget the ones it no longer names."""
        wanted = traces.named(self.settings.traces, self.session.folders) if self.settings.enable else []
        for name in self.session.imports():
            if name not in wanted and name not in self._commanded:
                self._publish_files(self.session.forget_import(name))
        for path in wanted:
            await self.import_trace(path)

    async def import_trace(self, path: str, commanded: bool = False) -> str:
        """Read the trace or log at ``path``, show what it says, and say how the reading went."""
        if commanded:
            self._commanded.add(path)
        try:
            read = await asyncio.to_thread(traces.read, path, self.session.folders, self.text_of)
        except Exception as error:  # a bug in gbls: said, and the other traces are still read
            log.exception("gbls failed to import %s", path)
            self._say_once(f"could not import {path} ({type(error).__name__}: {error})")
            return f"gbls could not import {path}: {error}"
        previous = self.session.record_import(path, read.views)
        self._publish_files({**previous, **read.views})
        summary = read.summary
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=f"gbls: {summary}"))
        for problem in read.trace.problems:
            self._say_once(problem)
        return summary

    def changed(self, uri: str) -> None:
        """The document changed: what a trace says of it shows only while its lines read as the run's."""
        if self.session.imported_in(self.path_of(uri)):
            self.publish(uri)

    def _publish_files(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.publish(self.uri_of(path))

    async def watch_runs(self) -> None:
        """Ask the client to say when a folder's runs change on disk (``pyproject.toml``,
        ``.vscode/launch.json``): an edit of them re-analyses what they start, with no restart."""
        workspace = self.client_capabilities.workspace
        watched = workspace.did_change_watched_files if workspace else None
        if watched is None or not watched.dynamic_registration:
            return
        watchers = [
            lsp.FileSystemWatcher(glob_pattern=f"**/{name}")
            for name in (runs.PYPROJECT, ".vscode/launch.json")
        ]
        registration = lsp.Registration(
            id="gbls-runs",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        try:
            await self.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
        except Exception as error:  # a client that refuses: runs are read again when a file is opened
            log.warning("the client did not watch the runs' files: %s", error)

    # -- settings ---------------------------------------------------------------------------------

    async def pull_configuration(self) -> None:
        """The client's settings, the workspace's and each folder's; an open document whose settings
        changed (opened before they came: another folder's interpreter) is analysed again."""
        found = await configuration.pulled(self)
        if found is None:
            return
        before = {uri: self.session.settings_for(self.path_of(uri)) for uri in self.notebooks.documents()}
        self.apply_settings(*found)
        for uri, settings in before.items():
            if self.session.settings_for(self.path_of(uri)) != settings:
                self.request(uri)

    def apply_settings(self, settings: Settings, folders: dict[str, Settings] | None = None) -> None:
        """``folders``: the workspace folders' own settings (None: as they were)."""
        was_enabled = self.settings.enable
        replaced = settings.worker_key() != self.settings.worker_key()
        self.session.configure(settings, folders)
        if not settings.enable:
            self.scheduler.cancel_all()
            for name in list(self._runs):
                analysed = self.session.forget_run(name)
                self._publish_files(analysed.views if analysed else {})
            self._runs.clear()
            for uri, _ in list(self.session.analysed()):
                self.forget(uri)
            return
        if replaced or not was_enabled:
            self.in_background(self.warm())
        if not was_enabled:
            for uri in self.notebooks.documents():
                self.request(uri)


def _about_the_analysis(diagnostic: lsp.Diagnostic) -> bool:
    """A note of how an analysis went (it failed, was cut, left a function unanalysed), not a finding
    in the code: of a file the user never opened (a script gbls ran to reach another), it goes to the
    log and to the status of the file it was looking for, not to the Problems panel."""
    data = diagnostic.data
    return isinstance(data, dict) and data.get("kind") in ("failure", "cut", "not-analysed")


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
