"""The gbls language server: one thin handler per LSP method and command, each resolving its
document once (``Snapshot``) and handing it to the feature that owns the work (``features``)."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from .. import doctor
from ..engine.model import FileReport, FileView, FunctionReport
from ..engine.sources import Sources
from ..runtime.sandbox import not_dumpable
from ..settings import from_options
from ..worker.shared.lines import split_lines
from . import configuration, inlays, notebooks, pull, suppressions, traces
from .actions import FIX_ALL, SHOW_LOCATION, requested_actions
from .capabilities import Capabilities
from .codelens import SHOW_REPORT, lenses
from .diagnostics import to_span
from .documents import GblsWorkspace
from .features import GblsServer
from .hover import function_report, hover_markdown
from .markdown import Where

ANALYSE_FILE = "gbls.analyseFile"
RESTART_WORKER = "gbls.restartWorker"
CACHED = "*From gbls's cache of an earlier analysis: the file is being analysed again.*"
IMPORT_TRACE = "gbls.importTrace"
DOCTOR = "gbls.doctor"


def initialize(ls: GblsServer, params: lsp.InitializeParams) -> None:
    ls.workspace.__class__ = GblsWorkspace  # pygls made it just now, before any document opens
    folders = [uris.to_fs_path(f.uri) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [uris.to_fs_path(params.root_uri)]
    settings = from_options(params.initialization_options)
    ls.begin(settings, [f for f in folders if f], Capabilities.of(params.capabilities))


async def initialized(ls: GblsServer, params: lsp.InitializedParams) -> None:
    await configuration.pull(ls)
    if ls.settings.enable:
        ls.in_background(ls.warm())  # before the first file is opened
    ls.in_background(ls.traces.import_named())
    ls.in_background(ls.reaching.watch())


def run_file(path: str) -> str:
    """The workspace folder's own path for a file that configures its runs: ``.vscode/launch.json``
    configures the folder above ``.vscode``."""
    folder = os.path.dirname(path)
    return folder if os.path.basename(folder) == ".vscode" else path


def did_change_watched_files(ls: GblsServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    changed = {uris.to_fs_path(change.uri) or change.uri for change in params.changes}
    for folder in dict.fromkeys(ls.session.folder_of(run_file(path)) for path in changed):
        ls.reaching.reconfigured(folder)


async def did_change_configuration(ls: GblsServer, params: lsp.DidChangeConfigurationParams) -> None:
    if isinstance(params.settings, dict) and params.settings:
        configuration.apply(ls, from_options(params.settings, ls.initial_settings))
    await configuration.pull(ls)
    ls.in_background(ls.traces.import_named())
    for uri in ls.notebooks.documents():
        ls.analyses.request(ls.documents.snapshot(uri))


def did_open(ls: GblsServer, params: lsp.DidOpenTextDocumentParams) -> None:
    ls.analyses.request(ls.documents.snapshot(params.text_document.uri))


def did_save(ls: GblsServer, params: lsp.DidSaveTextDocumentParams) -> None:
    ls.analyses.saved(ls.documents.snapshot(params.text_document.uri))


def did_change(ls: GblsServer, params: lsp.DidChangeTextDocumentParams) -> None:
    snapshot = ls.documents.snapshot(params.text_document.uri)
    ls.traces.changed(snapshot)
    ls.analyses.edited(snapshot)


def did_close(ls: GblsServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.analyses.closed(ls.documents.snapshot(params.text_document.uri))


def notebook_did_open(ls: GblsServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
    ls.analyses.request(ls.documents.snapshot(params.notebook_document.uri))


def notebook_did_save(ls: GblsServer, params: lsp.DidSaveNotebookDocumentParams) -> None:
    ls.analyses.request(ls.documents.snapshot(params.notebook_document.uri))


def notebook_did_change(ls: GblsServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.notebooks.changed(uri)
    structure = params.change.cells.structure if params.change.cells else None
    for cell in structure.did_close or [] if structure else []:
        ls.publishing.clear(cell.uri)
    ls.analyses.edited(ls.documents.snapshot(uri))


def notebook_did_close(ls: GblsServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    ls.notebooks.closed(uri)
    ls.analyses.forget(ls.documents.snapshot(uri).key)
    for cell in params.cell_text_documents:
        ls.publishing.clear(cell.uri)


def where(ls: GblsServer, path: str, links: bool) -> Where:
    """How hovers and reports name places for the file ``path``."""
    sources = Sources(ls.documents.text_of)
    return Where(path, ls.session.folder_of(path), links, ls.notebooks.cell_line, sources.qualname)


def compiled_elsewhere(ls: GblsServer, view: FileView) -> tuple[tuple[FunctionReport, FileReport], ...]:
    """The functions compiled in other files whose code or breaks are in the file of ``view`` (a
    model compiled in ``train.py``), each with the analysis that ran it: the file's report tells
    them, clean ones too."""
    wanted = {brk.function for brk in view.breaks}
    found: dict[str, tuple[FunctionReport, FileReport]] = {}
    for _, analysed in ls.session.results():
        for function in analysed.report.functions:
            name = function.qualname
            if name in found or any(f.qualname == name for f in view.functions):
                continue
            breaks_here = name in wanted and any(b.path == view.path for b in analysed.report.breaks_of(name))
            code = {function.code_path, *(reached.path for reached in function.reached)}
            if breaks_here or (function.analysed and view.path in code):
                found[name] = (function, analysed.report)
    return tuple(found.values())


def hover(ls: GblsServer, params: lsp.HoverParams) -> lsp.Hover | None:
    uri, position = params.text_document.uri, params.position
    found = ls.notebooks.cell(uri)
    if found is not None:  # a notebook's cell: the notebook's analysis, at the line of its program
        uri, position = found[0].uri, found[0].to_program(found[1], position)
    snapshot = ls.documents.snapshot(uri)
    view, source = snapshot.shown.view, snapshot.shown.text
    if view is None:
        return None
    at = to_span(lsp.Range(position, position), split_lines(source))
    elsewhere = tuple(function for function, _ in compiled_elsewhere(ls, view))
    fix_of = ls.fixes.fix_of(view.path, ls.documents.text_of)
    markdown = suppressions.hover(view, source, ls.session, at.line, at.column) or hover_markdown(
        view, at.line, at.column, where(ls, view.path, links=True), fix_of, elsewhere
    )
    if markdown is None:
        return None
    if snapshot.shown.cached:
        markdown += f"\n\n---\n{CACHED}"
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=markdown))


def document_diagnostic(ls: GblsServer, params: lsp.DocumentDiagnosticParams) -> lsp.DocumentDiagnosticReport:
    return pull.document_report(ls, params)


def workspace_diagnostic(
    ls: GblsServer, params: lsp.WorkspaceDiagnosticParams
) -> lsp.WorkspaceDiagnosticReport:
    return pull.workspace_report(ls, params)


def inlay_hint(ls: GblsServer, params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
    ls.inlays.asking = True
    uri = params.text_document.uri
    snapshot = ls.documents.snapshot(uri)
    if snapshot.shown.view is None or not ls.settings.inlay_hints or ls.notebooks.cell(uri) is not None:
        return []
    return inlays.inlay_hints(snapshot.shown.view, snapshot.shown.text, ls.session, params.range)


def code_lens(ls: GblsServer, params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
    uri = params.text_document.uri
    found = ls.notebooks.cell(uri)
    key = found[0].uri if found else uri
    view = ls.documents.snapshot(key).shown.view
    every = lenses(view, key) if view else []
    return notebooks.cell_lenses(found[0], found[1], every) if found else every


async def code_action(ls: GblsServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction | lsp.Command]:
    await ls.fixes.settled()  # only proven fixes are offered: those of the last analyses
    found_cell = ls.notebooks.cell(params.text_document.uri)
    path = ls.documents.path_of(ls.notebooks.key_of(params.text_document.uri))
    range_ = params.range
    if found_cell is not None:  # a notebook's cell: the actions of its program, moved into the cell
        program, cell = found_cell
        range_ = lsp.Range(program.to_program(cell, range_.start), program.to_program(cell, range_.end))
    sources = Sources(ls.documents.text_of)
    found = requested_actions(
        path,
        params.context,
        to_span(range_, sources.lines(path)),
        sources,
        ls.session.view,
        ls.fixes.reports,
        ls.session.folders,
        snippets=ls.capabilities.snippet_edits,
        keep=lambda fix, brk, analysed: ls.fixes.holds(fix, brk, sources),
        keep_recompile=lambda fix, found: ls.fixes.holds_recompile(fix, found, sources),
        analysed_of=ls.fixes.analysed_of,
        is_open=lambda edited: ls.documents.open_document(ls.documents.uri_of(edited)) is not None,
        annotations=ls.capabilities.change_annotations,
    )
    if found_cell is not None:
        return notebooks.cell_actions(*found_cell, found)
    for diagnostic in params.context.diagnostics:
        found += suppressions.actions(path, sources.text(path), diagnostic, params.text_document.uri)
    return found


def analyse_file(ls: GblsServer, uri: str) -> None:
    ls.analyses.request(ls.documents.snapshot(ls.notebooks.key_of(uri)), fresh=True)


def show_report(ls: GblsServer, *arguments: Any) -> str:
    """Arguments: the document's URI, and optionally one function's qualname."""
    view = ls.documents.snapshot(ls.notebooks.key_of(str(arguments[0]))).shown.view if arguments else None
    if view is None:
        return "gbls has not analysed this file yet."
    qualname = str(arguments[1]) if len(arguments) > 1 else None
    # Plain text places: VS Code shows the report in its markdown preview, which drops file: links.
    fix_of = ls.fixes.fix_of(view.path, ls.documents.text_of)
    return function_report(
        view, qualname, where(ls, view.path, links=False), fix_of, compiled_elsewhere(ls, view)
    )


async def show_location(ls: GblsServer, uri: str, selection: lsp.Range) -> None:
    await ls.window_show_document_async(lsp.ShowDocumentParams(uri=uri, take_focus=True, selection=selection))


async def import_trace(ls: GblsServer, path: str) -> str:
    """A real run's TORCH_TRACE folder or file, or TORCH_LOGS log (a path, relative to the
    workspace, or a file URI): its findings shown; what the reading found said back."""
    return await ls.traces.import_trace(traces.path_of(path, ls.session.folders), commanded=True)


async def restart_worker(ls: GblsServer) -> None:
    await ls.restart_worker()


async def doctor_command(ls: GblsServer) -> str:
    """What `gbls doctor` says of this server's folder, its interpreter and its cache."""
    folder = ls.session.folders[0] if ls.session.folders else os.getcwd()
    # The server's cache is GBLS_CACHE_DIR, else the folder's own: no option names it.
    text, _ = await asyncio.to_thread(doctor.report, ls.session.settings.interpreter, "", folder)
    return text


