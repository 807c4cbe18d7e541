"""A real run's trace in the editor, over LSP with the real server: the trace ``gbls.traces`` names
puts its break on the line of a file gbls never ran, marked as the trace's; an edit of that line
removes it; the command imports another record of the same run, and the same root cause is shown
once.

The workspace holds ``model.py`` only (no compile site, nothing in it compiles it); the run that
made the trace compiled it from outside (``editor_run.py``, as a job's launcher does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import Recorder, initialized, server, session, until, uri_of

EDITOR = FIXTURES / "traces" / "editor"
RUN = FIXTURES / "traces" / "editor_run.py"


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the workspace, and the run's trace in it (``traces/run1``) and its log (``run.log``)."""
    folder = tmp_path_factory.mktemp("traced") / "workspace"
    shutil.copytree(EDITOR, folder)
    environment = dict(
        os.environ, TORCH_TRACE=str(folder / "traces" / "run1"), TORCH_LOGS="graph_breaks,recompiles"
    )
    with open(folder / "run.log", "w") as log:
        subprocess.run(
            [sys.executable, str(RUN), str(folder)],
            cwd=folder.parent,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=log,
            timeout=300,
            check=True,
        )
    return folder


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient, workspace: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 60, "debounceMs": 100, "traces": ["traces/*"]}
    async with session(initialized(lsp_client, {"workspace": workspace}, settings, settings)) as client:
        yield client


def breaks_in(diagnostics: Sequence[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in diagnostics if isinstance(d.data, dict) and d.data.get("kind") == "break"]


async def last_published(client: LanguageClient, uri: str, lines: list[int]) -> list[lsp.Diagnostic]:
    """Wait until the last publication for ``uri`` holds breaks on exactly ``lines`` (1-based)."""
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]

    def last() -> list[list[lsp.Diagnostic]] | None:
        mine = [list(diagnostics) for published, diagnostics in recorder.history if published == uri]
        found = breaks_in(mine[-1]) if mine else None
        if found is not None and sorted(d.range.start.line + 1 for d in found) == lines:
            return [found]  # a list holding the list: found even when it is empty
        return None

    return (await until(last, 240))[0]


async def test_a_configured_trace_marks_a_file_gbls_never_ran(
    client: LanguageClient, workspace: Path
) -> None:
    model = workspace / "model.py"
    uri = uri_of(model)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=model.read_text())
        )
    )
    # Published once the trace is read, and again once the file's own analysis finds nothing.
    (printed,) = await last_published(client, uri, [7])
    assert printed.code == "GB0059"
    assert printed.range.start.character == 8  # `print(...)`, recovered from the source
    assert printed.message.startswith("Failed to trace builtin operator (print)")
    assert f"(from trace {workspace / 'traces' / 'run1'} (" in printed.message
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri=uri), lsp.Position(6, 10))
    )
    assert hover is not None and isinstance(hover.contents, lsp.MarkupContent)
    assert "[GB0059](" in hover.contents.value  # the title is the diagnostic's, above the hover
    assert "_From a real run_: trace " in hover.contents.value

    # The run's log of the same run, imported by command: the same root cause, shown once.
    summary = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.importTrace", arguments=["run.log"])
    )
    assert str(summary).startswith(f"imported trace {workspace / 'run.log'} (")
    assert ": 1 break, 0 recompilation problems in 1 file" in str(summary)
    assert len(await last_published(client, uri, [7])) == 1

    # The line edited: the run's break is of another version of it, and is no longer shown.
    text = model.read_text().replace('print("scaling", y.shape)', "y = y.clamp(min=0)")
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await last_published(client, uri, [])
