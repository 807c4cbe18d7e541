"""Every quick fix, for real: offered by the LSP server, applied, re-analysed by the real translator."""

from __future__ import annotations

import asyncio
import inspect
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
import torch
from lsprotocol import types as lsp
from pygls import uris
from pytest_lsp import LanguageClient

from gbls.engine.fixes.edits import Edit, apply
from gbls.lsp.diagnostics import to_span

from ..support import FIXTURES
from ..support.lsp import diagnostics_for, initialized, server, session
from ..support.measured import unmeasured

FIXES = FIXTURES / "fixes"


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the fix fixtures: the fixes edit files on disk."""
    folder = tmp_path_factory.mktemp("fixes")
    shutil.copytree(FIXES, folder, dirs_exist_ok=True)
    return folder


@pytest_lsp.fixture(scope="session", config=server())
async def client(lsp_client: LanguageClient, workspace: Path) -> AsyncIterator[LanguageClient]:
    options = {"timeout": 60, "analyseOnChange": True, "debounceMs": 100}
    async with session(initialized(lsp_client, {"fixes": workspace}, options)) as client:
        yield client


def uri(path: Path) -> str:
    return uris.from_fs_path(str(path)) or ""


class OpenCopy:
    """One fixture file open in the editor, copied so that each test edits its own."""

    def __init__(self, client: LanguageClient, workspace: Path, name: str, copy_as: str) -> None:
        self.client = client
        self.path = workspace / copy_as
        shutil.copy(workspace / name, self.path)
        self.version = 1

    @property
    def uri(self) -> str:
        return uri(self.path)

    async def open(self) -> list[lsp.Diagnostic]:
        self.client.text_document_did_open(
            lsp.DidOpenTextDocumentParams(
                lsp.TextDocumentItem(
                    uri=self.uri, language_id="python", version=1, text=self.path.read_text()
                )
            )
        )
        return await diagnostics_for(self.client, self.uri)

    async def actions(self, diagnostic: lsp.Diagnostic) -> list[lsp.CodeAction | lsp.Command]:
        found = await self.client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(self.uri),
                diagnostic.range,
                lsp.CodeActionContext(diagnostics=[diagnostic]),
            )
        )
        return list(found or [])

    async def apply(self, action: lsp.CodeAction) -> list[lsp.Diagnostic]:
        """Apply the action's edit as an editor would: the open file by a change, others on disk."""
        assert action.edit is not None and action.edit.changes is not None
        waiting = asyncio.ensure_future(diagnostics_for(self.client, self.uri))
        for changed_uri, edits in action.edit.changes.items():
            path = Path(uris.to_fs_path(changed_uri) or changed_uri)
            text = path.read_text()
            lines = text.splitlines()
            path.write_text(
                apply(text, [Edit(str(path), to_span(e.range, lines), e.new_text) for e in edits])
            )
        self.version += 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=self.uri, version=self.version),
                [lsp.TextDocumentContentChangeWholeDocument(text=self.path.read_text())],
            )
        )
        return await waiting

    def close(self) -> None:
        self.client.text_document_did_close(
            lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(self.uri))
        )


def titled(actions: list[lsp.CodeAction | lsp.Command], prefix: str) -> lsp.CodeAction:
    matching = [action for action in actions if action.title.startswith(prefix)]
    assert len(matching) == 1, [action.title for action in actions]
    assert isinstance(matching[0], lsp.CodeAction)
    return matching[0]


def codes(diagnostics: list[lsp.Diagnostic]) -> list[object]:
    return [d.code for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Warning]


async def fix_and_check(
    client: LanguageClient, workspace: Path, name: str, code: str, title: str, copy_as: str | None = None
) -> tuple[OpenCopy, list[lsp.Diagnostic]]:
    edited = OpenCopy(client, workspace, name, copy_as or f"fixed_{name}")
    before = await edited.open()
    (diagnostic,) = [d for d in before if d.code == code]
    after = await edited.apply(titled(await edited.actions(diagnostic), title))
    assert code not in codes(after), after
    return edited, after


async def test_remove_print(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "print_call.py", "GB0059", "Remove `print('scaled', y)`, and its output"
    )
    assert "print(" not in edited.path.read_text()
    assert after == []
    edited.close()


async def test_register_print_as_reorderable(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client,
        workspace,
        "print_call.py",
        "GB0059",
        "Let Dynamo print after the graph",
        "reordered.py",
    )
    text = edited.path.read_text()
    assert text.splitlines()[1] == "torch._dynamo.config.reorderable_logging_functions.add(print)"
    assert 'print("scaled", y)' in text and after == []
    edited.close()


