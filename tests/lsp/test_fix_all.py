"""Fix all (``source.fixAll.gbls``, for ``editor.codeActionsOnSave``): what ``gbls check --fix``
changes in the document, as one code action."""

from __future__ import annotations

from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.engine.fixes.edits import Edit, apply
from gbls.lsp.diagnostics import to_span
from gbls.lsp.server import create_server

from ..support import FIXTURES
from ..support.lsp import close, open_and_wait, uri_of

FIX_ALL = FIXTURES / "fixes" / "fix_all.py"  # GB0025 and GB0124 have safe fixes, the print (GB0059) none


async def actions(client: LanguageClient, only: list[str] | None) -> list[lsp.CodeAction | lsp.Command]:
    found = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri_of(FIX_ALL)),
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            lsp.CodeActionContext(diagnostics=[], only=only),
        )
    )
    return list(found or [])


async def test_fix_all_applies_the_safe_fixes_of_the_document(client: LanguageClient) -> None:
    diagnostics = await open_and_wait(client, FIX_ALL)
    try:
        assert sorted(str(d.code) for d in diagnostics) == ["GB0025", "GB0059", "GB0124"]
        for only in (["source"], ["source.fixAll.gbls"]):
            assert [getattr(a, "kind", None) for a in await actions(client, only)] == ["source.fixAll.gbls"]
        (action,) = await actions(client, ["source.fixAll"])
        assert isinstance(action, lsp.CodeAction) and action.kind == "source.fixAll.gbls"
        assert action.edit is not None and action.edit.changes is not None
        assert list(action.edit.changes) == [uri_of(FIX_ALL)]
        text = FIX_ALL.read_text()
        lines = text.splitlines()
        edits = [
            Edit(str(FIX_ALL), to_span(e.range, lines), e.new_text)
            for e in action.edit.changes[uri_of(FIX_ALL)]
        ]
        fixed = text.replace("    torch._dynamo.graph_break()\n", "").replace(
            "import torch._dynamo\n",
            "import torch._dynamo\ntorch._dynamo.config.capture_scalar_outputs = True\n",
        )
        assert apply(text, edits) == fixed  # the print stays: removing it changes what the code does
        # Neither a quick fix nor offered unasked: clients ask for source actions when they want them.
        assert all(
            getattr(a, "kind", None) != "source.fixAll.gbls" for a in await actions(client, ["quickfix"])
        )
        assert all(getattr(a, "kind", None) != "source.fixAll.gbls" for a in await actions(client, None))
    finally:
        await close(client, FIX_ALL)


def test_the_server_declares_fix_all() -> None:
    options = create_server().protocol.fm.feature_options[lsp.TEXT_DOCUMENT_CODE_ACTION]
    assert options.code_action_kinds == [lsp.CodeActionKind.QuickFix, "source.fixAll.gbls"]
