"""What the server tells the client after each analysis, besides diagnostics: that its code lenses
are stale (``workspace/codeLens/refresh``), and a line in the log."""

from __future__ import annotations

import asyncio
import re

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import LENS_REFRESHES, close, diagnostics_for, open_and_wait, until, uri_of
from ..support.measured import unmeasured

ENGINE = FIXTURES / "engine"


async def lens_titles(client: LanguageClient, uri: str) -> list[str]:
    found = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    return [unmeasured(lens.command.title) for lens in found or [] if lens.command]


async def test_code_lenses_are_refreshed_after_every_analysis(client: LanguageClient) -> None:
    path = ENGINE / "print_body.py"
    uri = uri_of(path)
    before = len(LENS_REFRESHES)
    await open_and_wait(client, path)
    await until(lambda: len(LENS_REFRESHES) > before)
    assert (await lens_titles(client, uri))[0].startswith("gbls: 2 graphs · 1 break")

    # The print removed: the lens the client asks for on the refresh has the new analysis.
    before = len(LENS_REFRESHES)
    waiting = asyncio.ensure_future(diagnostics_for(client, uri))
    text = path.read_text().replace('    print("scaling", y.shape)\n', "")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    assert await waiting == []
    await until(lambda: len(LENS_REFRESHES) > before)
    assert await lens_titles(client, uri) == ["gbls: fullgraph-clean · 1 graph"]
    await close(client, path)


def analyses_logged(client: LanguageClient, seen: int) -> list[str]:
    """The log's lines about analyses, after the first ``seen`` messages."""
    return [m.message for m in client.log_messages[seen:] if m.message.startswith("analysed ")]


async def test_each_analysis_is_a_line_in_the_log(client: LanguageClient) -> None:
    seen = len(client.log_messages)
    await open_and_wait(client, ENGINE / "explicit_break.py")
    (line,) = await until(lambda: analyses_logged(client, seen))
    assert re.fullmatch(
        r"analysed engine/explicit_break\.py in \d+\.\d s: 1 graph break, 0 recompilations", line
    ), line
    assert [m.type for m in client.log_messages[seen:] if m.message == line] == [lsp.MessageType.Info]
    await close(client, ENGINE / "explicit_break.py")


async def test_the_log_line_says_where_the_analysis_stopped(client: LanguageClient) -> None:
    seen = len(client.log_messages)
    await open_and_wait(client, FIXTURES / "lsp" / "broken.py")
    (line,) = await until(lambda: analyses_logged(client, seen))
    assert re.fullmatch(
        r"analysed lsp/broken\.py in \d+\.\d s: 0 graph breaks, 0 recompilations; stopped: .*", line
    )
    assert "SyntaxError" in line
    await close(client, FIXTURES / "lsp" / "broken.py")