async def test_remove_logger_call_keeps_the_block(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(client, workspace, "logger_call.py", "GB0291", "Remove `log.info(")
    assert "    if True:\n        pass\n" in edited.path.read_text()
    assert after == []
    edited.close()


async def test_capture_scalar_outputs_is_inserted_once_after_the_imports(
    client: LanguageClient, workspace: Path
) -> None:
    edited, after = await fix_and_check(
        client, workspace, "item_call.py", "GB0124", "Enable torch._dynamo.config.capture_scalar_outputs"
    )
    lines = edited.path.read_text().splitlines()
    assert lines[:5] == [
        '"""Scalars out of tensors."""',
        "",
        "import torch as T",
        "from torch import nn",
        "T._dynamo.config.capture_scalar_outputs = True",
    ]
    assert after == []
    edited.close()


async def test_capture_dynamic_output_shape_ops_adds_the_torch_import(
    client: LanguageClient, workspace: Path
) -> None:
    edited, after = await fix_and_check(
        client,
        workspace,
        "nonzero_call.py",
        "GB0036",
        "Enable torch._dynamo.config.capture_dynamic_output_shape_ops",
    )
    lines = edited.path.read_text().splitlines()
    assert lines[1:3] == ["import torch", "torch._dynamo.config.capture_dynamic_output_shape_ops = True"]
    assert after == []
    edited.close()


async def test_remove_explicit_graph_break(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "explicit_break.py", "GB0025", "Remove the explicit torch._dynamo.graph_break()"
    )
    assert "graph_break" not in edited.path.read_text() and after == []
    edited.close()


async def test_fix_at_the_root_cause_in_another_file(client: LanguageClient, workspace: Path) -> None:
    edited = OpenCopy(client, workspace, "propagated.py", "fixed_propagated.py")
    (diagnostic,) = [d for d in await edited.open() if d.code == "GB0059"]
    actions = await edited.actions(diagnostic)
    (go,) = [a for a in actions if a.title == "Go to the root cause in announce (fix_helpers.py:5)"]
    assert isinstance(go, lsp.Command) and go.command == "gbls.showLocation"
    assert go.arguments is not None and go.arguments[0] == uri(workspace / "fix_helpers.py")
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(go.command, go.arguments))
    shown = client.shown_documents[-1]
    assert shown.uri == uri(workspace / "fix_helpers.py") and shown.selection is not None
    assert shown.selection.start == lsp.Position(4, 4)
    remove = titled(actions, "Remove `print('announcing', x)`")
    assert remove.edit is not None and list(remove.edit.changes or {}) == [uri(workspace / "fix_helpers.py")]
    helpers = (workspace / "fix_helpers.py").read_text()
    try:
        assert await edited.apply(remove) == []
    finally:
        (workspace / "fix_helpers.py").write_text(helpers)
    edited.close()


async def test_drop_disable_decorator_in_the_workspace(client: LanguageClient, workspace: Path) -> None:
    edited = OpenCopy(client, workspace, "disabled.py", "fixed_disabled.py")
    (diagnostic,) = [d for d in await edited.open() if d.code == "GB0098"]
    remove = titled(await edited.actions(diagnostic), "Remove @torch.compiler.disable from opaque")
    helpers = (workspace / "fix_helpers.py").read_text()
    try:
        after = await edited.apply(remove)
        assert "torch.compiler.disable" not in (workspace / "fix_helpers.py").read_text()
        assert after == []
    finally:
        (workspace / "fix_helpers.py").write_text(helpers)
    edited.close()


async def test_branch_rewritten_with_where(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "branch_where.py", "GB0170", "Rewrite the branch with torch.where"
    )
    assert "    y = torch.where(y.sum() > 0, y - 1, y)\n    return y.relu()" in edited.path.read_text()
    assert after == []
    edited.close()


async def test_conditional_expression_rewritten_with_where(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "ifexp_where.py", "GB0170", "Rewrite the conditional expression with torch.where"
    )
    assert "return torch.where(a.mean() > b.mean(), a, b)" in edited.path.read_text()
    assert after == []
    edited.close()


async def test_branch_rewritten_with_cond(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "branch_cond.py", "GB0170", "Rewrite the branch with torch.cond"
    )
    text = edited.path.read_text()
    assert "    def _true_branch(h):\n        h = h.sin()\n        g = h * 2\n        return g, h\n" in text
    assert "    g, h = torch.cond(h.sum() > 0, _true_branch, _false_branch, (h,))\n" in text
    assert after == []
    edited.close()


