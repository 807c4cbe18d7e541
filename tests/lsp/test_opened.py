"""Projects opened in the editor as they are, nothing configured, over LSP with the real server: a
script runs as ``python FILE`` from the workspace folder (``-m`` for a package's script), its
diagnostics those of ``gbls run`` of the same program; a script a configured run starts shows that
run's result; a file a crashed script would have reached says so.

Workspace folders, each a copy of a fixture project: ``nanogpt`` (reads configurator.py and its data
relative to the folder, evaluates under no_grad before training), ``fused`` (an optimizer step per
parameter group, then a second compiled step), ``rl`` (an update only after a warm-up), ``chunked``
(a loss per chunk), ``nanochat`` (``scripts/`` run as ``python -m scripts.base_train``),
``configured`` (nanogpt with a launch.json run of train.py) and ``crashing`` (train.py reads a
checkpoint it lacks before it compiles model.py's model).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import Recorder, initialized, open_and_wait, server, session, until, uri_of

PROJECTS = FIXTURES / "runs"
FOLDERS = {
    **{name: name for name in ("nanogpt", "fused", "rl", "chunked", "nanochat", "crashing")},
    "configured": "nanogpt",
    "sampling": "nanogpt",  # with a sample.py that fails to import its tokenizer
    "typing": "nanogpt",  # its train.py gets a syntax error typed into it
    "clean": "nanogpt",  # its model.py without the check that breaks the graph
}
# nanoGPT's sample.py needs tiktoken, which a fresh environment lacks: it fails at its import.
SAMPLE = (
    "import gbls_fixture_no_tokenizer\nimport torch\n\nfrom model import GPT\n\nmodel = torch.compile(GPT)\n"
)
LAUNCH = {
    "version": "0.2.0",
    "configurations": [
        {
            "name": "train",
            "type": "debugpy",
            "request": "launch",
            "program": "${workspaceFolder}/train.py",
            "args": ["--max_iters=2"],
        }
    ],
}


@pytest.fixture(scope="session")
def opened_projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("opened")
    for name, fixture in FOLDERS.items():
        shutil.copytree(PROJECTS / fixture, folder / name)
    (folder / "configured" / ".vscode").mkdir()
    (folder / "configured" / ".vscode" / "launch.json").write_text(json.dumps(LAUNCH))
    (folder / "sampling" / "sample.py").write_text(SAMPLE)
    model = folder / "clean" / "model.py"
    checked = (
        "        if idx.max() >= self.config.vocab_size:\n"
        '            raise ValueError("token id out of range")\n'
    )
    assert checked in model.read_text()
    model.write_text(model.read_text().replace(checked, ""))
    return folder


@pytest_lsp.fixture(scope="session", config=server())
async def opened_client(lsp_client: LanguageClient, opened_projects: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 120, "debounceMs": 100}
    folders = {name: opened_projects / name for name in FOLDERS}
    async with session(initialized(lsp_client, folders, settings, settings)) as client:
        yield client


def found_in(diagnostics: Sequence[lsp.Diagnostic]) -> list[tuple[int, str]]:
    """(line, code) of each break and recompilation diagnostic, 1-based lines."""
    return sorted(
        (d.range.start.line + 1, str(d.code))
        for d in diagnostics
        if isinstance(d.data, dict) and d.data.get("kind") in ("break", "recompile")
    )


def gbls_run(folder: Path, *command: str) -> dict[str, list[tuple[int, str]]]:
    """What ``gbls run COMMAND`` in ``folder`` finds, by file: (line, code) of each break and
    recompilation worth a diagnostic, as the editor shows them."""
    done = subprocess.run(
        [sys.executable, "-m", "gbls", "run", "--no-cache", "--timeout", "120", "--format", "json", *command],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    found: dict[str, list[tuple[int, str]]] = {}
    for entry in json.loads(done.stdout)["files"]:
        path = os.path.join(folder, entry["path"])
        items = [(b["range"]["start"]["line"], b["gb_id"]) for b in entry["breaks"]]
        problems = [r for r in entry["recompiles"] if r["problem"] and not r["suppressed"]]
        items += [(r["range"]["start"]["line"], "recompile") for r in problems]
        found[path] = sorted(items)
    return found


async def published(client: LanguageClient, path: Path, expected: list[tuple[int, str]]) -> None:
    """Wait until the last publication for ``path`` holds exactly ``expected``."""
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]

    def last() -> bool:
        mine = [diagnostics for uri, diagnostics in recorder.history if uri == uri_of(path)]
        return bool(mine) and found_in(list(mine[-1])) == expected

    await until(last, 240)


def status_message(client: LanguageClient, path: Path) -> str | None:
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]
    done = [s for s in statuses if s["uri"] == uri_of(path) and s["state"] == "done"]
    return str(done[-1]["message"]) if done else None


async def one_lens_a_line(client: LanguageClient, path: Path) -> list[str]:
    """The titles of the file's code lenses: one a compile site, each what an analysis that ran it
    found (no "not analysed" of an analysis that stopped before it, beside the run's lens)."""
    params = lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri_of(path)))
    lenses = await client.text_document_code_lens_async(params) or []
    titles = [lens.command.title for lens in lenses if lens.command is not None]
    assert titles and len({lens.range.start.line for lens in lenses}) == len(lenses), titles
    assert all(title.startswith("gbls: ") and "not analysed" not in title for title in titles), titles
    return titles


