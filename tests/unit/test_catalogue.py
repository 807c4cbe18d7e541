"""The fix catalogue as pure functions: which fixes a break's source shape gets, what each one writes,
and which one the editor and the CLI prefer.

tests/lsp/test_fixes.py applies every fix through the real server and re-runs the real translator;
these pin down the catalogue's own rules (when it offers a fix, when it refuses, what text it
produces) on the same fixture files, without Dynamo.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as lsp

from gbls.engine.fixes import catalogue, policy
from gbls.engine.fixes.catalogue import fixes_for, fullgraph_fix
from gbls.engine.fixes.edits import Edit, Fix, apply, editable
from gbls.engine.fixes.recompiles import recompile_fixes
from gbls.engine.model import BreakReport, FileReport, FunctionReport, Location, RecompileReport
from gbls.engine.ranges import Span
from gbls.engine.sources import Sources, read_source
from gbls.lsp.actions import code_actions
from gbls.lsp.diagnostics import break_data
from gbls.worker.shared.protocol import Break, Code, Frame, Function, Guard, Recompile

from ..support import FIXTURES

FIXES = FIXTURES / "fixes"
REORDER = (
    "Let Dynamo print after the graph: the same output (torch._dynamo.config.reorderable_logging_functions)"
)
REMOVE_PRINT = "Remove `print('scaled', y)`, and its output"


def eagerly(code: str) -> str:
    """The title of the workaround for a break with no fix of its own: ``code`` run eagerly."""
    return (
        f"Stop compiling `{code}`: run it eagerly in a function of its own under @torch.compiler.disable "
        "(a workaround: the graph still splits, at its call)"
    )


def at(path: Path, function: str, line: int, snippet: str) -> Location:
    text = path.read_text().splitlines()[line - 1]
    column = text.index(snippet)
    return Location(str(path), function, Span(line, column, line, column + len(snippet)))


def broken(gb_id: str, *chain: Location) -> BreakReport:
    frames = tuple(Frame(location.path, location.function, location.span.line) for location in chain)
    cause = Break(chain[0].function, "a graph break", gb_id, None, "", (), "", frames)
    return BreakReport(cause, chain[-1].path, chain[-1].span, chain, "")


def applied(fix: Fix, sources: Sources) -> dict[str, str]:
    paths = {edit.path for edit in fix.edits}
    return {
        Path(path).name: apply(sources.text(path) or "", [e for e in fix.edits if e.path == path])
        for path in paths
    }


CASES = [
    (
        "print_call.py", "scaled", "GB0059", 7, 'print("scaled", y)',
        [  # the fix that keeps the output first
            (REORDER, False, "import torch\ntorch._dynamo.config.reorderable_logging_functions.add(print)\n"),
            (REMOVE_PRINT, False, "    y = x * 2\n    return y + 1\n"),
        ],
    ),
    (
        "logger_call.py", "logged", "GB0291", 12, 'log.info("exp done %s", y)',
        [
            (  # torch before 2.14 (no reorderable_logger_methods): through a function of the module's
                "Log with log_info(), a function of the module's that calls log.info(), registered with "
                "torch._dynamo.config.reorderable_logging_functions: Dynamo calls it after the graph, which "
                "does not split, and the line is still logged",
                False,
                "log = logging.getLogger(__name__)\n\n\n@torch.compiler.disable\ndef log_info(*args):\n",
            ),
            # A body is never left empty.
            ("Remove `log.info('exp done %s', y)`, and its output", False, "    if True:\n        pass\n"),
        ],
    ),
    (  # a skipped function's call (GB0007) that only warns
        "warn_call.py", "careful", "GB0007", 9, 'warnings.warn("doubled")',
        [
            (
                "Let Dynamo warn after the graph: the same output "
                "(torch._dynamo.config.reorderable_logging_functions)",
                False,
                "import torch\ntorch._dynamo.config.reorderable_logging_functions.add(warnings.warn)\n",
            ),
            (
                "Remove `warnings.warn('doubled')`, and its warning",
                False,
                "    y = x * 2\n    return y + 1\n",
            ),
        ],
    ),
    (
        "item_call.py", "normalized", "GB0124", 9, "x.abs().max().item()",
        # After the module's imports and docstring, with the module's own name for torch.
        [("Enable torch._dynamo.config.capture_scalar_outputs", True,
          "from torch import nn\nT._dynamo.config.capture_scalar_outputs = True\n")],
    ),
    (
        "nonzero_call.py", "positive_indices", "GB0036", 6, "nonzero(x > 0)",
        [("Enable torch._dynamo.config.capture_dynamic_output_shape_ops", True,
          "import torch\ntorch._dynamo.config.capture_dynamic_output_shape_ops = True\n")],
    ),
    (
        "explicit_break.py", "split", "GB0025", 7, "torch._dynamo.graph_break()",
        [("Remove the explicit torch._dynamo.graph_break()", True, "    a = x.exp()\n    return a.log()\n")],
    ),
    (
        "branch_where.py", "clamp_positive", "GB0170", 7, "y.sum() > 0",
        [("Rewrite the branch with torch.where (both sides are computed)", False,
          "    y = torch.where(y.sum() > 0, y - 1, y)\n    return y.relu()\n")],
    ),
    (
        "ifexp_where.py", "pick", "GB0170", 6, "a.mean() > b.mean()",
        [("Rewrite the conditional expression with torch.where", False,
          "    return torch.where(a.mean() > b.mean(), a, b)\n")],
    ),
    (
        "branch_cond.py", "route", "GB0170", 7, "h.sum() > 0",
        [("Rewrite the branch with torch.cond (both branches must return tensors of the same shape)", False,
          "    g, h = torch.cond(h.sum() > 0, _true_branch, _false_branch, (h,))\n")],
    ),
    (
        "return_cond.py", "choose", "GB0170", 6, "x.sum() > y.sum()",
        [("Rewrite the early return with torch.cond (both branches must return tensors of the same shape)",
          False, "    return torch.cond(x.sum() > y.sum(), _true_branch, _false_branch, (x, y))")],
    ),
    # A branch returns a Python float: torch.cond takes only tensors, and a skeleton cannot hold a
    # return; only the last resort is left, the condition worked out eagerly.
    (
        "return_scalar.py", "score", "GB0170", 6, "x.sum() > 0",
        [(eagerly("bool(x.sum() > 0)"), False, "    if _score_eagerly(x):\n")],
    ),
    (
        "branch_skeleton.py", "accumulate", "GB0170", 6, "x.sum() > 0",
        [("Turn the branch into a torch.cond skeleton to complete (operands, outputs)", False,
          "    x = torch.cond(x.sum() > 0, _true_branch, _false_branch, (x,))\n")],
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "function", "gb_id", "line", "snippet", "expected"), CASES)
def test_each_break_gets_the_fixes_its_shape_allows(
    name: str, function: str, gb_id: str, line: int, snippet: str, expected: list[tuple[str, bool, str]]
) -> None:
    path = FIXES / name
    sources = Sources(read_source)
    fixes = fixes_for(broken(gb_id, at(path, function, line, snippet)), str(path), sources)
    assert [(fix.title, fix.safe) for fix in fixes] == [(title, safe) for title, safe, _ in expected]
    for fix, (_, _, fragment) in zip(fixes, expected, strict=True):
        (text,) = applied(fix, sources).values()
        assert fragment in text
        ast.parse(text)


def test_the_editor_and_the_cli_prefer_the_same_fix_one_that_keeps_the_output(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Were the print's removal listed first, both would still prefer the reordering, which keeps what
    the program prints."""
    monkeypatch.setitem(
        catalogue.CATALOGUE, "GB0059", (catalogue.remove_logging_call, catalogue.register_reorderable)
    )
    path = FIXES / "print_call.py"
    brk = broken("GB0059", at(path, "scaled", 7, 'print("scaled", y)'))
    report = FileReport(str(path), "ok", "", "", None, (), (brk,), (), "", "", 0.0)
    sources = Sources(read_source)
    assert policy.preferred([report], sources, [])[(str(path), brk.key)].title == REORDER
    diagnostic = lsp.Diagnostic(lsp.Range(lsp.Position(6, 4), lsp.Position(6, 22)), "", source="gbls")
    diagnostic.data = break_data(brk)
    actions = code_actions(str(path), [diagnostic], sources, lambda _: report, [])
    fixes = [a for a in actions if isinstance(a, lsp.CodeAction) and not a.title.startswith("Suppress")]
    assert [(a.title, a.is_preferred) for a in fixes] == [(REORDER, True), (REMOVE_PRINT, None)]


