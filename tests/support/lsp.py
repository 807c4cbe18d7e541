"""Driving the real gbls server over LSP in tests: the server as an editor starts it, a client
initialized on its workspace folders (``server`` and ``session``: what every LSP test module's client
fixture is made of), and small helpers."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

T = TypeVar("T")


class Recorder(dict[str, Any]):
    """The client's diagnostics dict, remembering every publication, not just the last."""

    def __init__(self) -> None:
        super().__init__()
        self.history: list[tuple[str, Any]] = []

    def __setitem__(self, uri: str, diagnostics: Any) -> None:
        self.history.append((uri, diagnostics))
        super().__setitem__(uri, diagnostics)


# The workspace/codeLens/refresh requests the shared client's server sent (tests/conftest.py).
LENS_REFRESHES: list[None] = []


def answer_requests(client: LanguageClient, refreshes: list[None] | None = None) -> None:
    """Answer the requests the server sends a client that, like VS Code, supports them: the
    workspace/codeLens/refresh after each analysis (each one goes into ``refreshes``), and the
    client/registerCapability that asks it to watch the files that configure runs (each registration
    kept in ``client.registrations``). Unanswered, one fails the test."""
    registrations: list[lsp.Registration] = []
    client.registrations = registrations  # type: ignore[attr-defined]

    @client.feature(lsp.WORKSPACE_CODE_LENS_REFRESH)
    def refreshed(params: None) -> None:
        if refreshes is not None:
            refreshes.append(params)

    @client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def register(params: lsp.RegistrationParams) -> None:
        registrations.extend(params.registrations)


def recorded(client: LanguageClient, refreshes: list[None] | None = None) -> None:
    """The client keeps what the server publishes: diagnostics, and each document's ``gbls/status``;
    it answers the server's requests (``answer_requests``: ``refreshes`` gets the code lens
    refreshes)."""
    client.diagnostics = Recorder()
    answer_requests(client, refreshes)
    client.statuses = []  # type: ignore[attr-defined]

    @client.feature("gbls/status")
    def status(params: Any) -> None:
        client.statuses.append(params if isinstance(params, dict) else params._asdict())  # type: ignore[attr-defined]


def uri_of(path: Path) -> str:
    return uris.from_fs_path(str(path)) or ""


def server(environment: Mapping[str, str] | None = None) -> ClientServerConfig:
    """The real gbls server, as an editor starts it (``python -m gbls``), in ``environment`` (else
    this process's)."""
    return ClientServerConfig(
        server_command=[sys.executable, "-m", "gbls"],
        server_env=dict(environment) if environment is not None else None,
    )


async def initialized(
    client: LanguageClient,
    folders: Mapping[str, Path],
    options: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    capabilities: lsp.ClientCapabilities | None = None,
    refreshes: list[None] | None = None,
) -> LanguageClient:
    """``client``, recording what the server publishes (``recorded``), initialized on the workspace
    ``folders`` (by name) as VS Code is (``capabilities``: another client's): ``options``, gbls's
    settings in the initialization options; ``configuration``, the client's answer to
    ``workspace/configuration`` for the section gbls (None: no answer of its own)."""
    recorded(client, refreshes)
    if configuration is not None:
        client.set_configuration(configuration, section="gbls")
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities or client_capabilities("visual-studio-code"),
            workspace_folders=[
                lsp.WorkspaceFolder(uri=uri_of(path), name=name) for name, path in folders.items()
            ],
            initialization_options={"gbls": options} if options is not None else None,
        )
    )
    return client


@contextlib.asynccontextmanager
async def session(starting: Awaitable[LanguageClient]) -> AsyncIterator[LanguageClient]:
    """The client ``starting`` gives (``initialized(...)``), shut down at the end, but where the
    test ended the server itself."""
    client = await starting
    yield client
    running = client._server
    if running is not None and running.returncode is None:
        await client.shutdown_session()


async def open_and_wait(client: LanguageClient, path: Path, text: str | None = None) -> list[lsp.Diagnostic]:
    uri = uri_of(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text or path.read_text())
        )
    )
    return await diagnostics_for(client, uri)


async def until(condition: Callable[[], T | None], timeout: float = 120, interval: float = 0.05) -> T:
    """Poll ``condition`` until it returns something truthy, and return that; fail after ``timeout`` s,
    long enough on a busy machine that only what never comes fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if loop.time() > deadline:
            raise TimeoutError(f"nothing after {timeout} s")
        await asyncio.sleep(interval)


def published_since(client: LanguageClient, seen: int, uri: str) -> list[lsp.Diagnostic] | None:
    """The first diagnostics published for ``uri`` after the ``seen`` first publications, if any yet."""
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    for published_uri, diagnostics in recorder.history[seen:]:
        if published_uri == uri:
            return list(diagnostics)
    return None


async def diagnostics_for(client: LanguageClient, uri: str, timeout: float = 120) -> list[lsp.Diagnostic]:
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    # An empty list is a publication too: wrap it so that it counts as found.
    return await published_after(client, seen, uri, timeout)


async def published_after(
    client: LanguageClient, seen: int, uri: str, timeout: float = 120
) -> list[lsp.Diagnostic]:
    """Wait for the first diagnostics published for ``uri`` after the ``seen`` first publications."""

    def found() -> list[list[lsp.Diagnostic]] | None:
        published = published_since(client, seen, uri)
        return [published] if published is not None else None  # an empty list is a publication too

    return (await until(found, timeout))[0]


async def close(client: LanguageClient, path: Path) -> list[lsp.Diagnostic]:
    """Close ``path`` and wait for the publication that clears it: the next test starts from nothing."""
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri_of(path))))
    return await published_after(client, seen, uri_of(path))


async def proofs_done(client: LanguageClient, path: Path, seen: int, timeout: float = 180) -> None:
    """Once the server said it proved the fixes of ``path``'s analysis (it does after publishing it:
    each proof is an analysis of the worker's), in a log message after the ``seen`` first."""
    line = f" fixes in {path.name}"

    def said() -> bool:
        return any(
            m.message.startswith("proved ") and m.message.endswith(line) for m in client.log_messages[seen:]
        )

    await until(said, timeout)