@pytest.mark.parametrize("name", ["nanogpt", "fused", "rl", "chunked"])
async def test_a_trainer_opened_with_nothing_configured_shows_what_gbls_run_finds(
    opened_client: LanguageClient, opened_projects: Path, name: str
) -> None:
    client, folder = opened_client, opened_projects / name
    expected = gbls_run(folder, "train.py")
    assert any(expected.values())
    await open_and_wait(client, folder / "train.py")
    for path, found in expected.items():
        await published(client, Path(path), found)
    await one_lens_a_line(client, folder / "train.py")


async def test_a_package_script_opened_alone_runs_as_a_module(
    opened_client: LanguageClient, opened_projects: Path
) -> None:
    client, projects = opened_client, opened_projects
    folder = projects / "nanochat"
    expected = gbls_run(folder, "-m", "scripts.base_train")
    gpt = folder / "nanochat" / "gpt.py"
    assert expected[str(gpt)] == [(13, "GB0059")]
    await open_and_wait(client, folder / "scripts" / "base_train.py")
    await published(client, gpt, expected[str(gpt)])


async def test_a_script_its_configured_run_starts_shows_the_run_s_result(
    opened_client: LanguageClient, opened_projects: Path
) -> None:
    client, projects = opened_client, opened_projects
    folder = projects / "configured"
    expected = gbls_run(folder, "train.py", "--max_iters=2")
    seen = len(client.log_messages)
    await open_and_wait(client, folder / "train.py")
    await published(client, folder / "train.py", expected[str(folder / "train.py")])
    # The log's line comes after the publications: on a busy machine, a moment later.
    analysed = await until(
        lambda: [m.message for m in client.log_messages[seen:] if m.message.startswith("analysed ")]
    )
    assert all(line.startswith("analysed run `train`") for line in analysed), analysed
    assert len(await one_lens_a_line(client, folder / "train.py")) == 1


async def test_a_model_a_crashed_script_would_have_reached_says_where_it_stopped(
    opened_client: LanguageClient, opened_projects: Path
) -> None:
    client, projects = opened_client, opened_projects
    model = projects / "crashing" / "model.py"
    await open_and_wait(client, model)
    message = await until(lambda: status_message(client, model))
    assert message.startswith("train.py stopped at line 7 before it ran compiled code of this file: ")
    assert "FileNotFoundError" in message


async def test_opening_a_model_puts_nothing_on_the_scripts_it_ran_to_reach_it(
    opened_client: LanguageClient, opened_projects: Path
) -> None:
    """model.py is reached by train.py; gbls ran sample.py too, which fails at its import. What it
    learned of sample.py (its failure) is not a Problems entry of a file the user never opened."""
    client, folder = opened_client, opened_projects / "sampling"
    model, sample = folder / "model.py", folder / "sample.py"
    seen = len(client.log_messages)
    await open_and_wait(client, model)
    await until(lambda: any("sample.py" in m.message for m in client.log_messages[seen:]))
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    await until(lambda: status_message(client, model) is not None)
    for uri, diagnostics in recorder.history:
        if uri == uri_of(sample):
            assert list(diagnostics) == [], diagnostics
    assert status_message(client, model) == ""  # analysed: train.py ran its compiled code


async def test_a_model_without_a_break_reports_what_compiled_it(
    opened_client: LanguageClient, opened_projects: Path
) -> None:
    """model.py's report tells the GPT compiled in train.py, its compilations and their guard, though
    no break of it is in model.py (the report was empty)."""
    client, model = opened_client, opened_projects / "clean" / "model.py"
    await open_and_wait(client, model)
    await until(lambda: status_message(client, model) is not None)
    report = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.showReport", arguments=[uri_of(model)])
    )
    assert isinstance(report, str) and "## GPT" in report and "Compiled at train.py:" in report, report
    assert "grad_mode" in report, report


async def test_a_syntax_error_s_status_names_it(opened_client: LanguageClient, opened_projects: Path) -> None:
    client, train = opened_client, opened_projects / "typing" / "train.py"
    broken = train.read_text().replace("def get_batch():", "def get_batch(:")
    uri = uri_of(train)
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]
    seen = len(statuses)
    await open_and_wait(client, train, broken)

    def said() -> str | None:
        done = [s for s in statuses[seen:] if s["uri"] == uri and s["state"] == "done" and s["message"]]
        return str(done[-1]["message"]) if done else None

    message = await until(said)
    assert message.startswith("SyntaxError"), message
    assert "nothing compiles this file" not in message
