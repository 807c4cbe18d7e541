"""Driving the real gbls server over LSP in tests: the shared client and small helpers."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import LanguageClient


class Recorder(dict[str, Any]):
    """The client's diagnostics dict, remembering every publication, not just the last."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[tuple[str, Any]] = []

    def __setitem__(self, uri: str, diagnostics: Any) -> None:
        self.history.append((uri, diagnostics))
        super().__setitem__(uri, diagnostics)


def uri_of(path: Path) -> str:
    return uris.from_fs_path(str(path)) or ""


async def open_and_wait(client: LanguageClient, path: Path, text: str | None = None) -> list[lsp.Diagnostic]:
    uri = uri_of(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text or path.read_text())
        )
    )
    return await diagnostics_for(client, uri)


async def diagnostics_for(client: LanguageClient, uri: str, timeout: float = 120) -> list[lsp.Diagnostic]:
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    async with asyncio.timeout(timeout):
        while True:
            for published_uri, diagnostics in recorder.history[seen:]:
                if published_uri == uri:
                    return list(diagnostics)
            await asyncio.sleep(0.05)


def close(client: LanguageClient, path: Path) -> None:
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri_of(path))))
