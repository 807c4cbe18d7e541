"""Re-analysis after an edit translates only what the edit can change, and says what a full run says."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.engine.model import FileReport

from ..support import FIXTURES
from ..support.lsp import close, diagnostics_for, open_and_wait, uri_of
from ..support.worker import Analyse

THREE = FIXTURES / "incremental" / "three.py"
RECOMPILING = FIXTURES / "incremental" / "recompiling.py"


def summary(report: FileReport) -> list[tuple[object, ...]]:
    return [(b.function, b.code, b.span) for b in report.breaks]


def published(diagnostics: list[lsp.Diagnostic]) -> list[tuple[object, ...]]:
    return sorted(
        (d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
        for d in diagnostics
        if d.severity == lsp.DiagnosticSeverity.Warning
    )


def expected(report: FileReport) -> list[tuple[object, ...]]:
    return sorted(
        (b.code, b.span.line - 1, b.span.column, b.span.end_line - 1, b.span.end_column)
        for b in report.breaks
    )


async def edit(client: LanguageClient, path: Path, version: int, text: str) -> list[lsp.Diagnostic]:
    waiting = asyncio.ensure_future(diagnostics_for(client, uri_of(path)))
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri_of(path), version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text)],
        )
    )
    return await waiting


async def last_status(client: LanguageClient, path: Path) -> Any:
    """The ``gbls/status`` saying the next analysis of ``path`` is done (pygls gives unknown params as
    objects). The next one to start, not the next "done": the last analysis's "done" follows its
    diagnostics and may still be on its way here."""
    for state in ("analysing", "done"):
        status = await client.wait_for_notification("gbls/status")
        while status.uri != uri_of(path) or status.state != state:
            status = await client.wait_for_notification("gbls/status")
    return status


async def test_an_edit_in_one_function_translates_only_that_one(
    client: LanguageClient, analyse_file: Analyse
) -> None:
    text = THREE.read_text()
    await open_and_wait(client, THREE)
    # A break added to `third`, which also moves nothing above it.
    edited = text.replace("    z = x.cos()\n", "    z = x.cos()\n    torch._dynamo.graph_break()\n")
    status = asyncio.ensure_future(last_status(client, THREE))
    diagnostics = await edit(client, THREE, 2, edited)
    assert sorted((await status).reused) == ["first", "second"]
    full = await analyse_file(THREE, source=edited)
    assert published(diagnostics) == expected(full)
    assert sorted(str(c) for c, *_ in published(diagnostics)) == ["GB0025", "GB0036", "GB0059"]

    # Lines above `second` grow: `second` and `third` keep their results, moved down.
    moved = edited.replace('    print("first", y)\n', '    print("first", y)\n    y = y * 1\n    y = y - 0\n')
    status = asyncio.ensure_future(last_status(client, THREE))
    diagnostics = await edit(client, THREE, 3, moved)
    assert sorted((await status).reused) == ["second", "third"]
    assert published(diagnostics) == expected(await analyse_file(THREE, source=moved))

    # The helper `first` inlines changes: `first` is translated again, the others are kept.
    helper = moved.replace("    return x * 2\n", "    print('helping')\n    return x * 2\n")
    status = asyncio.ensure_future(last_status(client, THREE))
    diagnostics = await edit(client, THREE, 4, helper)
    assert sorted((await status).reused) == ["second", "third"]
    assert published(diagnostics) == expected(await analyse_file(THREE, source=helper))

    # A change at module level can change any input: everything is translated again.
    called = helper.replace("third(torch.randn(3))", "third(torch.randn(4, 4))")
    status = asyncio.ensure_future(last_status(client, THREE))
    diagnostics = await edit(client, THREE, 5, called)
    assert (await status).reused == []
    assert published(diagnostics) == expected(await analyse_file(THREE, source=called))
    await close(client, THREE)


def recompiles(diagnostics: list[lsp.Diagnostic]) -> list[tuple[str, int, int]]:
    return [
        (d.message, d.range.start.line, d.range.start.character) for d in diagnostics if d.code == "recompile"
    ]


async def test_recompilations_of_kept_functions_are_kept_and_moved(
    client: LanguageClient, analyse_file: Analyse
) -> None:
    text = RECOMPILING.read_text()
    first = recompiles(await open_and_wait(client, RECOMPILING))
    assert [(line, column) for _, line, column in first] == [(10, 7)]  # `mode == "a"`
    # Two lines more in `plain`: `pick` is not translated again, its recompilations move down.
    edited = text.replace("    return x.sin()\n", "    y = x.sin()\n    y = y * 1\n    return y\n")
    status = asyncio.ensure_future(last_status(client, RECOMPILING))
    moved = recompiles(await edit(client, RECOMPILING, 2, edited))
    assert (await status).reused == ["pick"]
    full = await analyse_file(RECOMPILING, source=edited)
    assert moved == [(p.message, p.span.line - 1, p.span.column) for p in full.problems]
    assert [(line, column) for _, line, column in moved] == [(12, 7)]
    # A blank line on top: the cached report, every line one down.
    blank = recompiles(await edit(client, RECOMPILING, 3, "\n" + edited))
    assert blank == [(message, line + 1, column) for message, line, column in moved]
    await close(client, RECOMPILING)
