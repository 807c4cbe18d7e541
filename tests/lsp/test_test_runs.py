"""A library file whose compiled method only the project's tests call, opened in the editor with
nothing configured: the server runs the tests that import it, and shows what ``gbls run -m pytest``
reports, the test that found each break among its related information."""

from __future__ import annotations

import json
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


@pytest.fixture(scope="session")
def testreach(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("testreach") / "testreach"
    shutil.copytree(FIXTURES / "runs" / "testreach", copy)
    return copy


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient, testreach: Path) -> AsyncIterator[LanguageClient]:
    settings = {"timeout": 120, "debounceMs": 100}
    async with session(initialized(lsp_client, {"testreach": testreach}, settings, settings)) as client:
        yield client


def shown(diagnostics: Sequence[lsp.Diagnostic]) -> list[tuple[int, int, int, int, str]]:
    return sorted(
        (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character, str(d.code))
        for d in diagnostics
    )


@pytest.mark.parametrize(
    ("library", "test", "code", "called"),
    [
        (
            "mylib/ops.py",
            "tests/test_ops.py",
            "GB0059",
            "Scaler.apply called here, by the test test_apply_scales",
        ),
        # No compile site of its own: the test compiles the module.
        (
            "mylib/layers.py",
            "tests/test_layers.py",
            "GB0124",
            "Gate called here, by the test test_gate_compiled",
        ),
    ],
)
async def test_the_library_file_shows_the_breaks_its_tests_reach(
    client: LanguageClient, testreach: Path, library: str, test: str, code: str, called: str
) -> None:
    folder = testreach
    uri = uri_of(folder / library)
    await open_and_wait(client, folder / library)
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]

    def with_break() -> Any:
        mine = [found for published, found in recorder.history if published == uri]
        return mine and any(d.code == code for d in mine[-1]) and list(mine[-1])

    diagnostics = await until(with_break, 300)
    ran = subprocess.run(
        [sys.executable, "-m", "gbls", "run", "--no-cache", "--format", "json", "-m", "pytest", test],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (report,) = [found for found in json.loads(ran.stdout)["files"] if found["path"] == str(folder / library)]
    expected = sorted(
        (
            b["range"]["start"]["line"] - 1,
            b["range"]["start"]["column"] - 1,
            b["range"]["end"]["line"] - 1,
            b["range"]["end"]["column"] - 1,
            b["gb_id"],
        )
        for b in report["breaks"]
    )
    # Every diagnostic is the run's: no "not analysed" of the file's own analysis is left.
    assert shown(diagnostics) == expected
    (found,) = diagnostics
    related = [(info.location.uri, info.message) for info in found.related_information or []]
    assert (uri_of(folder / test), called) in related
