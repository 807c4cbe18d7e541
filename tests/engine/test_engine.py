"""The core engine against torch's own graph-break log, on real fixture files and the real translator."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gbls.engine.model import BreakReport, FileReport, Location
from gbls.lsp.hover import break_markdown
from gbls.lsp.markdown import Where
from gbls.settings import Settings
from gbls.worker.analysis import hookpoints
from gbls.worker.shared.frames import base_name
from gbls.worker.shared.protocol import EAGER, SPLIT

from ..support import FIXTURES
from ..support.torchlog import LoggedBreak, LoggedCompile, LoggedFrame, logged_breaks, logged_compiles
from ..support.worker import Analyse

ENGINE = FIXTURES / "engine"
TORCH_DIR = os.path.dirname(torch.__file__)
RESUME = "torch_dynamo_resume_in_"
# Python 3.10 never hands a compiled generator's frames to Dynamo (any torch): it runs eagerly, untraced.
GENERATORS = sys.version_info >= (3, 11)


def stripped_columns(path: Path, line: int, start: int, end: int) -> tuple[int, int]:
    text = path.read_text().splitlines()[line - 1]
    indent = len(text) - len(text.lstrip())
    return start - indent, end - indent


def assert_agrees_with_torch(
    report: FileReport, fixture: Path, logged: list[LoggedBreak] | None = None
) -> None:
    """Every break gbls reports is in torch's log at the same place, with the same chain and count;
    ``logged``: torch's log of the fixture run as a script (``torchlog.logged_script``), if it was."""
    logged = logged_breaks(fixture) if logged is None else logged
    registry = hookpoints.registry_ids() or {}
    for brk in report.breaks:
        # A GB id this torch's registry does not have is gbls's, and the break says so.
        from_table = brk.gb_id is not None and registry.get(brk.cause.gb_type) != brk.gb_id
        assert from_table == any("GB id is from gbls's table" in gap for gap in brk.cause.gaps), brk
        where = Where(str(fixture), str(fixture.parent))
        assert all(gap in break_markdown(brk, None, where) for gap in brk.cause.gaps)  # the hover says it
        if brk.effect == EAGER and not brk.chain[0].span.column:
            continue  # a frame refused before its first instruction has no traceback in the log
        root = brk.root
        at_root = [e for e in logged if root_of(e) == (root.path, root.span.line) and same_break(brk, e)]
        if not at_root and brk.effect == EAGER and gave_up_at(fixture, brk):
            continue  # Dynamo gave up on the frame without logging a graph break (as torch 2.6 often does)
        assert at_root, f"{brk.gb_id} at {root.path}:{root.span.line} is not in torch's log"
        # Above the compiled function the log shows the module's call site and nn.Module's call
        # machinery, nor are its eager callers (``main()``) or torch's frames below it (a polyfill).
        stacks = [
            (entry, from_compiled(brk, user_frames(entry.stack))) for entry in at_root if not entry.suppressed
        ]
        full = [(entry, stack) for entry, stack in stacks if stack]
        if not full:
            # torch prints a stack once per place; a second compiled function reaching the same
            # helper gets "user stack suppressed": its chain is asserted by the test itself.
            assert any(entry.suppressed for entry in at_root), (
                [(loc.function, loc.span.line) for loc in brk.chain],
                [[(f.function, f.line) for f in entry.stack] for entry in at_root],
            )
            continue
        # One break can be logged on several paths to its root (a callee translated in its caller's
        # frame, then in its own): one of them is exactly our chain, as torch prints chains (consecutive
        # frames of one name folded) or frame by frame.
        chains = [list(brk.chain), as_torch_prints(brk.chain)]
        on_our_path = [
            (entry, stack, chain)
            for entry, stack in full
            for chain in chains
            if [(f.path, f.function, f.line) for f in stack]
            == [(loc.path, loc.function, loc.span.line) for loc in chain]
        ]
        assert on_our_path, f"{brk.gb_id}: no chain in torch's log is {as_torch_prints(brk.chain)}"
        # torch 2.10 records a frame it cannot resume in without its message: prefer one that has it.
        first, stack, chain = next(
            ((e, s, c) for e, s, c in on_our_path if e.explanations or e.text), on_our_path[0]
        )
        if first.explanations or first.text:
            # What the hover and the JSON say is what torch printed (but for object addresses).
            said = first.explanations[0] if first.explanations else first.text
            assert printed(brk.cause.explanation) == printed(said)
            ours = [printed(hint) for hint in brk.cause.hints]
            assert ours == [printed(hint) for hint in first.hints[: len(ours)]] and (ours or not first.hints)
        for frame, location in zip(stack, chain, strict=True):
            span = location.span
            if frame.carets is not None:
                start, end = stripped_columns(Path(location.path), span.line, span.column, span.end_column)
                # Dynamo's frames have no end line, so Python 3.11 draws their carets to the end of the
                # line: the start is exact, the end only bounds ours (span_text checks it exactly).
                assert frame.carets[0] == start
                assert end <= frame.carets[1] or span.end_line > span.line
        assert brk.count == count_in_log(logged, first)


