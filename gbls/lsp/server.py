"""The gbls language server: registers the LSP features and delegates each to a plain function.

The process never imports torch. The analyses belong to a ``Session`` (the same engine
``gbls check`` drives); this module decides when they run (one at a time per document, through
the ``Scheduler``), publishes their results with the document version they were computed for,
and drops a result whose version is gone.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import uuid
from typing import Any
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls import uris
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..engine.model import FileReport, failure_report
from ..engine.sources import Sources, read_source
from ..runtime.errors import WorkerError
from ..runtime.sandbox import not_dumpable
from ..runtime.scheduler import Scheduler
from ..runtime.session import Analysed, Session
from ..settings import Settings, from_options
from ..worker.shared.lines import split_lines
from . import notebooks
from .actions import FIX_ALL, SHOW_LOCATION, preferred_title, requested_actions
from .codelens import SHOW_REPORT, lenses
from .diagnostics import configured, file_diagnostics, root_cause_hints, to_span
from .hover import FixOf, function_report, hover_markdown
from .markdown import Where
from .messages import analysis_line
from .protocol import GblsProtocol, GblsWorkspace

log = logging.getLogger(__name__)

ANALYSE_FILE = "gbls.analyseFile"
RESTART_WORKER = "gbls.restartWorker"
STATUS = "gbls/status"


class GblsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gbls", __version__, protocol_cls=GblsProtocol, notebook_document_sync=notebooks.SYNC
        )
        # What the client said at start; the workspace's configuration is read on top of it each time,
        # so a key the user removes goes back to its default instead of keeping its last value.
        self.initial_settings = Settings()
        self.session = Session(Settings(), [], self.text_of)
        self.scheduler = Scheduler(self.analyse_document)
        self._said_sandbox_note = False
        self._said_notes: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()
        self.notebooks = notebooks.Notebooks(lambda: self.workspace)

    @property
    def settings(self) -> Settings:
        return self.session.settings

    # -- documents --------------------------------------------------------------------------

    def open_document(self, uri: str) -> Any:
        """The open text document at ``uri``, or the open notebook as the program gbls analyses."""
        return self.notebooks.program(uri) or self.workspace.text_documents.get(unquote(uri))

    def text_of(self, path: str) -> str | None:
        document = self.open_document(uris.from_fs_path(path) or path)
        return document.source if document is not None else read_source(path)

    def report_of(self, path: str) -> FileReport | None:
        return self.session.report_of(path)

    def analysed(self, uri: str) -> Analysed | None:
        return self.session.analysed_of(uri)

    def path_of(self, uri: str) -> str:
        document = self.open_document(uri)
        path = document.path if document is not None else uris.to_fs_path(uri) or uri
        return os.path.abspath(path)

    def where(self, path: str, links: bool) -> Where:
        """How hovers and reports name places for the analysed file ``path``."""
        return Where(path, self.session.folder_of(path), links, self.notebooks.cell_line)

    def fix_of(self, path: str) -> FixOf:
        """The title of each break's preferred fix, for the analysed file ``path``: what to do first."""
        sources = Sources(self.text_of)
        return lambda brk: preferred_title(brk, path, sources, self.session.folders)

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
        self.scheduler.cancel_all()
        await self.session.stop()

    # -- analysis -----------------------------------------------------------------------------

    def request(self, uri: str, delay: float = 0.0, fresh: bool = False) -> None:
        """Analyse ``uri`` after ``delay``; or, when the edit cannot change the result, publish it now."""
        if not self.settings.enable:
            return
        document = self.open_document(uri)
        if document is None:
            return
        if fresh:
            self.session.forget_memory(uri)
        else:
            report = self.session.from_cache(uri, self.path_of(uri), document.source)
            if report is not None:
                self.scheduler.cancel(uri)
                self._record(uri, Analysed(document.version, document.source, report))
                return
        self.scheduler.schedule(uri, delay)

    def _record(self, uri: str, analysed: Analysed) -> None:
        """Keep ``analysed`` as the document's result and publish it where it shows."""
        previous = self.session.record(uri, self.path_of(uri), analysed)
        self.publish_around(uri, previous.report if previous else None, analysed.report)
        self._status(uri, "done", analysed.report)
        self.refresh_lenses()
        for note in analysed.report.notes:  # about gbls itself: said once, not on every analysis
            if note not in self._said_notes:
                self._said_notes.add(note)
                self.window_show_message(
                    lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=f"gbls: {note}")
                )

    async def analyse_document(self, uri: str) -> None:
        """Analyse, publish, and say it is done, whatever fails on the way (and log it)."""
        document = self.open_document(uri)
        if document is None:
            return
        version, source, path = document.version, document.source, self.path_of(uri)
        progress = await self._progress_begin(uri, os.path.basename(path))
        self._status(uri, "analysing")
        started = time.monotonic()
        try:
            report = await self.session.analyse(uri, path, source)
        except WorkerError as error:
            report = failure_report(path, "worker", str(error))
        except Exception as error:  # a bug in gbls: say so, with the traceback in the log
            report = self._internal_failure(path, error)
        finally:
            self._progress_end(progress)
        current = self.open_document(uri)
        if current is None or current.version != version:
            return  # a newer version is on its way; this result belongs to none that exists
        try:
            self._record(uri, Analysed(version, source, report))
        except Exception as error:
            self._record(uri, Analysed(version, source, self._internal_failure(path, error)))
            return
        line = analysis_line(
            os.path.relpath(path, self.session.folder_of(path)), time.monotonic() - started, report
        )
        self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=line))
        if report.failure_kind == "worker":  # warm a fresh worker now, not when the next edit waits for it
            self.in_background(self.warm())
        try:
            await self.session.remember(uri, path, source, report)
        except Exception:
            log.exception("gbls failed to remember the analysis of %s", path)

    @staticmethod
    def _internal_failure(path: str, error: Exception) -> FileReport:
        log.exception("gbls failed while analysing %s", path)
        return failure_report(path, "internal", f"gbls itself failed ({type(error).__name__}: {error})")

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
                "reused": self.session.reused(uri),
                "message": report.message,
            }
        self.protocol.notify(STATUS, status)

    def refresh_lenses(self) -> None:
        """Ask the client for the code lenses again: they show the last analysis, and clients ask for
        them on open and edit only, before the analysis is done."""
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)  # the answer says nothing: not awaited

    # -- publishing ---------------------------------------------------------------------------

    def publish_around(self, uri: str, old: FileReport | None, new: FileReport | None) -> None:
        """Publish ``uri`` and every open document holding a root cause of its old or new breaks."""
        roots = {brk.root.path for report in (old, new) if report for brk in report.breaks}
        targets = {uri} | {uris.from_fs_path(path) or path for path in roots}
        for target in targets:
            if target == uri or self.open_document(target) is not None:
                self.publish(target)

    def publish(self, uri: str) -> None:
        sources = Sources(self.text_of)
        analysed = self.analysed(uri)
        diagnostics: list[lsp.Diagnostic] = []
        version = None
        if analysed is not None:
            version = analysed.version
            diagnostics += file_diagnostics(
                analysed.report, analysed.source, self.settings.severity, sources.lines
            )
        open_document = self.open_document(uri)
        if open_document is not None:
            path = self.path_of(uri)
            for _, other in self.session.analysed():
                diagnostics += root_cause_hints(other.report, path, sources.lines)
            if version is None:
                version = open_document.version
        self.send(uri, configured(diagnostics, self.settings), version)

    def send(self, uri: str, diagnostics: list[lsp.Diagnostic], version: int | None) -> None:
        """Publish ``diagnostics`` of the document ``uri``; a notebook's, each in its cell."""
        program = self.notebooks.program(uri)
        if program is None:
            self.text_document_publish_diagnostics(
                lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
            )
            return
        for cell, found in notebooks.in_cells(program, diagnostics).items():
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell, diagnostics=found))

    def forget(self, uri: str) -> None:
        self.scheduler.cancel(uri)
        analysed = self.session.forget(uri)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        if analysed is not None:
            self.publish_around(uri, analysed.report, None)

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
        replaced = settings.worker_key() != self.settings.worker_key()
        self.session.settings = settings
        if not settings.enable:
            self.scheduler.cancel_all()
            for uri, _ in list(self.session.analysed()):
                self.forget(uri)
            return
        if replaced or not was_enabled:
            self.in_background(self.warm())
        if not was_enabled:
            for uri in self.notebooks.documents():
                self.request(uri)


