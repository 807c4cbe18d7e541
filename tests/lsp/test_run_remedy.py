"""A script that stops at argparse for want of its flags, opened in the editor: its diagnostic
offers to add a run, prefilled from the README's command, to .vscode/launch.json (its other
configuration and comments kept) or to pyproject.toml (created); the run added is the one that
works."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.engine import runs
from gbls.worker.shared.protocol import Run

from ..support import FIXTURES
from ..support.lsp import Recorder, initialized, open_and_wait, server, session, until, uri_of
from ..support.measured import unmeasured


@pytest.fixture(scope="session")
def needsargs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("needsargs") / "needsargs"
    shutil.copytree(FIXTURES / "runs" / "needsargs", copy)
    return copy


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient, needsargs: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 60, "debounceMs": 100}
    async with session(initialized(lsp_client, {"needsargs": needsargs}, settings, settings)) as client:
        yield client


def applied(text: str, edits: list[lsp.TextEdit]) -> str:
    """``text`` with the insertions ``edits`` made (each an empty range)."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        assert edit.range.start == edit.range.end
        line, column = edit.range.start.line, edit.range.start.character
        while len(lines) <= line:
            lines.append("")
        lines[line] = lines[line][:column] + edit.new_text + lines[line][column:]
    return "".join(lines)


async def test_a_script_that_exits_at_argparse_offers_the_readme_s_run(
    client: LanguageClient, needsargs: Path
) -> None:
    train = needsargs / "train.py"
    uri = uri_of(train)
    await open_and_wait(client, train)
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]

    def failure() -> Any:
        mine = [found for published, found in recorder.history if published == uri]
        return next((d for d in mine[-1] if d.code == "analysis-exit"), None) if mine else None

    stopped: lsp.Diagnostic = await until(failure, 180)
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=stopped.range,
            context=lsp.CodeActionContext(diagnostics=[stopped]),
        )
    )
    offered = {a.title: a for a in actions or [] if isinstance(a, lsp.CodeAction)}
    command = "python train.py --steps 2 --scale 0.5"
    launch = offered[f"Add a run to .vscode/launch.json: {command}"]
    pyproject = offered[f"Add a run to pyproject.toml ([[tool.gbls.run]]): {command}"]
    expected = Run("train.py", str(train), "", ("--steps", "2", "--scale", "0.5"), str(needsargs))

    # launch.json: one insertion into the file as it is, its comments and its configuration kept.
    assert launch.is_preferred and launch.edit is not None and launch.edit.changes is not None
    launch_json = needsargs / ".vscode" / "launch.json"
    before = launch_json.read_text()
    launch_json.write_text(applied(before, list(launch.edit.changes[uri_of(launch_json)])))
    assert all(line in launch_json.read_text().splitlines() for line in before.splitlines())
    assert runs.from_launch_json(str(needsargs)) == runs.Runs((expected,))

    # The editor follows: the client says the file changed, and the run's result replaces the
    # script's stopped analysis (its diagnostics and lens), with no restart.
    watched = [r for r in client.registrations if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]  # type: ignore[attr-defined]
    assert watched, "the server asked to watch the files that configure runs"
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=uri_of(launch_json), type=lsp.FileChangeType.Changed)]
        )
    )

    def ran() -> list[lsp.Diagnostic] | None:
        mine = [found for published, found in recorder.history if published == uri]
        codes = [d.code for d in mine[-1]] if mine else []
        return mine[-1] if "GB0059" in codes and "analysis-exit" not in codes else None

    now = await until(ran, 180)
    assert [(d.code, d.range.start.line + 1) for d in now] == [("GB0059", 11)]
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(text_document=lsp.TextDocumentIdentifier(uri=uri))
    )
    assert [unmeasured(lens.command.title) for lens in lenses or [] if lens.command] == [
        "gbls: 2 graphs · 1 break · 3 ops"
    ]

    # pyproject.toml: there is none, so it is created.
    assert pyproject.edit is not None and pyproject.edit.document_changes is not None
    create, edit = pyproject.edit.document_changes
    assert isinstance(create, lsp.CreateFile) and create.uri == uri_of(needsargs / "pyproject.toml")
    assert isinstance(edit, lsp.TextDocumentEdit)
    (needsargs / "pyproject.toml").write_text(applied("", list(edit.edits)))  # type: ignore[arg-type]
    assert runs.from_pyproject(str(needsargs)) == runs.Runs((expected,))

    # The run added is one that runs: gbls check, told nothing, runs pyproject.toml's run.
    checked = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--no-cache"],
        cwd=needsargs,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 1, checked.stdout + checked.stderr  # the break, and no failure
    assert "train.py:11:5: GB0059" in checked.stdout and "error" not in checked.stdout


@pytest.fixture(scope="session")
def slowstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("slowstart") / "slowstart"
    shutil.copytree(FIXTURES / "runs" / "slowstart", copy)
    return copy


@pytest_lsp.fixture(scope="session", config=server())
async def short_budget(lsp_client: LanguageClient, slowstart: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 5, "debounceMs": 100}
    async with session(initialized(lsp_client, {"slowstart": slowstart}, settings, settings)) as client:
        yield client


async def test_a_script_the_budget_cuts_before_its_compiled_code_offers_the_readme_s_run(
    short_budget: LanguageClient, slowstart: Path
) -> None:
    """Cut, not failed: an information diagnostic where it was, its compile site not analysed for
    that, and the run to configure that gets there within the budget."""
    train = slowstart / "train.py"
    uri = uri_of(train)
    await open_and_wait(short_budget, train)
    recorder: Recorder = short_budget.diagnostics  # type: ignore[assignment]

    def cut() -> Any:
        mine = [found for published, found in recorder.history if published == uri]
        return next((d for d in mine[-1] if d.code == "cut"), None) if mine else None

    note: lsp.Diagnostic = await until(cut, 180)
    assert note.severity == lsp.DiagnosticSeverity.Information
    assert note.range.start.line + 1 in (15, 16)  # the loop that counts
    assert note.message.startswith(f"cut after 5 s at train.py:{note.range.start.line + 1}: the program")
    (mine,) = [found for published, found in recorder.history if published == uri][-1:]
    assert not any(str(d.code).startswith("analysis-") for d in mine)  # no failure
    (site,) = [d for d in mine if d.data and d.data.get("kind") == "not-analysed"]
    assert "the program was cut after 5 s, before it reached it" in site.message
    assert "Declare inputs" not in site.message  # no inputs would help it
    actions = await short_budget.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=note.range,
            context=lsp.CodeActionContext(diagnostics=[note]),
        )
    )
    titles = [a.title for a in actions or [] if isinstance(a, lsp.CodeAction)]
    assert "Add a run to .vscode/launch.json: python train.py --max_tokens 1000" in titles