def assert_same_roots(report: FileReport, logged: list[LoggedBreak]) -> None:
    """gbls reports a break at every root cause torch logged, and at no other."""
    ours = {(brk.root.path, brk.root.span.line) for brk in report.breaks}
    assert ours == {root_of(entry) for entry in logged}


def gave_up_at(fixture: Path, brk: BreakReport) -> list[LoggedCompile]:
    """The compilations whose metrics say Dynamo gave up on the frame at the break's root, for its reason."""
    root = (brk.root.path, brk.root.span.line)
    said = {printed(brk.cause.explanation), printed(brk.cause.gb_type)}
    return [
        compile
        for compile in logged_compiles(fixture)
        if not compile.guarded and compile.failed_at == root and printed(compile.failure) in said
    ]


def same_break(brk: BreakReport, entry: LoggedBreak) -> bool:
    """Whether torch logged this break: by GB id where its log prints them (2.9+; 2.9-2.10 not for
    every break), else by gb_type (2.7+), else by the one-line text it printed (2.6)."""
    if entry.gb_ids:
        return brk.gb_id in entry.gb_ids
    if entry.gb_types:
        return brk.cause.gb_type in entry.gb_types
    if entry.skipped and not entry.text:
        return True  # torch said only that it gave up on the frame there (2.10)
    return printed(brk.cause.explanation) == printed(entry.text)


def user_frames(stack: list[LoggedFrame]) -> list[LoggedFrame]:
    """The frames of a logged stack that are the user's, a frame left twice by a folded one once, and
    a resume function as the function it resumes (torch 2.6 prints its own name)."""
    kept: list[LoggedFrame] = []
    for frame in stack:
        if frame.function == "<module>" or frame.path.startswith(TORCH_DIR):
            continue
        if (
            kept
            and frame.function.startswith(RESUME)
            and (kept[-1].path, kept[-1].function)
            == (
                frame.path,
                base_name(frame.function),
            )
        ):
            kept.pop()  # the generated code that calls the resume function
        frame = replace(frame, function=base_name(frame.function))
        if kept and (kept[-1].path, kept[-1].function, kept[-1].line) == (
            frame.path,
            frame.function,
            frame.line,
        ):
            continue
        kept.append(frame)
    return kept


def root_of(entry: LoggedBreak) -> tuple[str, int]:
    """Where a logged break's cause is in the user's code: the innermost frame of its stack (torch
    logs a nested graph break "at" the frame that splits), torch's own frames below it (a polyfill
    of ``sum``, a context manager's wrapper) not part of a chain."""
    users = [frame for frame in entry.stack if not frame.path.startswith(TORCH_DIR)]
    return (users[-1].path, users[-1].line) if users else entry.at


def from_compiled(brk: BreakReport, stack: list[LoggedFrame]) -> list[LoggedFrame]:
    """The logged stack from where the compiled function's graph splits down: its eager callers
    (``main()``) are not part of the chain. Its first frame may be folded into the next of its name
    as torch prints stacks (a library's two decorators' ``wrapper``s)."""
    for first in (brk.chain[0], as_torch_prints(brk.chain)[0]):
        for index, frame in enumerate(stack):
            if (frame.path, frame.function, frame.line) == (first.path, first.function, first.span.line):
                return stack[index:]
    return []


