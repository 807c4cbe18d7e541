"""The gbls language server: registers the LSP features and delegates each to a plain function.

The process never imports torch. What runs when, and where its results show, is ``analyses``'s
concern; each feature is a plain function of the file's view (``diagnostics``, ``hover``,
``codelens``, ``actions``).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from ..engine.sources import Sources
from ..runtime.sandbox import not_dumpable
from ..settings import from_options
from ..worker.shared.lines import split_lines
from . import traces
from .actions import SHOW_LOCATION, code_actions
from .analyses import GblsServer
from .codelens import SHOW_REPORT, lenses
from .diagnostics import to_span
from .documents import GblsWorkspace
from .hover import function_report, hover_markdown

log = logging.getLogger(__name__)

ANALYSE_FILE = "gbls.analyseFile"
RESTART_WORKER = "gbls.restartWorker"
IMPORT_TRACE = "gbls.importTrace"


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
        ls.in_background(ls.import_configured())

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: GblsServer, params: lsp.DidChangeConfigurationParams) -> None:
        if isinstance(params.settings, dict) and params.settings:
            ls.apply_settings(from_options(params.settings, ls.initial_settings))
        await ls.pull_configuration()
        ls.in_background(ls.import_configured())
        for uri in list(ls.workspace.text_documents):
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
        if ls.settings.analyse_on_change:
            ls.request(uri, ls.settings.debounce_ms / 1000)
        else:
            ls.scheduler.cancel(uri)  # a result for the old text would land on moved lines

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GblsServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: GblsServer, params: lsp.HoverParams) -> lsp.Hover | None:
        seen = ls.view_of(params.text_document.uri)
        if seen is None:
            return None
        view, source, _ = seen
        where = to_span(lsp.Range(params.position, params.position), split_lines(source))
        markdown = hover_markdown(view, where.line, where.column)
        if markdown is None:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS)
    def code_lens(ls: GblsServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        uri = params.text_document.uri
        seen = ls.view_of(uri)
        return lenses(seen[0], uri) if seen else []

    @server.feature(
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix], resolve_provider=False),
    )
    def code_action(ls: GblsServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
        path = ls.path_of(params.text_document.uri)
        sources = Sources(ls.text_of)
        selection = to_span(params.range, sources.lines(path))
        workspace = ls.client_capabilities.workspace
        edits = workspace.workspace_edit if workspace else None
        snippets = bool(edits and edits.snippet_edit_support)
        return code_actions(
            path,
            list(params.context.diagnostics),
            sources,
            ls.report_of,
            ls.session.folders,
            selection,
            snippets,
        )

    @server.command(ANALYSE_FILE)
    def analyse_file(ls: GblsServer, uri: str) -> None:
        ls.request(uri, fresh=True)

    @server.command(SHOW_REPORT)
    def show_report(ls: GblsServer, *arguments: Any) -> str:
        """Arguments: the document's URI, and optionally one function's qualname."""
        seen = ls.view_of(str(arguments[0])) if arguments else None
        if seen is None:
            return "gbls has not analysed this file yet."
        return function_report(seen[0], str(arguments[1]) if len(arguments) > 1 else None)

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
