"""pygls's protocol and workspace as gbls needs them: a request whose parameters do not fit LSP is
answered with an error, and a document's lines end where Python's do."""

from __future__ import annotations

from typing import Any

from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument, Workspace

from ..worker.shared.lines import split_lines

_ANSWERED = object()  # a request already answered with an error while it was read


class GblsProtocol(LanguageServerProtocol):
    """Answers a request whose parameters do not fit LSP (a position of -1, or past 2**31 - 1) with
    an error: pygls would log it and drop it, and the client would wait for good."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "jsonrpc" in data and "id" in data and "method" in data:
                self._send_response(data["id"], error=error.to_response_error())
                return _ANSWERED
            raise

    def handle_message(self, message: Any) -> None:
        if message is not _ANSWERED:
            super().handle_message(message)


class PythonLines(TextDocument):
    """A document whose lines end where Python's and LSP's do ("\r\n", "\r", "\n"): pygls splits
    at U+2028 and form feeds too, and would apply an edit below one to the wrong line."""

    @property
    def lines(self) -> tuple[str, ...]:
        return tuple(split_lines(self.source, keepends=True))


class GblsWorkspace(Workspace):
    def _create_text_document(
        self,
        doc_uri: str,
        source: str | None = None,
        version: int | None = None,
        language_id: str | None = None,
    ) -> TextDocument:
        return PythonLines(
            doc_uri,
            source=source,
            version=version,
            language_id=language_id,
            sync_kind=self._sync_kind,
            position_codec=self._position_codec,
        )
