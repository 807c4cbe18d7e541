"""The LSP layer: one real gbls server over LSP (the ``client`` fixture), and the warm worker's
fixtures for the tests that check the server against a direct analysis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import LENS_REFRESHES, initialized, server, session
from ..support.worker import _record_fixtures, analyse_file, worker  # noqa: F401 (fixtures)


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """One real gbls server for the LSP tests that are not about start-up, on the fixtures folder."""
    folders = {"fixtures": FIXTURES}
    options, configuration = {"timeout": 60}, {"debounceMs": 200}
    starting = initialized(lsp_client, folders, options, configuration, refreshes=LENS_REFRESHES)
    async with session(starting) as client:
        yield client