def as_torch_prints(chain: tuple[Location, ...]) -> list[Location]:
    """The chain as torch's log prints it: it folds consecutive frames of one name into the last (meant
    for resume functions, it also folds two different ``wrapper``s of a library's decorators)."""
    folded: list[Location] = []
    for location in chain:
        if folded and folded[-1].function == location.function:
            folded[-1] = location
        else:
            folded.append(location)
    return folded


def printed(text: str) -> str:
    """The first line of a message, with object addresses (different in each run) taken out."""
    return re.sub(r"0x[0-9a-f]+", "0x…", text.splitlines()[0] if text else "").strip()


def count_in_log(logged: list[LoggedBreak], first: LoggedBreak) -> int:
    """Compilations of the frame that first logged the break: recompiles count, re-entries do not."""
    return len({e.compile_id for e in logged if e.frame_id == first.frame_id and e.at == first.at})


def only(report: FileReport, function: str) -> BreakReport:
    found = [b for b in report.breaks if b.function == function]
    assert len(found) == 1, found
    return found[0]


def summary(report: FileReport, qualname: str):  # type: ignore[no-untyped-def]
    return next(f for f in report.functions if f.qualname == qualname)


def span_text(path: Path, brk: BreakReport) -> str:
    """The code the break sits on: its root cause, in the file it belongs to (``path``)."""
    span = brk.span
    assert span.line == span.end_line and brk.path == str(path)
    return path.read_text().splitlines()[span.line - 1][span.column : span.end_column]


def split_text(path: Path, brk: BreakReport) -> str:
    """The code where the compiled function's graph splits (in ``path``)."""
    split = brk.splits_at
    assert split.span.line == split.span.end_line and split.path == str(path)
    return path.read_text().splitlines()[split.span.line - 1][split.span.column : split.span.end_column]


async def test_print_in_compiled_body(analyse_file: Analyse) -> None:
    fixture = ENGINE / "print_body.py"
    report = await analyse_file(fixture)
    brk = only(report, "scale")
    assert (brk.gb_id, brk.gb_type, brk.count, brk.effect) == (
        "GB0059",
        "Failed to trace builtin operator",
        1,
        SPLIT,
    )
    assert brk.url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html"
    assert (brk.span.line, brk.span.column, brk.span.end_column) == (7, 4, 29)
    assert span_text(fixture, brk) == 'print("scaling", y.shape)'
    assert brk.reason == "print" and brk.via == ()
    assert "print" in brk.cause.explanation
    assert bool(brk.cause.hints) == any(entry.hints for entry in logged_breaks(fixture))  # none in torch 2.6
    scale = summary(report, "scale")
    assert (scale.analysed, scale.target.input_source, scale.target.inputs) == (True, "module", "x: f32[4]")
    assert (len(scale.graphs), scale.ops, scale.breaks) == (2, 2, 1)
    assert_agrees_with_torch(report, fixture)


async def test_break_two_calls_deep_is_one_root_cause_at_the_print_beside_its_split(
    analyse_file: Analyse,
) -> None:
    fixture = ENGINE / "deep_helpers.py"
    report = await analyse_file(fixture)
    assert len(report.breaks) == 1
    brk = only(report, "g")
    assert brk.via == ("normalize", "log_stats") and brk.count == 1
    assert span_text(fixture, brk) == 'print("mean", x.mean())'
    assert split_text(fixture, brk) == "normalize(y)"
    assert [(loc.function, loc.span.line) for loc in brk.chain] == [
        ("g", 17),
        ("normalize", 11),
        ("log_stats", 5),
    ]
    assert brk.message == "Failed to trace builtin operator (print) (via normalize → log_stats)"
    # The graphs of the re-entered callees run inside g's call, so they are g's.
    assert {graph.frame for graph in summary(report, "g").graphs} == {"g", "normalize", "log_stats"}
    assert_agrees_with_torch(report, fixture)


async def test_break_through_a_helper_in_another_module(analyse_file: Analyse) -> None:
    fixture = ENGINE / "cross_module.py"
    report = await analyse_file(fixture)
    brk = only(report, "uses_lib")
    lib = str(ENGINE / "helpers_lib.py")
    assert [(loc.path, loc.function, loc.span.line) for loc in brk.chain] == [
        (str(fixture), "uses_lib", 9),
        (lib, "via_lib", 7),
        (lib, "report", 2),
    ]
    # The print belongs to helpers_lib.py, where it is; uses_lib's graph splits at via_lib(y).
    assert span_text(ENGINE / "helpers_lib.py", brk).startswith("print(")
    assert split_text(fixture, brk) == "via_lib(y)"
    assert brk.root.span == brk.chain[-1].span == brk.span and brk.root.span.column == 4
    assert_agrees_with_torch(report, fixture)