def test_a_workaround_comes_after_every_fix_and_a_safe_fix_first() -> None:
    """The order the policy offers: the fixes that keep the program's meaning (safe ones first), then
    those that drop output, then the workarounds that keep the split."""
    edit = Edit("f.py", Span(1, 0, 1, 0), "")
    workaround = Fix("eager", (edit,), proof="skip")
    drops = Fix("remove", (edit,), changes="output")
    keeps = Fix("reorder", (edit,))
    safe = Fix("flag", (edit,), safe=True)
    assert policy._safe_first([workaround, drops, keeps, safe]) == [safe, keeps, drops, workaround]
    assert not workaround.removes and drops.removes


def test_fix_never_applies_a_workaround() -> None:
    """``--fix --unsafe-fixes`` and fix-all take a break's fix only where it removes the break."""
    path = FIXES / "print_call.py"
    brk = broken("GB0059", at(path, "scaled", 7, 'print("scaled", y)'))
    report = FileReport(str(path), "ok", "", "", None, (), (brk,), (), "", "", 0.0)
    edit = Edit(str(path), Span(1, 0, 1, 0), "x")
    workaround = Fix("stop compiling", (edit,), proof="skip")
    assert not policy.applies(workaround, unsafe=True)
    fix = Fix("reorder", (edit,))
    assert policy.applies(fix, unsafe=True) and not policy.applies(fix)
    edits, taken = policy.safe_edits([report], {(str(path), brk.key): fix})
    assert edits == {str(path): [edit]} and taken == [(str(path), brk, fix)]


def test_a_root_cause_in_another_file_is_fixed_there() -> None:
    here = at(FIXES / "propagated.py", "outer", 9, "announce(y)")
    root = at(FIXES / "fix_helpers.py", "announce", 5, 'print("announcing", x)')
    sources = Sources(read_source)
    _, removal, eager = fixes_for(broken("GB0059", here, root), here.path, sources)
    assert eager.title.startswith("Stop compiling announce: @torch.compiler.disable")  # the workaround
    assert applied(removal, sources) == {
        "fix_helpers.py": sources.text(root.path).replace(  # type: ignore[union-attr]
            '    print("announcing", x)\n', ""
        )
    }


def test_a_disabled_callee_in_a_sibling_module_loses_its_decorator() -> None:
    here = at(FIXES / "disabled.py", "uses_opaque", 8, "opaque(x * 2)")
    sources = Sources(read_source)
    (fix,) = fixes_for(broken("GB0098", here), here.path, sources)
    assert fix.title == "Remove @torch.compiler.disable from opaque so that Dynamo compiles it"
    assert "@torch.compiler.disable\n" not in applied(fix, sources)["fix_helpers.py"]


def test_no_fix_where_the_shape_is_not_the_one_the_fix_is_sure_about(tmp_path: Path) -> None:
    source = tmp_path / "odd.py"
    source.write_text(
        "import torch\n"
        "torch._dynamo.config.capture_scalar_outputs = True\n"
        "\n"
        "@torch.compile\n"
        "def f(x):\n"
        "    y = x.sum().item(); print(y)\n"
        "    x = x + 1; torch._dynamo.graph_break()\n"
        "    return y\n"
    )
    sources = Sources(read_source)

    def offered(gb_id: str, line: int, snippet: str) -> list[str]:
        return [
            fix.title
            for fix in fixes_for(broken(gb_id, at(source, "f", line, snippet)), str(source), sources)
        ]

    # The flag is already set: nothing of its own, so the last resort (the one statement that holds it).
    assert offered("GB0124", 6, "x.sum().item()") == [eagerly("x.sum().item()")]
    assert offered("GB0059", 6, "print(y)") == [REORDER]  # not alone on its line: not removed
    assert offered("GB0025", 7, "torch._dynamo.graph_break()") == []  # not alone on its line
    assert offered("GB9999", 7, "torch") == []  # nothing in the catalogue


def test_one_request_reads_each_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GB0170 family tries four rewrites on the same tree: it is read and parsed once."""
    reads: list[str] = []

    def counted(path: str) -> str | None:
        reads.append(path)
        return read_source(path)

    parses: list[str] = []
    real_parse = ast.parse

    def parse(source: str, *args: Any, **kwargs: Any) -> Any:
        parses.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", parse)
    path = FIXES / "branch_skeleton.py"
    fixes_for(broken("GB0170", at(path, "accumulate", 6, "x.sum() > 0")), str(path), Sources(counted))
    assert reads == [str(path)] and len(parses) == 1


def test_a_clean_function_is_locked_in_with_fullgraph() -> None:
    path = FIXES / "clean_lock.py"
    source = path.read_text()
    decorator = at(path, "fused", 4, "torch.compile").span
    fix = fullgraph_fix(str(path), source, decorator, None)
    assert fix is not None and "@torch.compile(fullgraph=True)\ndef fused" in apply(source, list(fix.edits))
    call = at(path, "plain", 18, "torch.compile(plain)").span
    fix = fullgraph_fix(str(path), source, None, call)
    assert fix is not None and "torch.compile(plain, fullgraph=True)" in apply(source, list(fix.edits))


def test_a_flag_is_only_offered_where_the_source_has_the_call(tmp_path: Path) -> None:
    """A break said to be a ``.item()`` where the source has none (the analysed code can say so)."""
    path = FIXES / "item_call.py"
    sources = Sources(read_source)
    elsewhere = at(path, "normalized", 10, "x / scale")
    offered = fixes_for(broken("GB0124", elsewhere), str(path), sources)
    assert [fix.title for fix in offered] == [eagerly("x / scale")]  # no flag: only the last resort
    not_item = at(path, "normalized", 9, "x.abs()")
    offered = fixes_for(broken("GB0124", not_item), str(path), sources)
    assert [fix.title for fix in offered] == [eagerly("x.abs().max().item()")]


def test_fixes_edit_the_analysed_file_and_the_workspace_only(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "workspace", tmp_path / "outside"
    installed = workspace / ".venv" / "lib" / "python3.11" / "site-packages" / "lib.py"

    def fix_of(path: Path) -> Fix:
        return Fix("edit", (Edit(str(path), Span(1, 0, 1, 0), "x"),))

    analysed = outside / "opened.py"  # opened in the editor from outside the workspace folders
    assert editable(fix_of(workspace / "pkg" / "helper.py"), str(analysed), [str(workspace)])
    assert editable(fix_of(analysed), str(analysed), [str(workspace)])
    assert not editable(fix_of(outside / "other.py"), str(analysed), [str(workspace)])
    assert not editable(fix_of(installed), str(analysed), [str(workspace)])
    assert not editable(fix_of(Path(str(workspace) + "-twin") / "x.py"), str(analysed), [str(workspace)])
    assert not editable(fix_of(Path("relative.py")), str(analysed), [str(workspace)])


def test_edits_keep_the_line_endings_of_the_file() -> None:
    source = "import torch\r\n\r\ndef f(x):\r\n\treturn x\r\n"
    insert = Edit("f.py", Span(2, 0, 2, 0), "torch._dynamo.config.capture_scalar_outputs = True\n")
    remove = Edit("f.py", Span(4, 0, 5, 0), "")
    assert apply(source, [insert, remove]) == (
        "import torch\r\ntorch._dynamo.config.capture_scalar_outputs = True\r\n\r\ndef f(x):\r\n"
    )


ENUM_SWITCH = """import enum
import torch


