from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.sandbox import launch
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings

from .support.lsp import LENS_REFRESHES, Recorder, answer_lens_refreshes, uri_of

FIXTURES = Path(__file__).parent / "fixtures"

Analyse = Callable[..., Awaitable[FileReport]]


@pytest.fixture(scope="session")
async def worker(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Worker]:
    """One warm worker for every test that is not about start-up: import torch costs seconds."""
    folders = [str(FIXTURES), str(tmp_path_factory.getbasetemp())]
    shared = Worker(lambda: launch(None, folders, "auto"))
    await shared.start()
    yield shared
    await shared.stop()


# The fixture files the running test analysed: the compatibility matrix (scripts/compat.py) counts
# fixtures whose every test agrees with torch's log, from the JUnit report's "fixture" properties.
analysed: list[Path] = []


@pytest.fixture(autouse=True)
def _record_fixtures(record_property: Callable[[str, object], None]) -> Iterator[None]:
    analysed.clear()
    yield
    for path in dict.fromkeys(analysed):
        if path.is_relative_to(FIXTURES):
            record_property("fixture", str(path.relative_to(FIXTURES)))


@pytest.fixture(scope="session")
def analyse_file(worker: Worker) -> Analyse:
    async def run(path: Path, source: str | None = None, settings: Settings | None = None) -> FileReport:
        analysed.append(path)
        text = path.read_text() if source is None else source
        return await analyse(worker, str(path), text, settings or Settings(), str(path.parent), read_source)

    return run


@pytest_lsp.fixture(
    scope="session",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "gbls"]),
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """One real gbls server for the LSP tests that are not about start-up, on the fixtures folder."""
    lsp_client.diagnostics = Recorder()
    answer_lens_refreshes(lsp_client, LENS_REFRESHES)
    lsp_client.set_configuration({"debounceMs": 200}, section="gbls")
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(FIXTURES), name="fixtures")],
            initialization_options={"gbls": {"timeout": 60}},
        )
    )
    yield lsp_client
    await lsp_client.shutdown_session()
