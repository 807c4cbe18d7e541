"""The VS Code extension's contract with the server, read from vscode-extension/ without node: every
server setting (gbls/settings.py declares them) contributed with its type and default and sent with
its type, the same names for commands and notifications. Its TypeScript tests, lint and end-to-end
test are in tests/editors/test_vscode.py."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from gbls.lsp import server, status
from gbls.lsp.actions import FIX_ALL
from gbls.lsp.codelens import SHOW_REPORT
from gbls.settings import TYPES, Settings, camel

from ..support import ROOT

EXTENSION = ROOT / "vscode-extension"
# The extension's own settings, never sent to the server (CLIENT_SETTINGS in src/settings.ts):
# vscode-languageclient reads gbls.trace.server itself.
CLIENT_SETTINGS = {"gbls.trace.server"}


def manifest() -> dict[str, Any]:
    return json.loads((EXTENSION / "package.json").read_text())  # type: ignore[no-any-return]


def schema_type(kind: Any) -> str:
    """The JSON schema type package.json should give a setting of this Python type."""
    origin = typing.get_origin(kind)
    if origin is Annotated:
        return schema_type(typing.get_args(kind)[0])
    if origin is Literal:
        return "string"
    types = {
        bool: "boolean",
        str: "string",
        int: "integer",
        float: "number",
        tuple: "array",
        Mapping: "object",
    }
    return types[origin or kind]


def typescript_type(kind: Any, unions: dict[str, list[str]]) -> str:
    """The TypeScript type src/settings.ts should give a setting of this Python type, a Literal by
    the name of the union type of its values."""
    origin = typing.get_origin(kind)
    arguments = typing.get_args(kind)
    if origin is Annotated:
        return typescript_type(arguments[0], unions)
    if origin is Literal:
        (name,) = [name for name, values in unions.items() if values == list(arguments)]
        return name
    if origin is tuple:
        return typescript_type(arguments[0], unions) + "[]"
    if origin is Mapping:
        return f"Record<{typescript_type(arguments[0], unions)}, {typescript_type(arguments[1], unions)}>"
    return {bool: "boolean", str: "string", int: "number", float: "number"}[kind]


def test_every_server_setting_is_contributed_with_the_server_default() -> None:
    contributed = manifest()["contributes"]["configuration"]["properties"]
    assert CLIENT_SETTINGS <= set(contributed)
    properties = {key: value for key, value in contributed.items() if key not in CLIENT_SETTINGS}
    assert sorted(properties) == sorted(f"gbls.{camel(name)}" for name in TYPES)
    defaults = Settings()
    for name, kind in TYPES.items():
        contribution = properties[f"gbls.{camel(name)}"]
        default = json.loads(json.dumps(getattr(defaults, name)))  # a tuple is a list
        assert contribution["default"] == default, name
        assert contribution["type"] == schema_type(kind), name
        if typing.get_origin(kind) is Literal:
            assert contribution["enum"] == list(typing.get_args(kind)), name


def test_the_client_sends_every_server_setting() -> None:
    """src/settings.ts's ServerSettings: the same names as the server's settings, of the same types,
    each read from the contribution of that name."""
    source = (EXTENSION / "src" / "settings.ts").read_text()
    unions = {
        name: re.findall(r"'([^']*)'", values)
        for name, values in re.findall(r"export type (\w+) = ([^;]+);", source)
    }
    interface = re.search(r"export interface ServerSettings \{(.*?)\n\}", source, re.DOTALL)
    assert interface is not None
    declared = dict(re.findall(r"^\s+(\w+): ([^;]+);", interface.group(1), re.MULTILINE))
    assert declared == {camel(name): typescript_type(kind, unions) for name, kind in TYPES.items()}
    read = re.findall(r"^\s+(\w+): contributed<.*?>\(configuration, '(\w+)'\),", source, re.MULTILINE)
    assert sorted(read) == sorted((camel(name), camel(name)) for name in TYPES)


def test_the_client_speaks_the_server_protocol() -> None:
    """Names the TypeScript uses for the server's commands and notification, and no command clash."""
    source = "\n".join(path.read_text() for path in (EXTENSION / "src").glob("*.ts"))
    assert f"SERVER_SHOW_REPORT = '{SHOW_REPORT}'" in source
    assert f"SERVER_ANALYSE_FILE = '{server.ANALYSE_FILE}'" in source
    assert f"STATUS_NOTIFICATION = '{status.STATUS}'" in source
    assert [entry["actions"]["kind"] for entry in manifest()["contributes"]["codeActions"]] == [FIX_ALL]
    # vscode-languageclient registers the server's commands as VS Code commands itself.
    server_commands = set(server.create_server().protocol.fm.commands)
    client_commands = {command["command"] for command in manifest()["contributes"]["commands"]}
    client_commands |= set(re.findall(r"registerCommand\(\s*'([^']+)'", source))
    assert not server_commands & client_commands
