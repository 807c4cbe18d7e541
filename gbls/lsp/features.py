"""The gbls language server: registers the LSP features and delegates each to a plain function.

The process never imports torch. What runs when, and where its results show, is ``analyses``'s
concern; each feature is a plain function of the file's view (``diagnostics``, ``hover``,
``codelens``, ``actions``).
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from .. import doctor
from ..engine.sources import Sources
from ..runtime.sandbox import not_dumpable
from ..settings import from_options
from ..worker.shared.lines import split_lines
from . import inlays, notebooks, pull, suppressions, traces
from .actions import FIX_ALL, SHOW_LOCATION, requested_actions
from .analyses import GblsServer
from .codelens import SHOW_REPORT, lenses
from .diagnostics import to_span
from .documents import GblsWorkspace
from .hover import function_report, hover_markdown

log = logging.getLogger(__name__)

ANALYSE_FILE = "gbls.analyseFile"
RESTART_WORKER = "gbls.restartWorker"
CACHED = "*From gbls's cache of an earlier analysis: the file is being analysed again.*"
IMPORT_TRACE = "gbls.importTrace"
DOCTOR = "gbls.doctor"


def run_file(path: str) -> str:
    """The workspace folder's own path for a file that configures its runs: ``.vscode/launch.json``
    configures the folder above ``.vscode``."""
    folder = os.path.dirname(path)
    return folder if os.path.basename(folder) == ".vscode" else path


def create_server() -> GblsServer:
    """A gbls server with every feature registered, ready for ``start_io``."""
    server = GblsServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: GblsServer, params: lsp.InitializeParams) -> None:
        ls.workspace.__class__ = GblsWorkspace  # pygls made it just now, before any document opens
        folders = [uris.to_fs_path(f.uri) for f in params.workspace_folders or []]
        if not folders and params.root_uri:
            folders = [uris.to_fs_path(params.root_uri)]
        ls.begin(from_options(params.initialization_options), [f for f in folders if f])

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: GblsServer, params: lsp.InitializedParams) -> None:
        await ls.pull_configuration()
        if ls.settings.enable:
            ls.in_background(ls.warm())  # before the first file is opened
        ls.in_background(ls.import_configured())
        ls.in_background(ls.watch_runs())

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: GblsServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        changed = {uris.to_fs_path(change.uri) or change.uri for change in params.changes}
        for folder in dict.fromkeys(ls.session.folder_of(run_file(path)) for path in changed):
            ls.reconfigured(folder)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: GblsServer, params: lsp.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and params.settings:
            ls.apply_settings(from_options(params.settings, ls.initial_settings))
        await ls.pull_configuration()
        ls.in_background(ls.import_configured())
        for uri in ls.notebooks.documents():
            ls.request(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GblsServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.request(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GblsServer, params: lsp.DidSaveTextDocumentParams) -> None:
        ls.saved(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GblsServer, params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.changed(uri)
        ls.edited(uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GblsServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.closed(params.text_document.uri)

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
        ls.edited(uri)

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
        seen = ls.view_of(uri)
        if seen is None:
            return None
        view, source, _ = seen
        where = to_span(lsp.Range(position, position), split_lines(source))
        path = view.path
        elsewhere = tuple(function for function, _ in ls.compiled_elsewhere(view))
        markdown = suppressions.hover(view, source, ls.session, where.line, where.column) or hover_markdown(
            view, where.line, where.column, ls.where(path, links=True), ls.fix_of(path), elsewhere
        )
        if markdown is None:
            return None
        if ls.cached(uri):
            markdown += f"\n\n---\n{CACHED}"
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        lsp.DiagnosticOptions(identifier="gbls", inter_file_dependencies=True, workspace_diagnostics=True),
    )
    def document_diagnostic(
        ls: GblsServer, params: lsp.DocumentDiagnosticParams
    ) -> lsp.DocumentDiagnosticReport:
        return pull.document_report(ls, params)

    @server.feature(lsp.WORKSPACE_DIAGNOSTIC)
    def workspace_diagnostic(
        ls: GblsServer, params: lsp.WorkspaceDiagnosticParams
    ) -> lsp.WorkspaceDiagnosticReport:
        return pull.workspace_report(ls, params)

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
    def inlay_hint(ls: GblsServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        ls.inlays.asking = True
        uri = params.text_document.uri
        seen = ls.view_of(uri)
        if seen is None or not ls.settings.inlay_hints or ls.notebooks.cell(uri) is not None:
            return []
        return inlays.inlay_hints(seen[0], seen[1], ls.session, params.range)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: GblsServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        found = ls.notebooks.cell(uri)
        key = found[0].uri if found else uri
        seen = ls.view_of(key)
        every = lenses(seen[0], key) if seen else []
        return notebooks.cell_lenses(found[0], found[1], every) if found else every

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    )
    async def code_action(ls: GblsServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
        await ls.proven.settled()  # only proven fixes are offered: those of the last analyses
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
            ls.reports,
            ls.session.folders,
            snippets=bool(edits and edits.snippet_edit_support),
            keep=lambda fix, brk, analysed: ls.proven.holds(fix, brk, sources),
            keep_recompile=lambda fix, found: ls.proven.holds_recompile(fix, found, sources),
            analysed_of=ls.analysed_of,
            is_open=lambda edited: ls.open_document(ls.uri_of(edited)) is not None,
            annotations=bool(edits and edits.change_annotation_support),
        )
        if found_cell is not None:
            return notebooks.cell_actions(*found_cell, found)
        for diagnostic in params.context.diagnostics:
            found += suppressions.actions(path, sources.text(path), diagnostic, params.text_document.uri)
        return found

    @server.command(ANALYSE_FILE)
    def analyse_file(ls: GblsServer, uri: str) -> None:
        ls.request(ls.notebooks.key_of(uri), fresh=True)

    @server.command(SHOW_REPORT)
    def show_report(ls: GblsServer, *arguments: Any) -> str:
        """Arguments: the document's URI, and optionally one function's qualname."""
        seen = ls.view_of(ls.notebooks.key_of(str(arguments[0]))) if arguments else None
        if seen is None:
            return "gbls has not analysed this file yet."
        path = seen[0].path
        qualname = str(arguments[1]) if len(arguments) > 1 else None
        # Plain text places: VS Code shows the report in its markdown preview, which drops file: links.
        where, fix_of = ls.where(path, links=False), ls.fix_of(path)
        return function_report(seen[0], qualname, where, fix_of, ls.compiled_elsewhere(seen[0]))

    @server.command(SHOW_LOCATION)
    async def show_location(ls: GblsServer, uri: str, selection: lsp.Range) -> None:
        await ls.window_show_document_async(
            lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection)
        )

    @server.command(IMPORT_TRACE)
    async def import_trace(ls: GblsServer, path: str) -> str:
        """A real run's TORCH_TRACE folder or file, or TORCH_LOGS log (a path, relative to the
        workspace, or a file URI): its findings shown; what the reading found said back."""
        return await ls.import_trace(traces.path_of(path, ls.session.folders), commanded=True)

    @server.command(RESTART_WORKER)
    async def restart_worker(ls: GblsServer) -> None:
        await ls.restart_worker()

    @server.command(DOCTOR)
    async def doctor_command(ls: GblsServer) -> str:
        """What `gbls doctor` says of this server's folder, its interpreter and its cache."""
        folder = ls.session.folders[0] if ls.session.folders else os.getcwd()
        # The server's cache is GBLS_CACHE_DIR, else the folder's own: no option names it.
        text, _ = await asyncio.to_thread(doctor.report, ls.session.settings.interpreter, "", folder)
        return text

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(ls: GblsServer, params: None) -> None:
        await ls.stop()

    return server


def serve() -> None:
    # What the user should see goes through window/logMessage; stderr is for problems only
    # (clients show it as errors), so pygls's per-message chatter stays off.
    logging.basicConfig(level=logging.WARNING, format="gbls: %(message)s")
    # A cancel that arrives after its request was answered (the user moved on from a hover) is
    # ordinary LSP traffic, which pygls warns about: on stderr a client shows it as an error.
    logging.getLogger("pygls.protocol.json_rpc").addFilter(
        lambda record: not record.getMessage().startswith("Cancel notification for unknown message id")
    )
    not_dumpable()
    create_server().start_io()