class Mode(enum.Enum):
    A = 1
    B = 2


@torch.compile
def pick(x, mode, scale=2):
    if mode is Mode.A:
        return x * scale
    if mode is not Mode.B:
        return x
    return -x
"""


def recompiled(
    path: Path, guard: Guard, first_line: int, name: str = "pick"
) -> tuple[RecompileReport, FileReport]:
    """A recompilation report of ``name``'s own frame, and a file report holding its function."""
    source = path.read_text()
    line = next(n for n, text in enumerate(source.splitlines(), start=1) if text.startswith(f"def {name}"))
    span = Span(line, 4, line, 4 + len(name))
    decorator = Span(first_line, 1, first_line, len(source.splitlines()[first_line - 1]))
    function = FunctionReport(
        Function(name, name, str(path), first_line, analysed=True),
        str(path),
        first_line,
        (),
        0,
        0,
        span,
        decorator,
        None,
    )
    recompile = Recompile(name, Code(str(path), first_line, name), True, "0/1", guard)
    found = RecompileReport(
        name, Code(str(path), first_line, name), True, (recompile, recompile), str(path), span, None, ""
    )
    report = FileReport(str(path), "ok", "", "", None, (function,), (), (), "", "", 0.0, recompiles=(found,))
    return found, report


def test_an_enum_switch_moves_out_with_each_test_its_flag(tmp_path: Path) -> None:
    path = tmp_path / "enum_switch.py"
    path.write_text(ENUM_SWITCH)
    guard = Guard("___check_obj_id(mode, 1), type=<class 'Mode'>", "0/0", "identity", "mode")
    found, report = recompiled(path, guard, 10)
    sources = Sources(read_source)
    (fix,) = recompile_fixes(found, report, sources)
    assert fix.title.startswith("Move the switch on `mode` out of the compiled function")
    assert applied(fix, sources)["enum_switch.py"].split("\n\n\n", 2)[2] == (
        "@torch.compile\n"
        "def _pick(x, mode_is_A, mode_is_B, scale):\n"
        "    if mode_is_A:\n"
        "        return x * scale\n"
        "    if not mode_is_B:\n"
        "        return x\n"
        "    return -x\n"
        "\n"
        "\n"
        "def pick(x, mode, scale=2):\n"
        "    return _pick(x, mode is Mode.A, mode is Mode.B, scale)\n"
    )


def test_a_switch_used_any_other_way_or_a_number_in_range_gets_no_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "other_uses.py"
    path.write_text(
        "import torch\n\n\n@torch.compile\ndef pick(x, mode):\n    print(mode)\n"
        '    return x + 1 if mode == "a" else x\n'
    )
    found, report = recompiled(path, Guard("mode == 'a'", "0/0", "value", "mode"), 4)
    assert recompile_fixes(found, report, Sources(read_source)) == []
    path.write_text(
        "import torch\n\n\n@torch.compile\ndef pick(x, n):\n"
        "    for _ in range(n):\n        x = x + 1\n    return x\n"
    )
    found, report = recompiled(path, Guard("n == 1", "0/0", "value", "n"), 4)
    assert recompile_fixes(found, report, Sources(read_source)) == []


MOVED = """import torch

SCALE = 2


@torch.compile
def f(x, items):
    total = x + sum(a for a, _ in items)
    class Local:
        factor = SCALE

    class Reads:
        factor = total

    return total * Local.factor * Reads.factor
"""


def test_the_last_resort_passes_the_locals_an_expression_reads_and_no_more(tmp_path: Path) -> None:
    """A comprehension's own variable is no parameter of the function the expression moves into."""
    path = tmp_path / "moved.py"
    path.write_text(MOVED)
    sources = Sources(read_source)
    (fix,) = fixes_for(broken("GB0811", at(path, "f", 8, "x + sum")), str(path), sources)
    assert fix.proof == "skip" and not fix.safe
    (text,) = applied(fix, sources).values()
    assert (
        "@torch.compiler.disable\ndef _total_eagerly(x, items):\n    return x + sum((a for a, _ in items))\n"
        in (text)
    )
    assert "    total = _total_eagerly(x, items)\n" in text
    ast.parse(text)


def test_a_class_moves_out_of_the_compiled_function_only_when_it_reads_none_of_its_locals(
    tmp_path: Path,
) -> None:
    path = tmp_path / "moved.py"
    path.write_text(MOVED)
    sources = Sources(read_source)
    (fix,) = fixes_for(broken("GB8977", at(path, "f", 9, "class Local")), str(path), sources)
    (text,) = applied(fix, sources).values()
    assert "SCALE = 2\n\n\nclass Local:\n    factor = SCALE\n\n\n@torch.compile\ndef f(" in text
    assert "    class Reads:" in text
    # ``Reads`` reads ``total``, a local of f: it stays, and no fix of its own is offered for it.
    offered = fixes_for(broken("GB8977", at(path, "f", 12, "class Reads")), str(path), sources)
    assert not any(fix.title.startswith("Define class") for fix in offered)


GUARDS = """import torch as T


@T.compile
def f(x, n):
    if n < 0:
        raise ValueError(n)
    elif n == 3:
        raise ValueError(n)
    if 0 < n < 9:
        raise ValueError(n)
    if n > 4:
        x = x * 2
    return x
"""


def test_a_guard_on_a_symbolic_value_gets_torch_check_only_where_it_keeps_the_guards_meaning(
    tmp_path: Path,
) -> None:
    """``torch._check`` of what holds before an ``if`` that raises, on a symbolic value, where torch
    has it: not for a tensor's condition, an ``elif`` (no line of its own before it), a chained
    comparison, or a branch that goes on (its other side would be lost)."""
    path = tmp_path / "guards.py"
    path.write_text(GUARDS)
    sources = Sources(read_source)

    def checks(line: int, snippet: str, context: str = "SymNodeVariable()", check: bool = True) -> list[str]:
        brk = broken("GB0170", at(path, "f", line, snippet))
        cause = dataclasses.replace(brk.cause, context=f"attempted to jump with {context}")
        brk = dataclasses.replace(brk, cause=cause, features=("check",) if check else ())
        offered = fixes_for(brk, str(path), sources)
        return [applied(fix, sources)["guards.py"] for fix in offered if "torch._check" in fix.title]

    (text,) = checks(6, "n < 0")
    assert "def f(x, n):\n    T._check(n >= 0)\n    if n < 0:\n" in text
    assert checks(6, "n < 0", check=False) == []  # a torch without torch._check
    assert checks(6, "n < 0", context="TensorVariable()") == []
    assert checks(8, "n == 3") == []
    assert checks(10, "0 < n < 9") == []
    assert checks(12, "n > 4") == []


