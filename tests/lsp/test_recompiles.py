"""Recompilations in the editor, through the real server: where torch says a check was installed,
the guard and the limit in the diagnostic, the hover, the code lens and the quick fixes."""

from __future__ import annotations

import inspect

import torch
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.manual import page

from ..engine.test_recompiles import LIMIT, RECOMPILES, placed
from ..support.lsp import close, open_and_wait, uri_of
from ..support.measured import unmeasured
from ..support.torchlog_recompiles import COLUMNS


async def test_the_editor_shows_the_guard_and_the_limit(client: LanguageClient) -> None:
    """The issue's example over LSP: a diagnostic on ``mode == "a"`` with the guard and the limit;
    its hover with the remedies; the code lens with the compilations."""
    path = RECOMPILES / "switch.py"
    uri = uri_of(path)
    diagnostics = await open_and_wait(client, path)
    try:
        (diagnostic,) = diagnostics
        if not placed(path, "pick"):  # on the argument the check is about
            assert diagnostic.range == lsp.Range(lsp.Position(4, 12), lsp.Position(4, 16))
        elif COLUMNS:
            assert diagnostic.range == lsp.Range(lsp.Position(5, 7), lsp.Position(5, 18))
        else:  # the checked name in its line
            assert diagnostic.range == lsp.Range(lsp.Position(5, 7), lsp.Position(5, 11))
        assert diagnostic.code == "recompile" and diagnostic.source == "gbls"
        assert "guard `mode == 'a'` failed" in diagnostic.message
        assert "it hit the recompile limit (8)" in diagnostic.message
        assert diagnostic.severity == lsp.DiagnosticSeverity.Error  # a step above the warning setting
        assert diagnostic.code_description is not None
        assert diagnostic.code_description.href == page("recompilations")  # the manual's page
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), diagnostic.range.start)
        )
        assert hover is not None
        text = hover.contents.value  # type: ignore[union-attr]
        assert f"`torch._dynamo.config.{LIMIT}` (8)" in text
        assert "- 0/1: `mode == 'a'` failed (a check of 0/0)" in text
        assert "Move the switch on `mode` out of the compiled function" in text
        assert "last resort" in text
        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
        )
        titles = [unmeasured(lens.command.title) for lens in lenses or [] if lens.command]
        assert titles == ["gbls: fullgraph-clean · 8 compilations · 8 graphs · recompile limit hit"]
        actions = await client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(uri),
                diagnostic.range,
                lsp.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        # The limit of this compile call where torch.compile takes one (2.12+), else the config's.
        raised = (
            "Raise `pick`'s recompile_limit to 16 in its torch.compile call (a last resort"
            if "recompile_limit" in inspect.signature(torch.compile).parameters
            else f"Raise torch._dynamo.config.{LIMIT} to 16 (a last resort"
        )
        assert [action.title.split(":")[0] for action in actions or []] == [
            "Move the switch on `mode` out of the compiled function",
            raised,
            "Suppress this recompilation report on this line (# gbls",
        ]
        report = await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="gbls.showReport", arguments=[uri, "pick"])
        )
        assert isinstance(report, str)
        assert "8 compilations · 8 graphs · 0 breaks" in report
        assert f"### line {diagnostic.range.start.line + 1}: recompiled 8 times" in report
    finally:
        await close(client, path)


async def test_shapes_that_go_dynamic_after_one_recompilation_get_no_diagnostic(
    client: LanguageClient,
) -> None:
    path = RECOMPILES / "shapes.py"
    diagnostics = await open_and_wait(client, path)
    try:
        # Only `fixed` (dynamic=False), on its argument; `grow` settled after one recompilation.
        assert [(d.code, d.range.start.line, d.message.split(" recompiled")[0]) for d in diagnostics] == [
            ("recompile", 9, "`fixed`")
        ]
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri_of(path)), lsp.Position(4, 5))
        )
        assert hover is not None
        text = hover.contents.value  # type: ignore[union-attr]
        assert "2 compilations" in text and "automatic dynamic shapes" in text and "No problem" in text
    finally:
        await close(client, path)


async def test_a_resume_frame_s_compilations_are_its_own_in_the_hover_and_the_lens(
    client: LanguageClient,
) -> None:
    """``staged``'s rest after its print is a frame of its own, which recompiles for each ``n``: the
    diagnostic says so on the line of the break, the hover counts each frame, the lens their sum."""
    path = RECOMPILES / "resumed.py"
    uri = uri_of(path)
    diagnostics = await open_and_wait(client, path)
    try:
        (diagnostic,) = [d for d in diagnostics if d.code == "recompile"]
        assert diagnostic.message.startswith("`staged` after its break at line 7 recompiled 3 times")
        hover = await client.text_document_hover_async(
            lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(4, 5))
        )
        assert hover is not None
        text = hover.contents.value  # type: ignore[union-attr]
        assert (
            "**Compilations**, frame by frame as torch counts them: `staged`: 1 compilation · "
            "`staged` after its break at line 7: 4 compilations"
        ) in text
        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri))
        )
        assert [lens.command.title.split(" · ")[0] for lens in lenses or [] if lens.command] == [
            "gbls: 5 compilations"
        ]
    finally:
        await close(client, path)