async def test_branch_then_item_are_two_breaks_in_the_original_function(analyse_file: Analyse) -> None:
    fixture = ENGINE / "branch_item.py"
    report = await analyse_file(fixture)
    assert [(b.function, b.gb_id, b.span.line) for b in report.breaks] == [
        ("branchy", "GB0170", 6),
        ("branchy", "GB0124", 8),
    ]
    branch, item = report.breaks
    assert span_text(fixture, branch) == "x.sum() > 0" and branch.reason == "x.sum() > 0"
    assert span_text(fixture, item) == "x.sum().item()" and item.reason == "x.sum().item"
    assert [loc.function for loc in item.chain] == ["branchy"]  # the resume function maps back
    assert_agrees_with_torch(report, fixture)


async def test_explicit_graph_break(analyse_file: Analyse) -> None:
    fixture = ENGINE / "explicit_break.py"
    report = await analyse_file(fixture)
    brk = only(report, "split")
    assert (brk.gb_id, brk.span.line) == ("GB0025", 8)
    assert span_text(fixture, brk) == "torch._dynamo.graph_break()"
    assert_agrees_with_torch(report, fixture)


async def test_disabled_callee(analyse_file: Analyse) -> None:
    fixture = ENGINE / "disabled_callee.py"
    report = await analyse_file(fixture)
    brk = only(report, "uses_disabled")
    assert (brk.gb_id, brk.span.line) == ("GB0098", 11) and brk.reason == "eager_only"
    assert span_text(fixture, brk) == "eager_only(x * 2)"
    assert_agrees_with_torch(report, fixture)


async def test_dynamic_shape_operator(analyse_file: Analyse) -> None:
    fixture = ENGINE / "dynamic_shapes.py"
    report = await analyse_file(fixture)
    brk = only(report, "positives")
    assert (brk.gb_id, brk.gb_type, brk.reason) == ("GB0036", "Dynamic shape operator", "torch.nonzero")
    assert_agrees_with_torch(report, fixture)


async def test_compiled_modules(analyse_file: Analyse) -> None:
    fixture = ENGINE / "compiled_module.py"
    report = await analyse_file(fixture)
    assert [(b.function, b.gb_id, b.span.line) for b in report.breaks] == [
        ("Net", "GB0059", 12),
        ("Decorated.forward", "GB0025", 24),
    ]
    net = summary(report, "Net")
    assert (net.kind, net.analysed, net.target.inputs, net.line) == ("module", True, "x: f32[2, 8]", 28)
    assert summary(report, "Decorated.forward").kind == "method"
    assert_agrees_with_torch(report, fixture)


async def test_module_compile_method(analyse_file: Analyse) -> None:
    fixture = ENGINE / "method_compile.py"
    report = await analyse_file(fixture)
    brk = only(report, "Block")
    assert (brk.gb_id, brk.span.line) == ("GB0036", 12) and span_text(fixture, brk) == "y.nonzero()"
    assert_agrees_with_torch(report, fixture)


async def test_aliases_are_all_found_and_re_compile_is_not(analyse_file: Analyse) -> None:
    fixture = ENGINE / "aliases.py"
    report = await analyse_file(fixture)
    assert [(f.qualname, f.analysed) for f in report.functions] == [
        ("via_factory", True),
        ("via_module_alias", True),
        ("via_import_alias", True),
        ("plain", True),
    ]
    assert [(b.function, b.gb_id) for b in report.breaks] == [
        ("via_factory", "GB0059"),
        ("via_module_alias", "GB0124"),
        ("via_import_alias", "GB0025"),
        ("plain", "GB0036"),
    ]
    assert_agrees_with_torch(report, fixture)


