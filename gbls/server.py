"""The gbls language server: registers the LSP features and delegates each to a plain function.

The process never imports torch. Analyses run in the warm worker (``workerclient``), one at a
time per document (``scheduler``); results are published with the document version they were
computed for, and dropped when that version is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls import uris
from pygls.lsp.server import LanguageServer

from . import __version__, cache, incremental
from .actions import SHOW_LOCATION, code_actions
from .analysis import analyse
from .codelens import SHOW_REPORT, lenses
from .diagnostics import file_diagnostics, root_cause_hints, to_span
from .hover import function_report, hover_markdown
from .report import FileReport, failure_report, read_source
from .sandbox import launch
from .scheduler import Scheduler
from .settings import Settings, from_options
from .workerclient import Worker, WorkerError

log = logging.getLogger(__name__)

ANALYSE_FILE = "gbls.analyseFile"
RESTART_WORKER = "gbls.restartWorker"
STATUS = "gbls/status"


@dataclass(frozen=True)
class Analysed:
    version: int | None
    source: str
    report: FileReport


class GblsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("gbls", __version__)
        self.settings = Settings()
        # What the client said at start; the workspace's configuration is read on top of it each time,
        # so a key the user removes goes back to its default instead of keeping its last value.
        self.initial_settings = Settings()
        self.folders: list[str] = []
        self.records: dict[str, Analysed] = {}
        self.cache: dict[str, cache.Entry] = {}
        self.memories: dict[str, incremental.Memory] = {}
        self.reused: dict[str, list[str]] = {}  # by path: what the last analysis did not translate again
        self.scheduler = Scheduler(self.analyse_document)
        self._worker: Worker | None = None
        self._worker_key: tuple[str, str] | None = None
        self._worker_start: asyncio.Task[Any] | None = None
        self._stopping: asyncio.Task[None] | None = None
        self._said_sandbox_note = False

    # -- documents --------------------------------------------------------------------------

    def open_document(self, uri: str) -> Any:
        return self.workspace.text_documents.get(unquote(uri))

    def text_of(self, path: str) -> str | None:
        document = self.open_document(uris.from_fs_path(path) or path)
        return document.source if document is not None else read_source(path)

    def lines_of(self, path: str) -> list[str]:
        return (self.text_of(path) or "").splitlines()

    # -- worker ---------------------------------------------------------------------------------

    def worker(self) -> Worker:
        """The warm worker for the current settings; a change of interpreter or sandbox replaces it."""
        key = self.settings.worker_key()
        if self._worker is None or key != self._worker_key:
            if self._worker is not None:
                self._stopping = asyncio.create_task(self._worker.stop())
            settings = self.settings
            folders = self.folders or [os.getcwd()]
            self._worker = Worker(lambda: launch(settings.interpreter or None, folders, settings.sandbox))
            self._worker_key = key
            self._worker_start = asyncio.create_task(self._start_worker(self._worker))
        return self._worker

    async def _start_worker(self, worker: Worker) -> None:
        try:
            info = await worker.start()
        except (WorkerError, RuntimeError) as error:
            if worker is not self._worker:
                return  # replaced (restart, new interpreter) while it was starting: nothing to say
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"gbls cannot analyse: {error}")
            )
            return
        ready = f"gbls worker ready: torch {info.torch}, Python {info.python} ({info.executable})"
        ready += f", sandbox {info.sandbox}"
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=ready))
        if worker.note and not self._said_sandbox_note:
            self._said_sandbox_note = True
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=worker.note))

    async def stop(self) -> None:
        self.scheduler.cancel_all()
        if self._worker is not None:
            with contextlib.suppress(Exception):
                await self._worker.stop()

    async def restart_worker(self) -> None:
        if self._worker is not None:
            await self._worker.stop()
        self._worker = None
        self.worker()
        for uri in list(self.workspace.text_documents):
            self.request(uri, fresh=True)

    # -- analysis -----------------------------------------------------------------------------

    def request(self, uri: str, delay: float = 0.0, fresh: bool = False) -> None:
        """Analyse ``uri`` after ``delay``; or, when the edit cannot change the result, publish it now."""
        if not self.settings.enable:
            return
        if fresh:
            self.memories.pop(uri, None)
        elif self._publish_from_cache(uri):
            return
        self.scheduler.schedule(uri, delay)

    def _settings_key(self) -> tuple[Any, ...]:
        return (self.settings.for_worker(), self.settings.worker_key())

    def _publish_from_cache(self, uri: str) -> bool:
        document = self.open_document(uri)
        if document is None:
            return False
        report = cache.reuse(self.cache.get(uri), document.source, self._settings_key(), self.text_of)
        if report is None:
            return False
        self.scheduler.cancel(uri)
        self._record(uri, Analysed(document.version, document.source, report))
        return True

    def _record(self, uri: str, analysed: Analysed) -> None:
        """Keep ``analysed`` as the document's result and publish it where it shows."""
        previous = self.records.get(uri)
        self.records[uri] = analysed
        self.publish_around(uri, previous.report if previous else None, analysed.report)
        self._status(uri, "done", analysed.report)

    async def analyse_document(self, uri: str) -> None:
        document = self.open_document(uri)
        if document is None:
            return
        version, source, path = document.version, document.source, document.path
        progress = await self._progress_begin(uri, os.path.basename(path))
        self._status(uri, "analysing")
        try:
            report = await self._analyse(path, source, self.memories.get(uri))
        except (WorkerError, RuntimeError) as error:
            report = failure_report(path, "worker", str(error))
        finally:
            self._progress_end(progress)
        current = self.open_document(uri)
        if current is None or current.version != version:
            return  # a newer version is on its way; this result belongs to none that exists
        self._record(uri, Analysed(version, source, report))
        if report.failure_kind == "worker":  # warm a fresh worker now, not when the next edit waits for it
            self._worker_start = asyncio.create_task(self._start_worker(self.worker()))
        if report.status == "ok":
            await self._remember(uri, source, report)

    async def _analyse(self, path: str, source: str, memory: incremental.Memory | None) -> FileReport:
        """Translate what the edit can have changed; keep the other functions' last results."""
        # Parsing and tokenizing every region takes a while on big files: not on the event loop.
        reuse = await asyncio.to_thread(
            incremental.reusable, memory, source, self._settings_key(), self.text_of
        )
        folder = self._folder_of(path)
        report = await analyse(self.worker(), path, source, self.settings, folder, self.text_of, tuple(reuse))
        self.reused[path] = reuse
        if not reuse:
            return report
        if memory is None or report.status != "ok":  # the module failed: say exactly what a full run says
            self.reused[path] = []
            return await analyse(self.worker(), path, source, self.settings, folder, self.text_of)
        return incremental.combine(report, memory, reuse, source, self.text_of)

    async def _remember(self, uri: str, source: str, report: FileReport) -> None:
        """What the next analysis of ``uri`` may reuse; worked out off the event loop, after publishing."""
        settings = self._settings_key()

        def work() -> tuple[cache.Entry | None, incremental.Memory]:
            imported = cache.workspace_imports(report.path, self.folders, self.text_of)
            reached = {loc.path for b in report.breaks for loc in b.chain if loc.path != report.path}
            dependencies = sorted(reached | set(imported))
            stored = cache.entry(source, settings, dependencies, self.text_of, report)
            return stored, incremental.remember(report, source, settings, imported, self.text_of)

        stored, memory = await asyncio.to_thread(work)
        if stored is not None:
            self.cache[uri] = stored
        self.memories[uri] = memory

    def _folder_of(self, path: str) -> str:
        containing = [f for f in self.folders if path == f or path.startswith(f.rstrip(os.sep) + os.sep)]
        return max(containing, key=len) if containing else os.path.dirname(path)

    async def _progress_begin(self, uri: str, name: str) -> str | None:
        capabilities = self.client_capabilities.window
        if capabilities is None or not capabilities.work_done_progress:
            return None
        token = f"gbls-{uuid.uuid4()}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:
            return None
        self.work_done_progress.begin(
            token, lsp.WorkDoneProgressBegin(title="gbls", message=f"analysing {name}", cancellable=True)
        )
        cancelled = self.work_done_progress.tokens.get(token)
        if cancelled is not None:
            cancelled.add_done_callback(
                lambda future: self.scheduler.cancel(uri) if future.cancelled() else None
            )
        return token

    def _progress_end(self, token: str | None) -> None:
        if token is not None:
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd())
            self.work_done_progress.tokens.pop(token, None)

    def _status(self, uri: str, state: str, report: FileReport | None = None) -> None:
        status: dict[str, Any] = {"uri": uri, "state": state}
        if report is not None:
            status |= {
                "breaks": len(report.breaks),
                "notAnalysed": [f.qualname for f in report.functions if not f.analysed],
                "reused": self.reused.get(report.path, []),
                "message": report.message,
            }
        self.protocol.notify(STATUS, status)

    # -- publishing ---------------------------------------------------------------------------

    def publish_around(self, uri: str, old: FileReport | None, new: FileReport | None) -> None:
        """Publish ``uri`` and every open document holding a root cause of its old or new breaks."""
        roots = {brk.root.path for report in (old, new) if report for brk in report.breaks}
        targets = {uri} | {uris.from_fs_path(path) or path for path in roots}
        for target in targets:
            if target == uri or self.open_document(target) is not None:
                self.publish(target)

    def publish(self, uri: str) -> None:
        record = self.records.get(uri)
        diagnostics: list[lsp.Diagnostic] = []
        version = None
        if record is not None:
            version = record.version
            diagnostics += file_diagnostics(
                record.report, record.source, self.settings.severity, self.lines_of
            )
        path = uris.to_fs_path(uri) or uri
        if self.open_document(uri) is not None:
            for other in self.records.values():
                diagnostics += root_cause_hints(other.report, path, self.lines_of)
            if version is None:
                version = self.open_document(uri).version
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    def forget(self, uri: str) -> None:
        self.scheduler.cancel(uri)
        self.memories.pop(uri, None)
        record = self.records.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if record is not None:
            self.publish_around(uri, record.report, None)

    # -- settings ---------------------------------------------------------------------------------

    async def pull_configuration(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace is None or not workspace.configuration:
            return
        try:
            values = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="gbls")])
            )
        except Exception as error:
            log.warning("workspace/configuration failed: %s", error)
            return
        if values:
            self.apply_settings(from_options(values[0], self.initial_settings))

    def apply_settings(self, settings: Settings) -> None:
        was_enabled = self.settings.enable
        self.settings = settings
        if not settings.enable:
            self.scheduler.cancel_all()
            for uri in list(self.records):
                self.forget(uri)
            return
        self.worker()
        if not was_enabled:
            for uri in list(self.workspace.text_documents):
                self.request(uri)