async def shutdown(ls: GblsServer, params: None) -> None:
    await ls.stop()


FEATURES: list[tuple[str, Callable[..., Any], Any]] = [
    (lsp.INITIALIZE, initialize, None),
    (lsp.INITIALIZED, initialized, None),
    (lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, did_change_watched_files, None),
    (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, did_change_configuration, None),
    (lsp.TEXT_DOCUMENT_DID_OPEN, did_open, None),
    (lsp.TEXT_DOCUMENT_DID_SAVE, did_save, None),
    (lsp.TEXT_DOCUMENT_DID_CHANGE, did_change, None),
    (lsp.TEXT_DOCUMENT_DID_CLOSE, did_close, None),
    (lsp.NOTEBOOK_DOCUMENT_DID_OPEN, notebook_did_open, None),
    (lsp.NOTEBOOK_DOCUMENT_DID_SAVE, notebook_did_save, None),
    (lsp.NOTEBOOK_DOCUMENT_DID_CHANGE, notebook_did_change, None),
    (lsp.NOTEBOOK_DOCUMENT_DID_CLOSE, notebook_did_close, None),
    (lsp.TEXT_DOCUMENT_HOVER, hover, None),
    (
        lsp.TEXT_DOCUMENT_DIAGNOSTIC,
        document_diagnostic,
        lsp.DiagnosticOptions(identifier="gbls", inter_file_dependencies=True, workspace_diagnostics=True),
    ),
    (lsp.WORKSPACE_DIAGNOSTIC, workspace_diagnostic, None),
    (lsp.TEXT_DOCUMENT_INLAY_HINT, inlay_hint, None),
    (lsp.TEXT_DOCUMENT_CODE_LENS, code_lens, None),
    (
        lsp.TEXT_DOCUMENT_CODE_ACTION,
        code_action,
        lsp.CodeActionOptions(
            code_action_kinds=[lsp.CodeActionKind.QuickFix, FIX_ALL], resolve_provider=False
        ),
    ),
    (lsp.SHUTDOWN, shutdown, None),
]
COMMANDS: list[tuple[str, Callable[..., Any]]] = [
    (ANALYSE_FILE, analyse_file),
    (SHOW_REPORT, show_report),
    (SHOW_LOCATION, show_location),
    (IMPORT_TRACE, import_trace),
    (RESTART_WORKER, restart_worker),
    (DOCTOR, doctor_command),
]


def create_server() -> GblsServer:
    """A gbls server with every feature registered, ready for ``start_io``."""
    server = GblsServer()
    for method, handler, options in FEATURES:
        server.feature(method, options)(handler)
    for name, command in COMMANDS:
        server.command(name)(command)
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
