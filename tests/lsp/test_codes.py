"""A code's own severity (``severityOverrides``) and the codes not reported (``ignore``), as the
server publishes them."""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from ..support import FIXTURES
from ..support.lsp import close, diagnostics_for, open_and_wait, uri_of

BRANCH_ITEM = FIXTURES / "engine" / "branch_item.py"  # GB0170 on line 6, GB0124 on line 8
SWITCH = FIXTURES / "recompiles" / "switch.py"  # recompiles until the limit: an error by default


async def configure(client: LanguageClient, settings: dict[str, Any]) -> list[list[lsp.Diagnostic]]:
    """Change the workspace's settings; what the server publishes again for the two files."""
    client.set_configuration({"debounceMs": 200, **settings}, section="gbls")
    waiting = [asyncio.ensure_future(diagnostics_for(client, uri_of(path))) for path in (BRANCH_ITEM, SWITCH)]
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings=None))
    return list(await asyncio.gather(*waiting))


async def test_a_code_has_its_own_severity_or_none_at_all(client: LanguageClient) -> None:
    default = [await open_and_wait(client, BRANCH_ITEM), await open_and_wait(client, SWITCH)]
    try:
        assert [[(d.code, d.severity) for d in found] for found in default] == [
            [("GB0170", lsp.DiagnosticSeverity.Warning), ("GB0124", lsp.DiagnosticSeverity.Warning)],
            [("recompile", lsp.DiagnosticSeverity.Error)],  # the limit: a step above the setting
        ]
        branch, switch = await configure(
            client,
            {"severityOverrides": {"GB0124": "error", "recompile": "information"}, "ignore": ["GB0170"]},
        )
        assert [(d.code, d.severity) for d in branch] == [("GB0124", lsp.DiagnosticSeverity.Error)]
        assert [(d.code, d.severity) for d in switch] == [("recompile", lsp.DiagnosticSeverity.Warning)]
        # An override wins over the severity setting; the others follow it.
        branch, _ = await configure(client, {"severity": "hint", "severityOverrides": {"GB0124": "error"}})
        assert [(d.code, d.severity) for d in branch] == [
            ("GB0170", lsp.DiagnosticSeverity.Hint),
            ("GB0124", lsp.DiagnosticSeverity.Error),
        ]
    finally:
        await configure(client, {})  # the shared server's defaults again, for the next test
        await close(client, BRANCH_ITEM)
        await close(client, SWITCH)
