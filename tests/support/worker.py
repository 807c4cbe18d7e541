"""The warm worker's fixtures, for the layers that analyse through it: their conftest imports them.

Not in the top-level conftest, so that the unit tests never start (nor can ask for) a worker.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.sandbox import launch
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings

from . import FIXTURES

Analyse = Callable[..., Awaitable[FileReport]]


class _Shared:
    """The process's one warm worker, and how many ``worker`` fixtures hold it: each layer's conftest
    imports the fixture, and pytest makes each import a session fixture of its own."""

    worker: Worker | None = None
    holders = 0


@pytest.fixture(scope="session")
async def worker(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Worker]:
    """One warm worker for every test that is not about start-up, whatever its layer: import torch
    costs seconds."""
    shared = _Shared.worker
    if shared is None:
        folders = [str(FIXTURES), str(tmp_path_factory.getbasetemp())]
        shared = _Shared.worker = Worker(lambda: launch(None, folders, "auto"))
        await shared.start()
    _Shared.holders += 1
    yield shared
    _Shared.holders -= 1
    if not _Shared.holders:
        _Shared.worker = None
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
