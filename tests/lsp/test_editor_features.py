"""The editor features of LSP 3.17 over the real server: pull diagnostics (a client that pulls gets
what a client pushed to gets, and the files it has not opened too), inlay hints where a graph ends
and at a call that recompiles, a suppression's hover and the unused suppression's diagnostic with
its quick fix, and settings per workspace folder (two folders, two interpreters)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import converters
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient, client_capabilities

from ..support import FIXTURES
from ..support.lsp import initialized, open_and_wait, server, session, until, uri_of

CROSS_MODULE = FIXTURES / "engine" / "cross_module.py"
HELPERS_LIB = FIXTURES / "engine" / "helpers_lib.py"
SUPPRESSED = FIXTURES / "lsp" / "suppressed.py"
PRINT_BODY = FIXTURES / "engine" / "print_body.py"
GRAD_AND_SIZES = FIXTURES / "costs" / "grad_and_sizes.py"
COMPAT = Path(os.environ.get("GBLS_COMPAT_CACHE", Path.home() / ".cache" / "gbls-compat"))

_converter = converters.get_converter()


def plain(diagnostics: Any) -> list[Any]:
    """Diagnostics as JSON, to compare a push's with a pull's."""
    return sorted(_converter.unstructure(list(diagnostics)), key=repr)


def opened(client: LanguageClient, path: Path) -> str:
    uri = uri_of(path)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri, "python", 1, path.read_text()))
    )
    return uri


async def done(client: LanguageClient, uri: str) -> None:
    """Until the server says the document's analysis is shown (``gbls/status`` done)."""
    statuses: list[dict[str, Any]] = client.statuses  # type: ignore[attr-defined]
    await until(lambda: any(s["uri"] == uri and s["state"] == "done" for s in statuses))


@pytest_lsp.fixture(scope="session", config=server())
async def pull_client(lsp_client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """A client that pulls its diagnostics, as VS Code does, on the fixtures folder (pytest-lsp
    counts the diagnostic refreshes itself)."""

    @lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def hints_refreshed(params: None) -> None:
        pass

    capabilities = client_capabilities("visual-studio-code")
    assert capabilities.text_document is not None and capabilities.workspace is not None
    capabilities.text_document.diagnostic = lsp.DiagnosticClientCapabilities(related_document_support=True)
    capabilities.workspace.diagnostics = lsp.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    capabilities.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    configuration = {"debounceMs": 200, "timeout": 60}
    starting = initialized(lsp_client, {"fixtures": FIXTURES}, {"timeout": 60}, configuration, capabilities)
    async with session(starting) as client:
        yield client


async def pulled(client: LanguageClient, uri: str, previous: str | None = None) -> Any:
    return await client.text_document_diagnostic_async(
        lsp.DocumentDiagnosticParams(
            text_document=lsp.TextDocumentIdentifier(uri), previous_result_id=previous
        )
    )


async def test_a_pull_client_gets_what_a_push_client_gets(
    client: LanguageClient, pull_client: LanguageClient
) -> None:
    pushed = await open_and_wait(client, CROSS_MODULE)
    assert [d.code for d in pushed] == ["GB0059"]  # the split of the break in helpers_lib.py
    uri = opened(pull_client, CROSS_MODULE)
    first = await pulled(pull_client, uri)  # pulled at once: the analysis is on its way (or cached)
    history = pull_client.diagnostics.history  # type: ignore[attr-defined]
    before = len(history)  # pushed before the pull: a cached analysis is quick
    await done(pull_client, uri)
    await until(lambda: pull_client.diagnostic_refresh_count)
    report = await pulled(pull_client, uri, first.result_id)
    assert isinstance(report, lsp.RelatedFullDocumentDiagnosticReport)
    assert plain(report.items) == plain(pushed)
    # Unchanged since: the pull says so, by its result id.
    again = await pulled(pull_client, uri, report.result_id)
    assert isinstance(again, lsp.RelatedUnchangedDocumentDiagnosticReport)
    # A client that pulls is pushed nothing from its first pull on, and what was pushed to it before
    # is cleared: two copies would show.
    assert not any(found for _, found in history[before:])
    assert not any(found for found in dict(history).values())
    # The file the analysis reached but nobody opened: in the workspace's pull, as a push has it.
    helpers_pushed = client.diagnostics[uri_of(HELPERS_LIB)]
    workspace = await pull_client.workspace_diagnostic_async(
        lsp.WorkspaceDiagnosticParams(previous_result_ids=[])
    )
    by_uri = {
        item.uri: item
        for item in workspace.items
        if isinstance(item, lsp.WorkspaceFullDocumentDiagnosticReport)
    }
    assert plain(by_uri[uri_of(HELPERS_LIB)].items) == plain(helpers_pushed)
    assert by_uri[uri_of(HELPERS_LIB)].version is None and by_uri[uri].version == 1


async def test_inlay_hints_at_a_split_and_at_a_call_that_recompiles(pull_client: LanguageClient) -> None:
    everything = lsp.Range(lsp.Position(0, 0), lsp.Position(100, 0))
    uri = opened(pull_client, PRINT_BODY)
    await done(pull_client, uri)
    hints = await pull_client.text_document_inlay_hint_async(
        lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri), range=everything)
    )
    # After the print (line 7), forward's second graph begins.
    assert [(h.position.line, h.label) for h in hints or []] == [(6, "graph 2 of 2")]
    line = PRINT_BODY.read_text().splitlines()[6]
    assert hints and hints[0].position.character == len(line)
    uri = opened(pull_client, GRAD_AND_SIZES)
    await done(pull_client, uri)
    hints = await pull_client.text_document_inlay_hint_async(
        lsp.InlayHintParams(text_document=lsp.TextDocumentIdentifier(uri), range=everything)
    )
    # The loop's call compiled forward three times (one per recompilation); the first call once.
    lines = GRAD_AND_SIZES.read_text().splitlines()
    ((line_number, label),) = [(h.position.line, h.label) for h in hints or []]
    assert (
        lines[line_number].strip() == "forward(x, w)"
        and line_number > 15
        and label == "\N{MULTIPLICATION SIGN}3"
    )


