from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from gbls.analysis import analyse
from gbls.report import FileReport
from gbls.sandbox import launch
from gbls.settings import Settings
from gbls.workerclient import Worker

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


@pytest.fixture(scope="session")
def analyse_file(worker: Worker) -> Analyse:
    async def run(path: Path, source: str | None = None, settings: Settings | None = None) -> FileReport:
        text = path.read_text() if source is None else source
        return await analyse(worker, str(path), text, settings or Settings(), str(path.parent))

    return run
