"""Pull diagnostics (LSP 3.17): ``textDocument/diagnostic`` for a document (a notebook's cell too),
``workspace/diagnostic`` for every file an analysis or an imported trace reached, open or not.

The diagnostics are the ones a push publishes (``Server.diagnostics_of``), beside the push that
older clients get. A client that pulls is pushed nothing from its first pull on (what was pushed to
it before is cleared: it would show twice), and is asked to pull again
(``workspace/diagnostic/refresh``) once per burst of publications, where it supports that.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Protocol

from lsprotocol import converters
from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from ..runtime.session import Session
from . import notebooks

_converter = converters.get_converter()


class Server(Protocol):
    """What the pulls need of the server (``analyses.Server``)."""

    session: Session
    notebooks: notebooks.Notebooks
    pull: Pulling

    def diagnostics_of(self, uri: str) -> tuple[list[lsp.Diagnostic], int | None]: ...

    def uri_of(self, path: str) -> str: ...

    def text_document_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None: ...


class Pulling:
    """Whether the client pulls its diagnostics, and which documents were pushed some before it did."""

    def __init__(self) -> None:
        self.pulling = False
        self.pushed: set[str] = set()
        self._refresh: asyncio.Handle | None = None

    def started(self, ls: Server) -> None:
        """The client pulled: push no more, and clear what was pushed."""
        if self.pulling:
            return
        self.pulling = True
        for uri in sorted(self.pushed):
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self.pushed.clear()

    def changed(self, ls: LanguageServer) -> None:
        """A publication changed what a pull gets: one refresh for the burst, where the client has it."""
        workspace = ls.client_capabilities.workspace
        refresh = workspace.diagnostics if workspace else None
        if self._refresh is not None or not (refresh and refresh.refresh_support):
            return

        def send() -> None:
            self._refresh = None
            ls.workspace_diagnostic_refresh(None)  # the answer says nothing: not awaited

        self._refresh = asyncio.get_running_loop().call_soon(send)


def _result_id(diagnostics: list[lsp.Diagnostic]) -> str:
    text = json.dumps(_converter.unstructure(diagnostics), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def document_diagnostics(ls: Server, uri: str) -> list[lsp.Diagnostic]:
    """What a push would publish for ``uri``: a notebook cell's, its program's in that cell."""
    found = ls.notebooks.cell(uri)
    if found is None:
        return ls.diagnostics_of(uri)[0]
    program = found[0]
    return notebooks.in_cells(program, ls.diagnostics_of(program.uri)[0]).get(uri, [])


def document_report(ls: Server, params: lsp.DocumentDiagnosticParams) -> lsp.DocumentDiagnosticReport:
    ls.pull.started(ls)
    diagnostics = document_diagnostics(ls, params.text_document.uri)
    result = _result_id(diagnostics)
    if params.previous_result_id == result:
        return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result)
    return lsp.RelatedFullDocumentDiagnosticReport(items=diagnostics, result_id=result)


def workspace_report(ls: Server, params: lsp.WorkspaceDiagnosticParams) -> lsp.WorkspaceDiagnosticReport:
    """Every file an analysis or a trace reached, open or not, with what a push would publish for it."""
    ls.pull.started(ls)
    previous = {item.uri: item.value for item in params.previous_result_ids}
    items: list[lsp.WorkspaceDocumentDiagnosticReport] = []
    for path in ls.session.viewed():
        uri = ls.uri_of(path)
        diagnostics, version = ls.diagnostics_of(uri)
        result = _result_id(diagnostics)
        if previous.get(uri) == result:
            items.append(
                lsp.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, result_id=result, version=version)
            )
        else:
            items.append(
                lsp.WorkspaceFullDocumentDiagnosticReport(
                    uri=uri, items=diagnostics, version=version, result_id=result
                )
            )
    return lsp.WorkspaceDiagnosticReport(items=items)