async def test_a_suppressions_hover_and_the_one_that_hides_nothing(
    client: LanguageClient, tmp_path: Path
) -> None:
    diagnostics = await open_and_wait(client, SUPPRESSED)
    uri = uri_of(SUPPRESSED)
    lines = SUPPRESSED.read_text().splitlines()
    # The used one (on the print) hides the print's break: its hover says so, in the break's words.
    used = lines[6].index("# gbls")
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(6, used + 3))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "**`# gbls: ignore[GB0059]`** hides:" in hover.contents.value
    assert "**GB0059** in `scale`: Failed to trace builtin operator (print)" in hover.contents.value
    # The other (line 6) hides nothing: an information diagnostic, faded, and its quick fix.
    (unused,) = [d for d in diagnostics if d.code == "unused-suppression"]
    assert unused.range.start.line == 5 and unused.severity == lsp.DiagnosticSeverity.Information
    assert list(unused.tags or []) == [lsp.DiagnosticTag.Unnecessary]
    assert not [d for d in diagnostics if d.code == "GB0059"]  # the print's break stays hidden
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri), unused.range, lsp.CodeActionContext(diagnostics=[unused])
        )
    )
    (fix,) = [
        a
        for a in actions or []
        if isinstance(a, lsp.CodeAction) and a.title == "Remove the unused suppression"
    ]
    assert fix.edit is not None and fix.edit.changes is not None
    (edit,) = fix.edit.changes[uri]
    assert edit.range.start.line == 5 and edit.new_text == "    y = x * 2"
    # Its own hover: it hides nothing.
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(5, lines[5].index("# gbls") + 3))
    )
    assert hover is not None and "hides nothing" in str(hover.contents)


def other_torch() -> Path | None:
    """The interpreter of a compatibility venv, with another torch than this test's."""
    own = Path(sys.prefix).resolve()
    found = [p for p in sorted(COMPAT.glob("py*-torch*/bin/python")) if p.parent.parent.resolve() != own]
    return found[0] if found else None


def torch_of(python: Path | str) -> str:
    return subprocess.run(
        [str(python), "-c", "import torch; print(torch.__version__.split('+')[0])"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.strip()


@pytest.fixture(scope="session")
def two_projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("folders")
    for name in ("one", "two"):
        (root / name).mkdir()
        shutil.copy(PRINT_BODY, root / name / "model.py")
    return root


@pytest_lsp.fixture(scope="session", config=server())
async def two_folders(lsp_client: LanguageClient, two_projects: Path) -> AsyncIterator[LanguageClient]:
    """One server for two workspace folders; the second's interpreter is another torch's."""
    other = other_torch()
    if other is None:
        pytest.skip(f"no virtual environment with another torch in {COMPAT}")
    lsp_client.set_configuration(
        {"gbls": {"timeout": 60, "interpreter": str(other)}}, scope_uri=uri_of(two_projects / "two")
    )
    lsp_client.other = other  # type: ignore[attr-defined]
    folders = {name: two_projects / name for name in ("one", "two")}
    configuration = {"timeout": 60, "interpreter": sys.executable}
    neovim = client_capabilities("neovim")
    starting = initialized(lsp_client, folders, configuration=configuration, capabilities=neovim)
    async with session(starting) as client:
        yield client


async def test_two_folders_two_interpreters(two_folders: LanguageClient, two_projects: Path) -> None:
    # Once the settings are pulled (the worker warms after): each folder's file analysed as it opens.
    await until(lambda: any("gbls worker ready" in m.message for m in two_folders.log_messages))
    reports: dict[str, str] = {}
    for name in ("one", "two"):
        uri = opened(two_folders, two_projects / name / "model.py")
        await done(two_folders, uri)
        reports[name] = str(
            await two_folders.workspace_execute_command_async(
                lsp.ExecuteCommandParams(command="gbls.showReport", arguments=[uri])
            )
        )
    other: Path = two_folders.other  # type: ignore[attr-defined]
    assert f"Analysed with torch {torch_of(sys.executable)}." in reports["one"]
    assert f"Analysed with torch {torch_of(other)}." in reports["two"]