HELPERS = """import numpy as np
import torch as T


def scaled(x, *, factor=-0.5, mode="same"):
    return T.from_numpy(np.interp(x.numpy(), [0.0], [1.0])) * factor, x.sum()


def fitted(x, degree: int = 2) -> T.Tensor:
    return T.from_numpy(np.polyfit(np.arange(3), x.numpy(), degree))


def scaled_in_place(x):
    x.mul_(np.interp(0.5, [0.0], [1.0]))
    return x + 1


def spread(x, *rest):
    return T.from_numpy(np.interp(x.numpy(), [0.0], [1.0]))


def picked(x, index=(0, 1)):
    return T.from_numpy(np.interp(x.numpy(), [0.0], [1.0]))


class Net:
    def forward(self, x):
        return T.from_numpy(np.interp(x.numpy(), [0.0], [1.0]))


@T.compile
def f(x):
    return x
"""

INTERP = "np.interp(x.numpy(), [0.0], [1.0])"


def test_a_helper_becomes_a_custom_op_only_where_torch_can_make_one_of_it(tmp_path: Path) -> None:
    """The custom op's header annotates each parameter as written, else by its default's type, else as
    a tensor, and the result as written, else by what it returns; its fake is ``empty_like`` of the
    first tensor parameter where the result is one tensor, else a stub (and the fix says so). No op
    for a method, a function that changes an argument in place, ``*args``, a default of no schema
    type, or a torch without ``torch.library.custom_op``."""
    path = tmp_path / "helpers.py"
    path.write_text(HELPERS)
    sources = Sources(read_source)

    def custom_ops(function: str, line: int, snippet: str, feature: bool = True) -> list[Fix]:
        brk = broken("GB0294", at(path, "f", 33, "x"), at(path, function, line, snippet))
        brk = dataclasses.replace(brk, features=("custom_op",) if feature else ())
        return [fix for fix in fixes_for(brk, str(path), sources) if "custom op" in fix.title]

    (stub,) = custom_ops("scaled", 6, INTERP)  # two results: no fake like an argument
    assert stub.proof == "stub" and not stub.safe and "with a stub of its fake to write" in stub.title
    text = applied(stub, sources)["helpers.py"]
    assert (
        '\n\n@T.library.custom_op("helpers::scaled", mutates_args=())\n'
        'def scaled(x: T.Tensor, *, factor: float = -0.5, mode: str = "same") -> tuple[T.Tensor, T.Tensor]:\n'
        "    return T.from_numpy("
    ) in text
    fake = 'def _scaled_fake(x: T.Tensor, *, factor: float = -0.5, mode: str = "same"):\n'
    assert f"\n\n@scaled.register_fake\n{fake}" in text
    assert (
        '    raise NotImplementedError("the fake implementation of helpers::scaled is to be written")\n'
        in text
    )
    ast.parse(text)
    like, _ = custom_ops("fitted", 10, "np.polyfit(np.arange(3), x.numpy(), degree)")
    assert like.title.startswith(
        "Make fitted the custom op helpers::fitted (torch.library.custom_op), its fake"
    )
    text = applied(like, sources)["helpers.py"]
    assert "def fitted(x: T.Tensor, degree: int = 2) -> T.Tensor:\n" in text
    assert (
        "def _fitted_fake(x: T.Tensor, degree: int = 2):\n    return T.empty_like(x)\n\n\ndef scaled_in"
        in text
    )
    assert custom_ops("fitted", 10, "np.polyfit(np.arange(3), x.numpy(), degree)", feature=False) == []
    assert custom_ops("scaled_in_place", 14, "np.interp(0.5, [0.0], [1.0])") == []
    assert custom_ops("spread", 19, INTERP) == []
    assert custom_ops("picked", 23, INTERP) == []
    assert custom_ops("forward", 28, INTERP) == []


SORTS = """import torch as T


def rank(xs, ys, flip):
    a = T.stack(sorted(xs, key=lambda x: x.norm()))
    b = T.stack(sorted(xs, key=lambda x: x.norm(), reverse=flip))
    c = T.stack(sorted(xs + ys, key=lambda x: x.norm()))
    d = T.cat(sorted(xs, key=lambda x: x.norm()))
    e = T.stack(sorted(xs, key=T.norm))
    return sorted(xs, key=lambda x: x.norm())
"""


def test_a_sort_on_tensor_keys_is_an_argsort_only_when_its_result_is_stacked(tmp_path: Path) -> None:
    """GB0207: ``stack(sorted(name, key=lambda ...))`` only: a non-constant ``reverse``, an expression
    to sort (read twice), a concatenation (its tensors may differ in size), a key other than a
    lambda, a list kept as a list: none is rewritten."""
    path = tmp_path / "sorts.py"
    path.write_text(SORTS)
    sources = Sources(read_source)

    def rewritten(line: int, snippet: str) -> list[str]:
        offered = fixes_for(broken("GB0207", at(path, "rank", line, snippet)), str(path), sources)
        return [applied(fix, sources)["sorts.py"] for fix in offered if fix.title.startswith("Sort with")]

    (text,) = rewritten(5, "sorted(xs, key=lambda x: x.norm())")
    assert "    a = T.stack(xs)[T.stack([x.norm() for x in xs]).argsort(stable=True)]\n" in text
    assert rewritten(6, "sorted(xs, key=lambda x: x.norm(), reverse=flip)") == []
    assert rewritten(7, "sorted(xs + ys, key=lambda x: x.norm())") == []
    assert rewritten(8, "sorted(xs, key=lambda x: x.norm())") == []
    assert rewritten(9, "sorted(xs, key=T.norm)") == []
    assert rewritten(10, "sorted(xs, key=lambda x: x.norm())") == []


MODULES = '''import torch
from torch import nn


class Bare(nn.Module):
    def __init__(self):
        pass  # stateless


class Scaled(torch.nn.Module):
    def __init__(self, factor):
        """A factor."""
        self.factor = factor


class Called(nn.Module):
    def __init__(self):
        nn.Module.__init__(self)


class Mixed(nn.Module, dict):
    def __init__(self):
        pass


class Trained(nn.Module):
    training = False

    def __init__(self):
        pass


def use(x):
    return Bare().forward(x)
'''


def test_an_uninitialised_module_calls_nn_modules_init_where_nothing_else_can_come_first(
    tmp_path: Path,
) -> None:
    """GB0119, the class torch names in the break's context: ``super().__init__()`` first in its
    ``__init__`` (after a docstring, in place of a lone ``pass``), safe; not where it calls an
    ``__init__`` already, has another base, or a class attribute nn.Module's own state would shadow."""
    path = tmp_path / "modules.py"
    path.write_text(MODULES)
    sources = Sources(read_source)

    def initialised(name: str) -> list[tuple[bool, str]]:
        brk = broken("GB0119", at(path, "use", 34, "Bare().forward(x)"))
        brk = dataclasses.replace(brk, cause=dataclasses.replace(brk.cause, context=name))
        offered = [
            fix for fix in fixes_for(brk, str(path), sources) if fix.title.startswith("Call nn.Module")
        ]
        return [(fix.safe, applied(fix, sources)["modules.py"]) for fix in offered]

    ((safe, text),) = initialised("Bare")
    assert safe and "    def __init__(self):\n        super().__init__()  # stateless\n" in text
    ((_, text),) = initialised("__main__.Scaled")
    assert '        """A factor."""\n        super().__init__()\n        self.factor = factor\n' in text
    assert initialised("Called") == initialised("Mixed") == initialised("Trained") == []
    assert initialised("Missing") == []