async def test_suppression_comment_is_honoured(client: LanguageClient, workspace: Path) -> None:
    edited, _ = await fix_and_check(
        client, workspace, "explicit_break.py", "GB0025", "Suppress GB0025 on this line", "suppressed.py"
    )
    assert "    torch._dynamo.graph_break()  # gbls: ignore[GB0025]" in edited.path.read_text()
    lenses = await client.text_document_code_lens_async(
        lsp.CodeLensParams(lsp.TextDocumentIdentifier(edited.uri))
    )
    assert [unmeasured(lens.command.title) for lens in lenses or [] if lens.command] == [
        "gbls: 2 graphs · 0 breaks · 2 ops · 1 suppressed"
    ]
    edited.close()


async def test_fullgraph_lock_in_for_break_free_functions(client: LanguageClient, workspace: Path) -> None:
    edited = OpenCopy(client, workspace, "clean_lock.py", "locked.py")
    assert await edited.open() == []
    titles = []
    for line, column in ((3, 2), (8, 2), (17, 20)):  # two decorators and a compile call
        position = lsp.Position(line, column)
        found = await client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(edited.uri),
                lsp.Range(position, position),
                lsp.CodeActionContext(diagnostics=[]),
            )
        )
        (action,) = [a for a in found or [] if isinstance(a, lsp.CodeAction)]
        titles.append(action.title)
        assert await edited.apply(action) == []
    assert titles == ["Lock in one graph with fullgraph=True"] * 3
    text = edited.path.read_text()
    assert "@torch.compile(fullgraph=True)\ndef fused" in text
    assert "@torch.compile(dynamic=True, fullgraph=True)\ndef also_fused" in text
    assert "fast_plain = torch.compile(plain, fullgraph=True)" in text
    edited.close()


async def test_a_fix_applied_twice_never_duplicates_its_line(client: LanguageClient, workspace: Path) -> None:
    edited = OpenCopy(client, workspace, "item_call.py", "twice.py")
    (stale,) = [d for d in await edited.open() if d.code == "GB0124"]
    enable = titled(await edited.actions(stale), "Enable torch._dynamo.config.capture_scalar_outputs")
    assert await edited.apply(enable) == []
    # A second click on the diagnostic the editor still shows: the flag is set, nothing to add.
    titles = [action.title for action in await edited.actions(stale)]
    assert not any(title.startswith("Enable") for title in titles)
    assert edited.path.read_text().count("capture_scalar_outputs") == 1
    edited.close()


async def test_early_return_rewritten_with_cond(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "return_cond.py", "GB0170", "Rewrite the early return with torch.cond"
    )
    text = edited.path.read_text()
    assert "    return torch.cond(x.sum() > y.sum(), _true_branch, _false_branch, (x, y))\n" in text
    assert "    def _false_branch(x, y):\n        return y - 1\n" in text
    assert after == []
    edited.close()


async def test_no_torch_cond_for_a_branch_returning_a_python_value(
    client: LanguageClient, workspace: Path
) -> None:
    """``return x.item() + 1`` is a float, which torch.cond cannot return: the editor offers no
    rewrite of the branch, and the workaround (the condition worked out eagerly) is refused, since
    ``score`` would then compile no graph: the hover says so; the ``.item()``'s fix is proven."""
    edited = OpenCopy(client, workspace, "return_scalar.py", "fixed_return_scalar.py")
    before = await edited.open()
    (branch,) = [d for d in before if d.code == "GB0170"]
    assert not any(a.title.startswith(("Rewrite", "Turn")) for a in await edited.actions(branch))
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(edited.uri), branch.range.start)
    )
    assert hover is not None
    said = hover.contents.value  # type: ignore[union-attr]
    assert "re-analysis refused every fix gbls has for it (Stop compiling `bool(x.sum() > 0)`" in said
    assert "score compiles no graph after it" in said
    (item,) = [d for d in before if d.code == "GB0124"]
    after = await edited.apply(titled(await edited.actions(item), "Enable torch._dynamo.config.capture"))
    assert "GB0124" not in codes(after) and "GB0170" in codes(after)
    edited.close()


async def test_other_branches_get_a_cond_skeleton(client: LanguageClient, workspace: Path) -> None:
    """Without snippet support the placeholders keep their defaults: here that is already right."""
    edited, after = await fix_and_check(
        client, workspace, "branch_skeleton.py", "GB0170", "Turn the branch into a torch.cond skeleton"
    )
    text = edited.path.read_text()
    assert "    def _true_branch(x):\n        for step in range(2):\n            x = x + step\n" in text
    assert "        return x\n    def _false_branch(x):\n        return x.clone()\n" in text
    assert "    x = torch.cond(x.sum() > 0, _true_branch, _false_branch, (x,))\n" in text
    assert after == []
    edited.close()


