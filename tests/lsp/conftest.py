"""The LSP layer: one real gbls server over LSP (the ``client`` fixture), and the warm worker's
fixtures for the tests that check the server against a direct analysis."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator

import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ..support import FIXTURES
from ..support.lsp import LENS_REFRESHES, Recorder, answer_requests, uri_of
from ..support.worker import _record_fixtures, analyse_file, worker  # noqa: F401 (fixtures)


@pytest_lsp.fixture(
    scope="session",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "gbls"]),
)
async def client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """One real gbls server for the LSP tests that are not about start-up, on the fixtures folder."""
    lsp_client.diagnostics = Recorder()
    answer_requests(lsp_client, LENS_REFRESHES)
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