def test_an_iterable_dynamo_cannot_iterate_is_listed_eagerly(tmp_path: Path) -> None:
    """The last resort for a loop's iterable: the whole of it, as a list, from a function of its own."""
    path = tmp_path / "looped.py"
    path.write_text(
        "import torch\n\nSCALES = map(float, '1 2'.split())\n\n\n@torch.compile\ndef f(x):\n"
        "    for scale in SCALES:\n        x = x * scale\n    return x\n"
    )
    sources = Sources(read_source)
    (fix,) = fixes_for(broken("GB0811", at(path, "f", 8, "for scale in SCALES:")), str(path), sources)
    (text,) = applied(fix, sources).values()
    assert "@torch.compiler.disable\ndef _f_eagerly():\n    return list(SCALES)\n" in text
    assert "    for scale in _f_eagerly():\n" in text


def test_an_iterator_the_module_made_is_listed_where_it_is_made_once(tmp_path: Path) -> None:
    """GB0811 on a loop over a module's ``map``: ``list(...)`` where the module makes it, unsafe (the
    list gives its items at every call); not where the module binds the name twice, nor for a name
    it did not make with an iterator builtin."""

    def listed(text: str) -> list[tuple[bool, str]]:
        path = tmp_path / "looped.py"
        path.write_text(text)
        brk = broken("GB0811", at(path, "f", 8, "SCALES"))
        offered = [fix for fix in fixes_for(brk, str(path), Sources(read_source)) if "a list" in fix.title]
        return [(fix.safe, applied(fix, Sources(read_source))["looped.py"]) for fix in offered]

    made = "import torch\n\nSCALES = map(float, '1 2'.split())\n\n\n@torch.compile\ndef f(x):\n"
    loop = "    for scale in SCALES:\n        x = x * scale\n    return x\n"
    ((safe, text),) = listed(made + loop)
    assert not safe and "SCALES = list(map(float, '1 2'.split()))\n" in text
    assert listed(made + loop + "\n\nSCALES = iter([1.0])\n") == []
    assert listed(made.replace("map(float, '1 2'.split())", "load()") + loop) == []


VIEWS = """import torch


def f(x, weight):
    x.unsqueeze_(0)
    y = weight.clone()
    y.t_()
    x.add_(1)
    return x @ y
"""


def test_an_inputs_view_changed_in_place_is_made_out_of_place() -> None:
    """GB0148 on ``x.unsqueeze_(0)``, ``x`` a parameter: ``x = x.unsqueeze(0)``, unsafe (the caller's
    tensor keeps its shape); not for a tensor the function made, nor an in-place change of data."""
    sources = Sources(read_source)
    path = FIXTURES / "hatches" / "unsqueezed.py"

    def rewritten(where: Path, line: int, snippet: str) -> list[tuple[bool, str]]:
        offered = fixes_for(broken("GB0148", at(where, "scores", line, snippet)), str(where), sources)
        return [
            (fix.safe, applied(fix, sources)[where.name]) for fix in offered if "out of place" in fix.title
        ]

    ((safe, text),) = rewritten(path, 9, "x.unsqueeze_(0)")
    assert not safe and "    x = x.unsqueeze(0)\n    return x @ weight\n" in text
    ast.parse(text)


def test_an_inputs_view_is_not_rewritten_where_it_is_not_the_inputs(tmp_path: Path) -> None:
    path = tmp_path / "views.py"
    path.write_text(VIEWS)
    sources = Sources(read_source)

    def rewritten(line: int, snippet: str) -> list[Fix]:
        offered = fixes_for(broken("GB0148", at(path, "f", line, snippet)), str(path), sources)
        return [fix for fix in offered if "out of place" in fix.title]

    (fix,) = rewritten(5, "x.unsqueeze_(0)")
    assert fix.title.startswith("Make the view out of place, `x = x.unsqueeze(0)`")
    assert rewritten(7, "y.t_()") == []
    assert rewritten(8, "x.add_(1)") == []


LOGGED = """import logging

import torch

log = logging.getLogger(__name__)


def f(x):
    y = x * 2
    log.info("y %s", y)
    log.info("y %s", x)
    log.exception("failed %s", x)
    log.info("y %s", y, stacklevel=2)
    y.add_(1)
    log.info("x %s", x)
    return y
"""


def test_a_loggers_call_goes_through_a_function_of_the_modules_only_where_it_logs_what_it_logged(
    tmp_path: Path,
) -> None:
    """Before torch 2.14 a logger's call is reordered through a function of the module's: not where a
    tensor it logs is changed in place later (Dynamo logs it as it is when the graph ends), nor for
    ``exception`` (it reads the exception being handled), nor with keywords; the function is defined
    once, however many of its calls are fixed."""
    path = tmp_path / "logs.py"
    path.write_text(LOGGED)

    def through_a_function(line: int, snippet: str) -> list[Fix]:
        sources = Sources(read_source)  # the file as it is now
        offered = fixes_for(broken("GB0291", at(path, "f", line, snippet)), str(path), sources)
        return [fix for fix in offered if fix.title.startswith("Log with log_info()")]

    assert through_a_function(10, 'log.info("y %s", y)') == []  # y.add_(1) after it
    (fix,) = through_a_function(11, 'log.info("y %s", x)')
    text = applied(fix, Sources(read_source))["logs.py"]
    assert '    log_info("y %s", x)\n' in text and text.count("def log_info(*args):") == 1
    assert "torch._dynamo.config.reorderable_logging_functions.add(log_info)\n" in text
    assert through_a_function(12, 'log.exception("failed %s", x)') == []
    assert through_a_function(13, 'log.info("y %s", y, stacklevel=2)') == []
    path.write_text(text)  # another call, once the first is fixed: only the call changes
    line = text.splitlines().index('    log.info("x %s", x)') + 1
    (again,) = through_a_function(line, 'log.info("x %s", x)')
    assert [edit.text for edit in again.edits] == ["log_info"]