def recompile_problems(diagnostics: list[lsp.Diagnostic]) -> list[str]:
    return [d.message for d in diagnostics if d.code == "recompile"]


async def test_a_string_switch_moves_out_of_the_compiled_function(
    client: LanguageClient, workspace: Path
) -> None:
    edited, after = await fix_and_check(
        client, workspace, "recompile_switch.py", "recompile", "Move the switch on `mode` out of the compiled"
    )
    assert edited.path.read_text() == (
        "import torch\n"
        "\n"
        "\n"
        "@torch.compile\n"
        "def _pick(x, mode_is_a):\n"
        "    if mode_is_a:\n"
        "        return x + 1\n"
        "    return x - 1\n"
        "\n"
        "\n"
        "def pick(x, mode):\n"
        '    return _pick(x, mode == "a")\n'
        "\n"
        "\n"
        'for mode in "abcd":\n'
        "    pick(torch.randn(3), mode)\n"
    )
    # The compiled function sees a bool: it compiles twice, which is no problem.
    assert recompile_problems(after) == []
    edited.close()


async def test_a_number_is_passed_as_a_tensor(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "recompile_scalar.py", "recompile", "Pass `k` as a tensor at its 2 calls"
    )
    text = edited.path.read_text()
    assert "    scaled(torch.randn(3), torch.tensor(k))\n" in text
    assert "scaled(torch.randn(3), k=torch.tensor(5))\n" in text
    assert recompile_problems(after) == []
    edited.close()


async def test_sizes_compile_dynamic(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "recompile_sizes.py", "recompile", "Compile `fixed` with dynamic=True"
    )
    assert "@torch.compile(dynamic=True)\ndef fixed(x):" in edited.path.read_text()
    assert recompile_problems(after) == []
    edited.close()


async def test_integer_module_attributes_are_made_dynamic(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client,
        workspace,
        "recompile_module_int.py",
        "recompile",
        "Enable torch._dynamo.config.allow_unspec_int_on_nn_module",
    )
    assert (
        edited.path.read_text().splitlines()[1] == "torch._dynamo.config.allow_unspec_int_on_nn_module = True"
    )
    assert recompile_problems(after) == []
    edited.close()


# torch.compile takes a recompile limit of its own (2.12+).
PER_CALL = "recompile_limit" in inspect.signature(torch.compile).parameters


async def test_raising_the_limit_is_offered_last(client: LanguageClient, workspace: Path) -> None:
    edited = OpenCopy(client, workspace, "recompile_limit.py", "limit_raised.py")
    (diagnostic,) = [d for d in await edited.open() if d.code == "recompile"]
    assert diagnostic.severity == lsp.DiagnosticSeverity.Error and "recompile limit" in diagnostic.message
    actions = await edited.actions(diagnostic)
    fixes = [a.title for a in actions if isinstance(a, lsp.CodeAction) and not a.title.startswith("Suppress")]
    if PER_CALL:  # torch.compile takes a limit of its own (2.12+): this compile call's is raised
        assert fixes[-1].startswith("Raise `pick`'s recompile_limit to 16 in its torch.compile call (a last")
        after = await edited.apply(titled(actions, "Raise `pick`'s recompile_limit"))
        assert edited.path.read_text().splitlines()[3] == "@torch.compile(recompile_limit=16)"
    else:
        assert fixes[-1].startswith("Raise torch._dynamo.config.recompile_limit to 16 (a last resort")
        after = await edited.apply(titled(actions, "Raise torch._dynamo.config.recompile_limit"))
        assert edited.path.read_text().splitlines()[1] == "torch._dynamo.config.recompile_limit = 16"
    # Ten values now compile ten times: still a recompilation to look at, but no limit.
    (still,) = [d for d in after if d.code == "recompile"]
    assert still.severity == lsp.DiagnosticSeverity.Warning
    assert still.message.startswith("`pick` recompiled 9 times") and "limit" not in still.message
    edited.close()


async def test_a_recompilation_report_can_be_suppressed(client: LanguageClient, workspace: Path) -> None:
    edited, after = await fix_and_check(
        client, workspace, "recompile_sizes.py", "recompile", "Suppress this recompilation report", "quiet.py"
    )
    assert "def fixed(x):  # gbls: ignore[recompile]" in edited.path.read_text()
    assert after == []
    edited.close()
