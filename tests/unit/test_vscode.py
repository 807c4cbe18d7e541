"""The VS Code extension's contract with the server, read from vscode-extension/ without node: every
server setting contributed with its default, the same names for commands and notifications. Its
TypeScript tests, lint and end-to-end test are in tests/editors/test_vscode.py."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

from gbls.lsp import analyses, server
from gbls.lsp.actions import FIX_ALL
from gbls.lsp.codelens import SHOW_REPORT
from gbls.settings import SANDBOX_MODES, SEVERITIES, Settings

from ..support import ROOT

EXTENSION = ROOT / "vscode-extension"
# The extension's own settings, never sent to the server (CLIENT_SETTINGS in src/settings.ts):
# vscode-languageclient reads gbls.trace.server itself.
CLIENT_SETTINGS = {"gbls.trace.server"}


def manifest() -> dict[str, Any]:
    return json.loads((EXTENSION / "package.json").read_text())  # type: ignore[no-any-return]


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


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
    assert f"STATUS_NOTIFICATION = '{analyses.STATUS}'" in source
    assert [entry["actions"]["kind"] for entry in manifest()["contributes"]["codeActions"]] == [FIX_ALL]
    # vscode-languageclient registers the server's commands as VS Code commands itself.
    server_commands = set(server.create_server().protocol.fm.commands)
    client_commands = {command["command"] for command in manifest()["contributes"]["commands"]}
    client_commands |= set(re.findall(r"registerCommand\(\s*'([^']+)'", source))
    assert not server_commands & client_commands