def create_server() -> GblsServer:
    """A gbls server with every feature registered, ready for ``start_io``."""
    server = GblsServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: GblsServer, params: lsp.InitializeParams) -> None:
        ls.workspace.__class__ = GblsWorkspace  # pygls made it just now, before any document opens
        ls.session.settings = ls.initial_settings = from_options(params.initialization_options)
        folders = [uris.to_fs_path(f.uri) for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [uris.to_fs_path(params.root_uri)]
        ls.session.folders = [os.path.abspath(f) for f in folders if f]

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: GblsServer, params: lsp.InitializedParams) -> None:
        await ls.pull_configuration()
        if ls.settings.enable:
            ls.in_background(ls.warm())  # before the first file is opened

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: GblsServer, params: lsp.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and params.settings:
            ls.apply_settings(from_options(params.settings, ls.initial_settings))
        await ls.pull_configuration()
        for uri in ls.notebooks.documents():
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

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: GblsServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        ls.request(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: GblsServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
        ls.request(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: GblsServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.notebooks.changed(uri)
        structure = params.change.cells.structure if params.change.cells else None
        for cell in structure.did_close or [] if structure else []:
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))
        if ls.settings.analyse_on_change:
            ls.request(uri, ls.settings.debounce_ms / 1000)
        else:
            ls.scheduler.cancel(uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: GblsServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.notebooks.closed(uri)
        ls.forget(uri)
        for cell in params.cell_text_documents:
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell.uri, diagnostics=[]))

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: GblsServer, params: lsp.HoverParams) -> lsp.Hover | None:
        uri, position = params.text_document.uri, params.position
        found = ls.notebooks.cell(uri)
        if found is not None:  # a notebook's cell: the notebook's analysis, at the line of its program
            uri, position = found[0].uri, found[0].to_program(found[1], position)
        analysed = ls.analysed(uri)
        if analysed is None:
            return None
        where = to_span(lsp.Range(position, position), split_lines(analysed.source))
        path = analysed.report.path
        markdown = hover_markdown(
            analysed.report, where.line, where.column, ls.where(path, links=True), ls.fix_of(path)
        )
        if markdown is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: GblsServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        found = ls.notebooks.cell(uri)
        key = found[0].uri if found else uri
        analysed = ls.analysed(key)
        every = lenses(analysed.report, key) if analysed else []
        return notebooks.cell_lenses(found[0], found[1], every) if found else every

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    def code_action(ls: GblsServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
        found_cell = ls.notebooks.cell(params.text_document.uri)
        path = ls.path_of(ls.notebooks.key_of(params.text_document.uri))
        range_ = params.range
        if found_cell is not None:  # a notebook's cell: the actions of its program, moved into the cell
            program, cell = found_cell
            range_ = lsp.Range(program.to_program(cell, range_.start), program.to_program(cell, range_.end))
        sources = Sources(ls.text_of)
        workspace = ls.client_capabilities.workspace
        edits = workspace.workspace_edit if workspace else None
        found = requested_actions(
            path,
            params.context,
            to_span(range_, sources.lines(path)),
            sources,
            ls.report_of,
            lambda: [analysed.report for _, analysed in ls.session.analysed()],
            ls.session.folders,
            snippets=bool(edits and edits.snippet_edit_support),
        )
        return notebooks.cell_actions(*found_cell, found) if found_cell else found

    @server.command(ANALYSE_FILE)
    def analyse_file(ls: GblsServer, uri: str) -> None:
        ls.request(ls.notebooks.key_of(uri), fresh=True)

    @server.command(SHOW_REPORT)
    def show_report(ls: GblsServer, *arguments: Any) -> str:
        """Arguments: the document's URI, and optionally one function's qualname."""
        analysed = ls.analysed(ls.notebooks.key_of(str(arguments[0]))) if arguments else None
        if analysed is None:
            return "gbls has not analysed this file yet."
        path = analysed.report.path
        qualname = str(arguments[1]) if len(arguments) > 1 else None
        # Plain text places: VS Code shows the report in its markdown preview, which drops file: links.
        return function_report(analysed.report, qualname, ls.where(path, links=False), ls.fix_of(path))

    @server.command(SHOW_LOCATION)
    async def show_location(ls: GblsServer, uri: str, selection: lsp.Range) -> None:
        await ls.window_show_document_async(
            lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
        )

    @server.command(RESTART_WORKER)
    async def restart_worker(ls: GblsServer) -> None:
        await ls.restart_worker()

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: GblsServer, params: None) -> None:
        await ls.stop()

    return server


def serve() -> None:
    # What the user should see goes through window/logMessage; stderr is for problems only
    # (clients show it as errors), so pygls's per-message chatter stays off.
    logging.basicConfig(level=logging.WARNING, format="gbls: %(message)s")
    not_dumpable()
    create_server().start_io()