async def test_uncalled_functions_get_inputs_or_a_reason(analyse_file: Analyse) -> None:
    report = await analyse_file(ENGINE / "uncalled.py")
    annotated = summary(report, "annotated")
    assert (annotated.analysed, annotated.target.input_source) == (True, "synthesized")
    assert annotated.target.inputs == "x: f32[8], scale: 0.5"
    declared = summary(report, "declared")
    assert (declared.analysed, declared.target.input_source, declared.target.inputs) == (
        True,
        "example",
        "x: f32[4, 6], n: 2",
    )
    assert [(b.function, b.gb_id) for b in report.breaks] == [("annotated", "GB0170"), ("declared", "GB0059")]
    matrix = summary(report, "needs_matrix")
    assert not matrix.analysed
    assert "inputs invalid" in matrix.reason and "# gbls: example(...)" in matrix.reason
    bad = summary(report, "bad_example")
    assert not bad.analysed and "example at line 25" in bad.reason and "inputs invalid" in bad.reason
    assert report.status == "ok"


async def test_clean_function_has_one_graph_and_no_break(analyse_file: Analyse) -> None:
    report = await analyse_file(ENGINE / "clean.py")
    assert report.breaks == ()
    fused = summary(report, "fused")
    assert (fused.analysed, len(fused.graphs), fused.breaks, fused.ops) == (True, 1, 0, 4)
    assert logged_breaks(ENGINE / "clean.py") == []


async def test_frames_dropped_to_eager_are_reported_as_such(analyse_file: Analyse) -> None:
    fixture = ENGINE / "loop_break.py"
    report = await analyse_file(fixture)
    if not GENERATORS:
        (loop,) = report.breaks
        assert "generator function" in summary(report, "generate").reason
    else:
        loop, generator = report.breaks
    assert (loop.function, loop.gb_id, loop.effect, loop.span.line) == ("loopy", "GB0059", EAGER, 7)
    assert loop.cause.eager_reason.startswith("graph break in loop")
    assert "runs entirely in eager mode" in loop.message
    assert summary(report, "loopy").graphs == ()
    assert_agrees_with_torch(report, fixture)
    if not GENERATORS:
        return
    assert (generator.function, generator.gb_type, generator.effect) == (
        "generate",
        "Attempt to trace generator",
        EAGER,
    )
    assert (generator.span.line, span_text(fixture, generator)) == (13, "generate")


async def test_helper_reached_from_two_compiled_functions_is_one_root_cause(analyse_file: Analyse) -> None:
    fixture = ENGINE / "two_callers.py"
    report = await analyse_file(fixture)
    # One print, one break: the first function's split, the second's chain one of its paths.
    (brk,) = report.breaks
    assert (brk.function, brk.functions, brk.via, brk.span.line, brk.splits_at.span.line, brk.count) == (
        "first",
        ("first", "second"),
        ("middle", "shared"),
        5,
        15,
        1,
    )
    assert [[(loc.function, loc.span.line) for loc in path] for path in brk.paths] == [
        [("second", 21), ("middle", 10), ("shared", 5)]
    ]
    assert [(f.qualname, f.breaks) for f in report.functions] == [("first", 1), ("second", 1)]
    assert brk.message.endswith("(via middle → shared); also reached from second")
    assert_agrees_with_torch(report, fixture)


async def test_recompiles_count_the_same_root_cause(analyse_file: Analyse) -> None:
    fixture = ENGINE / "recompile.py"
    report = await analyse_file(fixture)
    assert only(report, "twice").count == 2
    assert_agrees_with_torch(report, fixture)


async def test_user_output_is_captured_not_printed(
    analyse_file: Analyse, capfd: pytest.CaptureFixture[str]
) -> None:
    report = await analyse_file(ENGINE / "output_noise.py")
    assert "module says hello" in report.output and "module complains" in report.output
    assert "inside compiled" in report.output
    out, err = capfd.readouterr()
    assert "module says hello" not in out + err


async def test_syntax_error_is_reported_where_it_is(analyse_file: Analyse) -> None:
    report = await analyse_file(ENGINE / "syntax_error.py")
    assert (report.status, report.failure_kind) == ("error", "syntax")
    assert report.message.startswith("SyntaxError")
    assert report.failure_span is not None and report.failure_span.line == 5


