"""The persistent cache in the editor: a file opened in a new server shows the results an earlier
server kept, at once and marked cached, until the analysis that runs behind them replaces them."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import Recorder, initialized, server, until, uri_of


async def started(folder: Path, cache: Path) -> LanguageClient:
    """A fresh server on ``folder`` with the cache in ``cache``, recording diagnostics and statuses."""
    environment = {name: value for name, value in os.environ.items() if name != "GBLS_NO_CACHE"}
    client: Any = await server({**environment, "GBLS_CACHE_DIR": str(cache)}).start()
    settings = {"timeout": 60}
    return await initialized(client, {"project": folder}, settings, settings)


def opened(client: LanguageClient, path: Path) -> None:
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri_of(path), language_id="python", version=1, text=path.read_text())
        )
    )


def breaks(diagnostics: Sequence[lsp.Diagnostic]) -> list[tuple[int, int, str]]:
    return sorted((d.range.start.line, d.range.start.character, str(d.code)) for d in diagnostics)


def done(client: Any, uri: str) -> list[dict[str, Any]]:
    return [s for s in client.statuses if s["uri"] == uri and s["state"] == "done"]


@contextlib.asynccontextmanager
async def window(folder: Path, cache: Path) -> AsyncIterator[Any]:
    """A new editor window on ``folder``: a fresh server, shut down at the end."""
    client = await started(folder, cache)
    try:
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()  # type: ignore[no-untyped-call]


async def test_a_new_server_shows_the_cached_results_first_then_its_own(tmp_path: Path) -> None:
    folder, cache = tmp_path / "project", tmp_path / "cache"
    shutil.copytree(FIXTURES / "runs" / "twofile", folder)
    train = folder / "train.py"
    uri, model = uri_of(train), uri_of(folder / "model.py")  # the breaks are the model's

    async with window(folder, cache) as first:
        opened(first, train)
        await until(lambda: done(first, uri), 180)
        analysed = breaks(first.diagnostics[model])
        assert analysed and not done(first, uri)[0]["cached"]
        await until(lambda: list(cache.rglob("*.json")))  # kept after it is published

    async with window(folder, cache) as second:
        opened(second, train)
        await until(lambda: len(done(second, uri)) >= 2, 180)
        shown, confirmed = done(second, uri)[:2]
        assert shown["cached"] and not confirmed["cached"]
        assert shown["breaks"] == confirmed["breaks"]
        recorder: Recorder = second.diagnostics
        published = [breaks(found) for published, found in recorder.history if published == model]
        assert published[0] == analysed  # the cache's, before the server analysed anything
        assert published[-1] == analysed


async def test_a_new_window_on_the_model_file_shows_its_breaks_from_the_cache(tmp_path: Path) -> None:
    """Only model.py open: its breaks come from train.py, analysed in the background. In a new
    window they show from train.py's cached analysis before the server analysed anything."""
    folder, cache = tmp_path / "project", tmp_path / "cache"
    shutil.copytree(FIXTURES / "runs" / "twofile", folder)
    model = uri_of(folder / "model.py")

    async with window(folder, cache) as first:
        opened(first, folder / "model.py")
        await until(lambda: breaks(first.diagnostics.get(model, [])), 180)
        analysed = breaks(first.diagnostics[model])
        await until(lambda: len(list(cache.rglob("*.json"))) >= 2)  # model.py's and train.py's

    async with window(folder, cache) as second:
        opened(second, folder / "model.py")
        recorder: Recorder = second.diagnostics
        await until(lambda: any(breaks(found) for uri, found in recorder.history if uri == model), 180)
        # The log's line comes after the publication: on a busy machine, a moment later.
        logged = await until(
            lambda: [m.message for m in second.log_messages if m.message.startswith("analysed train.py")]
        )
        assert "(from the cache)" in logged[0], logged  # shown before the server analysed anything
        published = [breaks(found) for uri, found in recorder.history if uri == model]
        assert next(found for found in published if found) == analysed