server = GblsServer()


@server.feature(lsp.INITIALIZE)
def initialize(ls: GblsServer, params: lsp.InitializeParams) -> None:
    ls.settings = ls.initial_settings = from_options(params.initialization_options)
    folders = [uris.to_fs_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [uris.to_fs_path(params.root_uri)]
    ls.folders = [os.path.abspath(f) for f in folders if f]


@server.feature(lsp.INITIALIZED)
async def initialized(ls: GblsServer, params: lsp.InitializedParams) -> None:
    await ls.pull_configuration()
    if ls.settings.enable:
        ls.worker()  # warm before the first file is opened


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: GblsServer, params: lsp.DidChangeConfigurationParams) -> None:
    if isinstance(params.settings, dict) and params.settings:
        ls.apply_settings(from_options(params.settings, ls.initial_settings))
    await ls.pull_configuration()
    for uri in list(ls.workspace.text_documents):
        ls.request(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: GblsServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.request(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: GblsServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.request(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: GblsServer, params: lsp.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    if ls.settings.analyse_on_change:
        ls.request(uri, ls.settings.debounce_ms / 1000)
    else:
        ls.scheduler.cancel(uri)  # a result for the old text would land on moved lines


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: GblsServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.forget(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: GblsServer, params: lsp.HoverParams) -> lsp.Hover | None:
    record = ls.records.get(params.text_document.uri)
    if record is None:
        return None
    where = to_span(lsp.Range(params.position, params.position), record.source.splitlines())
    markdown = hover_markdown(record.report, where.line, where.column)
    if markdown is None:
        return None
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))


@server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
def code_lens(ls: GblsServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    record = ls.records.get(params.text_document.uri)
    return lenses(record.report, params.text_document.uri) if record else []


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix], resolve_provider=False),
)
def code_action(ls: GblsServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
    uri = params.text_document.uri
    record = ls.records.get(uri)
    selection = to_span(params.range, record.source.splitlines()) if record else None
    workspace = ls.client_capabilities.workspace
    edits = workspace.workspace_edit if workspace else None
    snippets = bool(edits and edits.snippet_edit_support)
    report = record.report if record else None
    return code_actions(uri, list(params.context.diagnostics), ls.text_of, report, selection, snippets)


@server.command(ANALYSE_FILE)
def analyse_file(ls: GblsServer, uri: str) -> None:
    ls.request(uri, fresh=True)


@server.command(SHOW_REPORT)
def show_report(ls: GblsServer, *arguments: Any) -> str:
    """Arguments: the document's URI, and optionally one function's qualname."""
    record = ls.records.get(str(arguments[0])) if arguments else None
    if record is None:
        return "gbls has not analysed this file yet."
    return function_report(record.report, str(arguments[1]) if len(arguments) > 1 else None)


@server.command(SHOW_LOCATION)
async def show_location(ls: GblsServer, uri: str, selection: lsp.Range) -> None:
    await ls.window_show_document_async(lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection))


@server.command(RESTART_WORKER)
async def restart_worker(ls: GblsServer) -> None:
    await ls.restart_worker()


@server.feature(lsp.SHUTDOWN)
async def shutdown(ls: GblsServer, params: None) -> None:
    await ls.stop()


def serve() -> None:
    # What the user should see goes through window/logMessage; stderr is for problems only
    # (clients show it as errors), so pygls's per-message chatter stays off.
    logging.basicConfig(level=logging.WARNING, format="gbls: %(message)s")
    server.start_io()
