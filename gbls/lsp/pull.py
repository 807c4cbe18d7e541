"""Pull diagnostics (LSP 3.17): ``textDocument/diagnostic`` for a document (a notebook's cell too),
``workspace/diagnostic`` for every file an analysis or an imported trace reached, open or not.

The diagnostics are the ones a push publishes (``Publishing.diagnostics_of``), beside the push that
older clients get. A client that pulls is pushed nothing from its first pull on (what was pushed to
it before is cleared: it would show twice), and is asked to pull again
(``workspace/diagnostic/refresh``) once per burst of publications. A client that cannot be asked
(Neovim 0.11 pulls when a buffer opens or changes, and has no refresh) keeps the push: an analysis
ends after the pull that started it, and the client would not see it until the next edit. Its pulls
get nothing, so that nothing shows twice.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import TYPE_CHECKING

from lsprotocol import converters
from lsprotocol import types as lsp

from . import notebooks

if TYPE_CHECKING:
    from .features import GblsServer

_converter = converters.get_converter()


class Pulling:
    """Whether the client pulls its diagnostics, and which documents were pushed some before it did."""

    def __init__(self) -> None:
        self.pulling = False
        self.pushed: set[str] = set()
        self._refresh: asyncio.Handle | None = None

    def started(self, ls: GblsServer) -> bool:
        """The client pulled: push no more, and clear what was pushed, where the client can be asked
        to pull again. Whether it is served by its pulls."""
        if self.pulling:
            return True
        if not ls.capabilities.diagnostic_refresh:
            return False
        self.pulling = True
        for uri in sorted(self.pushed):
            ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        self.pushed.clear()
        return True

    def changed(self, ls: GblsServer) -> None:
        """A publication changed what a pull gets: one refresh for the burst, where the client has it."""
        if self._refresh is not None or not ls.capabilities.diagnostic_refresh:
            return

        def send() -> None:
            self._refresh = None
            ls.workspace_diagnostic_refresh(None)  # the answer says nothing: not awaited

        self._refresh = asyncio.get_running_loop().call_soon(send)


def _result_id(diagnostics: list[lsp.Diagnostic]) -> str:
    text = json.dumps(_converter.unstructure(diagnostics), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def document_diagnostics(ls: GblsServer, uri: str) -> list[lsp.Diagnostic]:
    """What a push would publish for ``uri``: a notebook cell's, its program's in that cell."""
    found = ls.notebooks.cell(uri)
    if found is None:
        return ls.publishing.diagnostics_of(uri)[0]
    program = found[0]
    return notebooks.in_cells(program, ls.publishing.diagnostics_of(program.uri)[0]).get(uri, [])


def document_report(ls: GblsServer, params: lsp.DocumentDiagnosticParams) -> lsp.DocumentDiagnosticReport:
    diagnostics = document_diagnostics(ls, params.text_document.uri) if ls.pull.started(ls) else []
    result = _result_id(diagnostics)
    if params.previous_result_id == result:
        return lsp.RelatedUnchangedDocumentDiagnosticReport(result_id=result)
    return lsp.RelatedFullDocumentDiagnosticReport(items=diagnostics, result_id=result)


def workspace_report(ls: GblsServer, params: lsp.WorkspaceDiagnosticParams) -> lsp.WorkspaceDiagnosticReport:
    """Every file an analysis or a trace reached, open or not, with what a push would publish for it."""
    previous = {item.uri: item.value for item in params.previous_result_ids}
    items: list[lsp.WorkspaceDocumentDiagnosticReport] = []
    for path in ls.session.viewed() if ls.pull.started(ls) else ():
        uri = ls.documents.uri_of(path)
        diagnostics, version = ls.publishing.diagnostics_of(uri)
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