def test_an_operator_with_no_meta_kernel_gets_a_fake_of_a_data_dependent_size(tmp_path: Path) -> None:
    """GB0037 on an operator the module defines: its fake, after its kernels, a 1-D tensor of its
    first tensor argument's dtype whose length is a size of its own; not for one with two results,
    nor one that has a fake or a meta kernel already (which then does not hold)."""
    path = FIXTURES / "hatches" / "deduped.py"
    sources = Sources(read_source)

    def faked(where: Path, function: str, line: int, snippet: str, op: str) -> list[str]:
        cause = broken("GB0037", at(where, function, line, snippet))
        explanation = (
            f"Operator `{op}.default` does not have a meta kernel that supports dynamic output shapes"
        )
        brk = dataclasses.replace(cause, cause=dataclasses.replace(cause.cause, explanation=explanation))
        offered = fixes_for(brk, str(where), sources)
        return [
            applied(fix, sources)[where.name] for fix in offered if fix.title.startswith("Register the fake")
        ]

    (text,) = faked(path, "distinct_mean", 15, "torch.ops.dedupe.dedupe(x * 2)", "dedupe.dedupe")
    assert (
        'lib.impl("dedupe", lambda x: torch.unique(x), "CPU")\n\n\n'
        '@torch.library.register_fake("dedupe::dedupe")\n'
        "def _dedupe_fake(x):\n"
    ) in text
    assert "    return x.new_empty(torch.library.get_ctx().new_dynamic_size())\n" in text
    ast.parse(text)
    counted = FIXTURES / "hatches" / "counted.py"
    assert faked(counted, "weighted_mean", 16, "torch.ops.counted.counted(x * 2)", "counted.counted") == []
    meta = tmp_path / "deduped.py"
    meta.write_text(
        path.read_text().replace('"CPU")\n', '"CPU")\nlib.impl("dedupe", torch.unique, "Meta")\n')
    )
    assert faked(meta, "distinct_mean", 16, "torch.ops.dedupe.dedupe(x * 2)", "dedupe.dedupe") == []


FITS = """import torch


def f(a, b):
    s = torch.linalg.lstsq(a, b).solution
    t = torch.linalg.lstsq(a, b, driver="gelsd").solution
    u = torch.linalg.lstsq(a, b + 1).solution
    return s, t, u
"""


def test_a_least_squares_fit_is_solved_by_the_pseudo_inverse_only_as_lstsq_solves_it(tmp_path: Path) -> None:
    """GB0037 on ``torch.linalg.lstsq(a, b).solution``: ``torch.linalg.pinv(a) @ b``, unsafe (a
    rank-deficient ``a`` is cut otherwise); not where lstsq is given a driver or a cutoff."""
    path = tmp_path / "fits.py"
    path.write_text(FITS)
    sources = Sources(read_source)

    def rewritten(line: int, snippet: str) -> list[tuple[bool, str]]:
        offered = fixes_for(broken("GB0037", at(path, "f", line, snippet)), str(path), sources)
        return [
            (fix.safe, applied(fix, sources)["fits.py"]) for fix in offered if "pseudo-inverse" in fix.title
        ]

    ((safe, text),) = rewritten(5, "torch.linalg.lstsq(a, b)")
    assert not safe and "    s = torch.linalg.pinv(a) @ b\n" in text
    assert rewritten(6, 'torch.linalg.lstsq(a, b, driver="gelsd")') == []
    ((_, text),) = rewritten(7, "torch.linalg.lstsq(a, b + 1)")
    assert "    u = torch.linalg.pinv(a) @ (b + 1)\n" in text


OPS = """import torch


@torch.library.custom_op("ops::sine", mutates_args=())
def sine(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


@sine.register_fake
def _(y):
    raise NotImplementedError


@torch.library.custom_op("ops::halves", mutates_args=())
def halves(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x[:1].clone(), x[1:].clone()


@halves.register_fake
def _halves_fake(x):
    raise NotImplementedError("to write")


@torch.library.custom_op("ops::cosine", mutates_args=())
def cosine(x: torch.Tensor) -> torch.Tensor:
    return x.cos()


@torch.library.register_fake("ops::cosine")
def _cosine_fake(x):
    \"\"\"To write.\"\"\"
    raise NotImplementedError("to write")


def f(x):
    return sine(x) + halves(x)[0] + cosine(x)
"""


def test_a_custom_ops_fake_left_to_write_is_written_where_its_result_is_like_an_argument(
    tmp_path: Path,
) -> None:
    """GB0087 on a custom op whose fake raises NotImplementedError (the op torch's explanation names):
    ``torch.empty_like`` of the fake's parameter in the place of the op's tensor one, unsafe (the
    proof holds the op to it); not where the op returns two tensors."""
    path = tmp_path / "ops.py"
    path.write_text(OPS)
    sources = Sources(read_source)

    def written(op: str, snippet: str) -> list[tuple[bool, str]]:
        brk = broken("GB0087", at(path, "f", 36, snippet))
        explanation = f"Dynamo failed to run FX node with fake tensors: call_function {op}(*(FakeTensor(...),"
        brk = dataclasses.replace(brk, cause=dataclasses.replace(brk.cause, explanation=explanation))
        offered = fixes_for(brk, str(path), sources)
        return [
            (fix.safe, applied(fix, sources)["ops.py"]) for fix in offered if "Write the fake" in fix.title
        ]

    ((safe, text),) = written("ops.sine", "sine(x)")
    assert not safe and "@sine.register_fake\ndef _(y):\n    return torch.empty_like(y)\n" in text
    ((_, text),) = written("ops.cosine.default", "cosine(x)")
    assert '    """To write."""\n    return torch.empty_like(x)\n' in text
    assert written("ops.halves", "halves(x)") == []
    assert written("ops.missing", "sine(x)") == []


HOISTS = """import random
import time

import torch


@torch.compile
def jitter(x, scale):
    y = x * scale
    noise = random.gauss(0.0, 0.01)
    return y + noise + time.perf_counter() * 0


@torch.compile
def drawn(x, scale):
    if scale > 1:
        return x
    return x + random.random() + random.gauss(scale, 1.0)


@torch.compile
def maybe(x):
    return x + (random.random() if x.shape[0] else 0.0)


@torch.compile
def warmed(x, t):
    gain = random.gauss(t, 1.0)
    return x * gain


@torch.compile
def shifted(x, t):
    return x + random.gauss(t, 1.0)


def caller(x, t):
    a = jitter(x, 2.0) + jitter(x, 3.0) + drawn(x, 1.0) + maybe(x)
    return a + warmed(x, 0.5) + warmed(x, t) + shifted(x, t + 1)


callback = maybe
"""


def test_a_call_dynamo_skips_is_made_where_the_function_is_called_only_where_it_runs_once_there(
    tmp_path: Path,
) -> None:
    """GB0007 in the compiled function's own body: the call becomes a parameter and each call of the
    function in the file passes it (an assignment of it goes, its name the parameter), unsafe; not
    where it reads the function's locals (but a parameter each call gives as a constant or a name),
    runs after a statement that may return first, runs in a conditional expression, or the
    function's name is used otherwise than called."""
    path = tmp_path / "hoists.py"
    path.write_text(HOISTS)
    sources = Sources(read_source)

    def hoisted(function: str, line: int, snippet: str) -> list[tuple[bool, str]]:
        offered = fixes_for(broken("GB0007", at(path, function, line, snippet)), str(path), sources)
        return [
            (fix.safe, applied(fix, sources)["hoists.py"]) for fix in offered if fix.title.startswith("Call")
        ]

    ((safe, text),) = hoisted("jitter", 10, "random.gauss(0.0, 0.01)")
    assert not safe
    assert "def jitter(x, scale, noise):\n    y = x * scale\n    return y + noise" in text
    assert "jitter(x, 2.0, random.gauss(0.0, 0.01)) + jitter(x, 3.0, random.gauss(0.0, 0.01))" in text
    ((_, text),) = hoisted("jitter", 11, "time.perf_counter()")
    assert "def jitter(x, scale, perf_counter):\n" in text
    assert "    return y + noise + perf_counter * 0\n" in text
    assert "jitter(x, 2.0, time.perf_counter())" in text
    ast.parse(text)
    assert hoisted("drawn", 18, "random.random()") == []  # after an early return
    assert hoisted("drawn", 18, "random.gauss(scale, 1.0)") == []  # reads a parameter
    assert hoisted("maybe", 23, "random.random()") == []  # in a conditional, and used as a callback
    # A parameter it reads: each call's argument, a constant or a name; not an expression.
    ((_, text),) = hoisted("warmed", 28, "random.gauss(t, 1.0)")
    assert "def warmed(x, t, gain):\n    return x * gain\n" in text
    assert "warmed(x, 0.5, random.gauss(0.5, 1.0)) + warmed(x, t, random.gauss(t, 1.0))" in text
    assert hoisted("shifted", 34, "random.gauss(t, 1.0)") == []