async def test_breaks_before_the_module_raised_are_kept(analyse_file: Analyse) -> None:
    report = await analyse_file(ENGINE / "raises_after_break.py")
    assert (report.status, report.failure_kind) == ("error", "raised")
    assert report.failure_span is not None and report.failure_span.line == 11
    assert [b.gb_id for b in report.breaks] == ["GB0059"]


async def test_unsaved_buffer_text_is_analysed(analyse_file: Analyse) -> None:
    fixture = ENGINE / "clean.py"
    edited = fixture.read_text().replace("z = x * y + 1", "z = x * y + 1\n    print(z)")
    report = await analyse_file(fixture, source=edited)
    assert [(b.gb_id, b.span.line) for b in report.breaks] == [("GB0059", 7)]


async def test_each_analysis_sees_a_fresh_sibling_module(analyse_file: Analyse, tmp_path: Path) -> None:
    sibling = tmp_path / "sibling.py"
    main = tmp_path / "main.py"
    main.write_text(
        "import torch\nfrom sibling import step\n\n\n"
        "@torch.compile\ndef run(x):\n    return step(x)\n\n\nrun(torch.randn(2))\n"
    )
    sibling.write_text("def step(x):\n    return x + 1\n")
    assert (await analyse_file(main)).breaks == ()
    # Same size, same second: a .pyc check by mtime and size would miss this edit.
    sibling.write_text("def step(x):\n    print(x)\n    return x\n")
    report = await analyse_file(main)
    assert [(b.gb_id, b.via) for b in report.breaks] == [("GB0059", ("step",))]


async def test_targets_compiled_where_nothing_runs_them_are_analysed_anyway(analyse_file: Analyse) -> None:
    fixture = ENGINE / "main_block.py"
    report = await analyse_file(fixture, settings=Settings(run_main=False))
    tower, step = report.functions
    assert (tower.qualname, tower.kind, tower.analysed, tower.target.input_source, tower.target.inputs) == (
        "Tower",
        "module",
        True,
        "synthesized",
        "x: f32[2, 16]",  # the first layer is Linear(16, 8)
    )
    assert (step.qualname, step.analysed, step.target.input_source) == ("step", True, "synthesized")
    assert [(b.function, b.gb_id) for b in report.breaks] == [("Tower", "GB0170"), ("step", "GB0059")]
    # The print call spans four lines: the span does too.
    printed = report.breaks[1]
    span = printed.span
    assert (span.line, span.column, span.end_line, span.end_column) == (19, 4, 22, 5)


async def test_the_main_block_runs_by_default(analyse_file: Analyse) -> None:
    fixture = ENGINE / "main_block.py"
    report = await analyse_file(fixture)
    assert [(f.qualname, f.target.input_source, f.target.inputs) for f in report.functions] == [
        ("Tower", "module", "x: f32[4, 16]"),
        ("step", "module", "x: f32[5]"),
    ]
    assert [(b.function, b.gb_id) for b in report.breaks] == [("Tower", "GB0170"), ("step", "GB0059")]
    assert_agrees_with_torch(report, fixture)


async def test_without_run_main_the_remedy_is_named(analyse_file: Analyse) -> None:
    """A function only main() calls, whose shapes no synthesized input fits: never "clean"."""
    fixture = ENGINE / "main_decorated.py"
    off = await analyse_file(fixture, settings=Settings(run_main=False))
    (project,) = off.functions
    assert not project.analysed and off.breaks == ()
    assert "no synthesized input worked" in project.reason
    assert "turn on the runMain setting (`gbls check --run-main`)" in project.reason
    assert "# gbls: example(...)" in project.reason
    on = await analyse_file(fixture)
    (project,) = on.functions
    assert (project.analysed, project.target.inputs) == (True, "x: f32[4, 5]")
    assert [(b.function, b.gb_id, b.span.line) for b in on.breaks] == [("project", "GB0059", 7)]
    assert_agrees_with_torch(on, fixture)


async def test_columns_count_characters_not_bytes(analyse_file: Analyse) -> None:
    fixture = ENGINE / "unicode_columns.py"
    report = await analyse_file(fixture)
    brk = only(report, "naïve")
    # Dynamo reports UTF-8 byte offsets (ï is 2 bytes, 🚀 is 4): the span is in characters.
    assert (brk.span.line, brk.span.column, brk.span.end_column) == (6, 23, 38)
    assert span_text(fixture, brk) == "print(label, x)"