GENERATOR = """import torch


@torch.compile(fullgraph=False)
def produce(x, *, scale=2):
    yield x + 1
    yield x * scale


"""


def test_a_compiled_generator_is_compiled_through_a_function_that_consumes_it(tmp_path: Path) -> None:
    """GB0003: the generator loses its compile, a compiled ``produce_list`` consumes it, called where
    the generator was consumed whole; refused where any call is ``next()``ed, may stop early, is a
    lazy generator expression's, or the generator is passed on uncalled."""

    def offered(uses: str) -> list[str]:
        path = tmp_path / "produced.py"
        path.write_text(GENERATOR + uses)
        brk = broken("GB0003", at(path, "produce", 5, "produce"))
        sources = Sources(read_source)
        return [applied(fix, sources)["produced.py"] for fix in fixes_for(brk, str(path), sources)]

    (text,) = offered(
        "total = sum(produce(torch.ones(2)))\nfor v in produce(torch.ones(2), scale=3):\n    print(v)\n"
    )
    assert text.startswith(
        "import torch\n\n\ndef produce(x, *, scale=2):\n    yield x + 1\n    yield x * scale\n"
    )
    assert (
        "\n\n@torch.compile(fullgraph=False)\ndef produce_list(x, *, scale=2):\n"
        "    return list(produce(x, scale=scale))\n" in text
    )
    assert (
        "total = sum(produce_list(torch.ones(2)))\nfor v in produce_list(torch.ones(2), scale=3):\n" in text
    )
    assert offered("print([v for v in produce(torch.ones(2))])\n") != []
    assert offered("print(next(produce(torch.ones(2))))\n") == []
    assert offered("for v in produce(torch.ones(2)):\n    break\n") == []
    assert offered("print(any(v.sum() > 0 for v in produce(torch.ones(2))))\n") == []
    assert offered("steps = produce\nprint(list(steps(torch.ones(2))))\n") == []


CHECKED = """import torch


def check(x):
    \"\"\"Rows only.\"\"\"
    assert x.dim() == 2, f"expected rows, got {x.shape}"


@torch.compile
def ratio(x, y, n: int = 1):
    \"\"\"x / y.\"\"\"
    if y.shape != x.shape or n < 0:
        raise ValueError("shapes differ")
    check(x)
    z = x / y
    return z * n
"""


def test_the_leading_checks_of_a_compiled_function_run_before_its_compiled_rest(tmp_path: Path) -> None:
    """GB0088: the checks the body starts with stay in the function, which calls its rest, compiled
    under a new name with every parameter; not where a check reads a tensor's data or what the body
    computed, nor for a break past the checks."""

    def offered(text: str, line: int, snippet: str, gb_id: str = "GB0088") -> list[tuple[Fix, str]]:
        path = tmp_path / "checked.py"
        path.write_text(text)
        sources = Sources(read_source)
        brk = broken(gb_id, at(path, "ratio", line, snippet))
        fixes = [fix for fix in fixes_for(brk, str(path), sources) if "leading" in fix.title]
        return [(fix, applied(fix, sources)["checked.py"]) for fix in fixes]

    ((fix, text),) = offered(CHECKED, 13, "raise")
    assert fix.compiled_as == (("ratio", "_ratio_compiled"),)
    assert fix.title.startswith("Run ratio's leading 2 checks in Python before the compiled code")
    assert (
        'def ratio(x, y, n: int = 1):\n    """x / y."""\n    if y.shape != x.shape or n < 0:\n'
        '        raise ValueError("shapes differ")\n    check(x)\n    return _ratio_compiled(x, y, n)\n\n\n'
        "@torch.compile\ndef _ratio_compiled(x, y, n: int):\n    z = x / y\n    return z * n\n"
    ) in text
    assert "@torch.compile\ndef ratio" not in text
    assert len(offered(CHECKED, 6, "assert", "GB0034")) == 1  # the helper's assert
    assert offered(CHECKED, 15, "x / y") == []  # past the checks
    assert offered(CHECKED.replace("n: int = 1", "n=1"), 13, "raise") == []  # n may be a tensor
    assert offered(CHECKED.replace("y.shape != x.shape", "y.sum() > 0"), 13, "raise") == []
    assert offered(CHECKED.replace("x.dim() == 2", "x.max() < 9"), 6, "assert", "GB0034") == []
    decorated = CHECKED.replace(
        "    z = x / y\n", "    @torch.no_grad()\n    def z():\n        return x / y\n"
    )
    ((_, text),) = offered(decorated.replace("z * n", "z() * n"), 13, "raise")
    assert "def _ratio_compiled(x, y, n: int):\n    @torch.no_grad()\n    def z():\n" in text
    computed = CHECKED.replace('    """x / y."""\n', "    x = x + 1\n")
    assert offered(computed, 13, "raise") == []


TRAILING = """import torch


def rows(y):
    assert y.dim() == 2, "expected rows"


@torch.compile
def grow(x, limit: int = 4):
    \"\"\"x + 1, and its mean.\"\"\"
    y = x + 1
    m = y.mean(0)
    if y.shape[0] > limit or m.dtype != x.dtype:
        raise ValueError("too long")
    rows(y)
    return y, m
"""


def test_the_trailing_checks_of_a_compiled_function_run_after_its_compiled_body(tmp_path: Path) -> None:
    """GB0088: the checks right before ``return NAME, ...`` stay in the function, run in Python on what
    its body, compiled under a new name, returns; not where a check reads a tensor's data or a local
    the function does not return, a parameter the body rebinds, nor where the body may return first,
    the return computes, or a statement follows a check."""

    def offered(text: str, line: int, snippet: str) -> list[tuple[Fix, str]]:
        path = tmp_path / "grown.py"
        path.write_text(text)
        sources = Sources(read_source)
        brk = broken("GB0088", at(path, "grow", line, snippet))
        fixes = [fix for fix in fixes_for(brk, str(path), sources) if "trailing" in fix.title]
        return [(fix, applied(fix, sources)["grown.py"]) for fix in fixes]

    ((fix, text),) = offered(TRAILING, 14, "raise")
    assert fix.compiled_as == (("grow", "_grow_compiled"),) and fix.checked_after == ("_grow_compiled",)
    assert fix.title.startswith("Run grow's trailing 2 checks in Python after the compiled code")
    assert (
        'def grow(x, limit: int = 4):\n    """x + 1, and its mean."""\n    y, m = _grow_compiled(x, limit)\n'
        '    if y.shape[0] > limit or m.dtype != x.dtype:\n        raise ValueError("too long")\n'
        "    rows(y)\n    return y, m\n\n\n@torch.compile\ndef _grow_compiled(x, limit: int):\n"
        "    y = x + 1\n    m = y.mean(0)\n    return y, m\n"
    ) in text
    assert "@torch.compile\ndef grow" not in text
    assert len(offered(TRAILING, 5, "assert")) == 1  # the helper's assert
    assert offered(TRAILING, 11, "x + 1") == []  # before the checks
    assert offered(TRAILING.replace("m.dtype != x.dtype", "m.sum() > 0"), 14, "raise") == []
    assert offered(TRAILING.replace("return y, m", "return y"), 14, "raise") == []  # m is not returned
    assert offered(TRAILING.replace("return y, m", "return y, m + 1"), 14, "raise") == []
    assert offered(TRAILING.replace("    y = x + 1\n", "    x = x + 1\n    y = x\n"), 15, "raise") == []
    assert offered(TRAILING.replace("limit: int = 4", "limit=4"), 14, "raise") == []  # a tensor, maybe
    early = TRAILING.replace(
        "    m = y.mean(0)\n", "    m = y.mean(0)\n    if m is None:\n        return y, m\n"
    )
    assert offered(early, 16, "raise") == []
    after = TRAILING.replace("    rows(y)\n", "    rows(y)\n    y = y * 2\n")
    assert offered(after, 14, "raise") == []


TIMED = """import time
from time import perf_counter as clock

import torch


@torch.compile
def timed_step(x, n: int):
    start = time.perf_counter()
    assert x.dim() == 1, "expected a vector"
    y = x.sin() * n
    m = y.mean()
    elapsed = clock() - start
    return y, m, elapsed >= 0
"""


def test_the_timer_reads_of_a_compiled_function_run_in_python_around_its_compiled_body(
    tmp_path: Path,
) -> None:
    """GB0007 at a timer: the timer reads first in the body run in Python before its compiled body, and
    the ones last, of clocks and those reads only, after it, as the checks beside them; the compiled
    body returns the names the ``return`` returns first. Not where a timer read reads a tensor, sits in
    a branch or a loop, the compiled body reads its name, or the ``return`` computes from a tensor."""

    def offered(text: str, line: int, snippet: str) -> list[tuple[Fix, str]]:
        path = tmp_path / "timed.py"
        path.write_text(text)
        sources = Sources(read_source)
        brk = broken("GB0007", at(path, "timed_step", line, snippet))
        fixes = [fix for fix in fixes_for(brk, str(path), sources) if "timers" in fix.title]
        return [(fix, applied(fix, sources)["timed.py"]) for fix in fixes]

    ((fix, text),) = offered(TIMED, 13, "clock()")
    assert fix.compiled_as == (("timed_step", "_timed_step_compiled"),) and fix.returns_first == 2
    assert fix.checked_after == ()  # the check runs before: what the compiled body returns, nothing reads
    assert fix.title.startswith(
        "Read timed_step's timers and its check in Python around the compiled code, which is its body "
        "between them, compiled as `_timed_step_compiled` and returning `y, m`: they time the call of "
    )
    assert (
        "def timed_step(x, n: int):\n    start = time.perf_counter()\n"
        '    assert x.dim() == 1, "expected a vector"\n    y, m = _timed_step_compiled(x, n)\n'
        "    elapsed = clock() - start\n    return y, m, elapsed >= 0\n\n\n@torch.compile\n"
        "def _timed_step_compiled(x, n: int):\n    y = x.sin() * n\n    m = y.mean()\n    return y, m\n"
    ) in text
    assert "@torch.compile\ndef timed_step" not in text
    assert [f.returns_first for f, _ in offered(TIMED, 9, "time.perf_counter()")] == [2]
    whole = TIMED.replace("return y, m, elapsed >= 0", "return y, m")
    ((fix, text),) = offered(whole, 13, "clock()")
    assert fix.returns_first == 0 and "    y, m = _timed_step_compiled(x, n)\n" in text
    assert offered(TIMED, 11, "x.sin()") == []  # not at a timer
    assert offered(TIMED.replace("clock() - start", "clock() - start + m.item()"), 13, "clock()") == []
    assert offered(TIMED.replace("elapsed >= 0", "elapsed >= m"), 13, "clock()") == []
    assert offered(TIMED.replace("elapsed >= 0", "elapsed, m"), 13, "clock()") == []  # names first
    assert offered(TIMED.replace("x.sin() * n", "x.sin() * start"), 9, "time.perf_counter()") == []
    looped = TIMED.replace(
        "    start = time.perf_counter()\n", "    for _ in range(1):\n        start = clock()\n"
    )
    assert offered(looped, 10, "clock()") == []
    branched = TIMED.replace(
        "    elapsed = clock() - start\n", "    if n:\n        elapsed = clock() - start\n"
    )
    assert offered(branched, 14, "clock()") == []
    # Not a clock of ``time``: the compiled body would read the leading timer's name.
    untimed = TIMED.replace(
        "from time import perf_counter as clock", "from timeit import default_timer as clock"
    )
    assert offered(untimed, 9, "time.perf_counter()") == []
    rebound = TIMED.replace("start = time.perf_counter()", "n = time.perf_counter()")
    assert offered(rebound, 9, "time.perf_counter()") == []  # a parameter the compiled body is passed


SCALED = """import torch


class Scaler:
    \"\"\"Doubles.\"\"\"

    factor = 2

    def __init__(self):
        pass

    def apply(self, x):
        return x * self.factor


@torch.compile
def make(x):
    return x + 1, Scaler().apply
"""


def test_a_bound_method_of_an_object_the_function_made_is_one_of_an_object_made_once_before_it(
    tmp_path: Path,
) -> None:
    """GB0092: ``Scaler().apply`` returned becomes ``_scaler.apply``, made once before the function, where
    the module's class keeps no state; not where it keeps any, takes arguments or is not the module's."""

    def offered(text: str) -> list[tuple[Fix, str]]:
        path = tmp_path / "scaled.py"
        path.write_text(text)
        sources = Sources(read_source)
        line = next(i for i, t in enumerate(text.splitlines(), 1) if t.startswith("    return x + 1"))
        brk = broken("GB0092", at(path, "make", line, "return"))
        fixes = [fix for fix in fixes_for(brk, str(path), sources) if "made once" in fix.title]
        return [(fix, applied(fix, sources)["scaled.py"]) for fix in fixes]

    ((fix, text),) = offered(SCALED)
    assert fix.title == (
        "Return the `apply` of one Scaler made once, before `make`, shared by every call: "
        "Scaler keeps no state"
    )
    assert not fix.safe
    assert (
        "\n\n_scaler = Scaler()\n\n\n@torch.compile\ndef make(x):\n    return x + 1, _scaler.apply\n" in text
    )
    assert offered(SCALED.replace("        pass\n", "        self.calls = 0\n")) == []
    assert offered(SCALED.replace("return x * self.factor", "Scaler.factor += 1\n        return x")) == []
    assert offered(SCALED.replace("    factor = 2\n", "    __slots__ = ('n',)\n")) == []
    assert offered(SCALED.replace("class Scaler:", "class Scaler(dict):")) == []
    assert offered(SCALED.replace("def make(x):", "def make(x, n=2):").replace("Scaler()", "Scaler(n)")) == []
    assert offered(SCALED.replace("class Scaler:", "@dataclasses.dataclass\nclass Scaler:")) == []
    assert offered(SCALED + "\n\nScaler = dict\n") == []
