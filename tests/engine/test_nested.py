"""Dynamo as users configure it: nested graph breaks, ``fullgraph=True`` and ``error_on_graph_break``,
each checked against what torch itself does with the same program: its graph-break log, its
compilation records, the graphs it hands a backend, and what the program raises under plain Python.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from lsprotocol import types as lsp

from gbls.engine import views
from gbls.engine.model import BreakReport, FileReport
from gbls.formats import common, text
from gbls.lsp.diagnostics import file_diagnostics
from gbls.lsp.hover import break_markdown
from gbls.lsp.markdown import Where
from gbls.worker.shared.frames import base_name
from gbls.worker.shared.protocol import SPLIT

from ..support import FIXTURES
from ..support.torchlog import logged_breaks, logged_compiles
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, root_of

NESTED = FIXTURES / "nested"
RAISING = FIXTURES / "raising"
# Feature detection, as gbls's worker does it (torch 2.9 has the flag and the context manager, 2.10
# disable_nested_graph_breaks).
HAS_NESTED = hasattr(torch._dynamo.config, "nested_graph_breaks")
HAS_ERROR_ON_GRAPH_BREAK = hasattr(torch._dynamo, "error_on_graph_break")
needs_nested = pytest.mark.skipif(not HAS_NESTED, reason="this torch has no nested graph breaks")
HAS_DISABLE_NESTED = hasattr(torch._dynamo, "disable_nested_graph_breaks")

GRAPHS = "=== graphs: "
# The program under plain Python, every torch.compile on a backend that counts each graph's ops and
# runs it as is; then the name of the frame each graph came from, from Dynamo's compilation metrics.
GRAPH_RUNNER = r"""
import json, runpy, sys, torch, torch._dynamo.utils as utils
counted = []
def counting(gm, example_inputs):
    compile_id = str(torch._guards.CompileContext.current_compile_id())
    calls = ("call_function", "call_method", "call_module")
    counted.append((compile_id, sum(node.op in calls for node in gm.graph.nodes)))
    return gm.forward
original = torch.compile
def compile(model=None, **options):
    options["backend"] = counting
    return original(model, **options) if model is not None else lambda actual: original(actual, **options)
torch.compile = compile
try:
    runpy.run_path(sys.argv[1], run_name="__main__")
finally:
    codes = {str(m.compile_id): [m.co_filename, m.co_name] for m in utils.get_compilation_metrics()}
    print(MARKER + json.dumps([[*codes[compile_id], ops] for compile_id, ops in counted]))
"""


def dynamo_graphs(path: Path) -> list[tuple[str, int]]:
    """(frame, ops) of each graph Dynamo made of ``path``'s code running it as ``python path`` does
    (not of torch's own wrappers), frames named as the user wrote them (a resume function as its
    function)."""
    completed = subprocess.run(
        [sys.executable, "-c", f"MARKER = {GRAPHS!r}\n" + GRAPH_RUNNER, str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = next(line for line in completed.stdout.splitlines() if line.startswith(GRAPHS))
    found = json.loads(line[len(GRAPHS) :])
    return [(base_name(frame), ops) for file, frame, ops in found if file == str(path)]


def gbls_graphs(report: FileReport, qualname: str) -> list[tuple[str, int]]:
    function = next(f for f in report.functions if f.qualname == qualname)
    return [(graph.frame, graph.ops) for graph in function.graphs]


def only(report: FileReport) -> BreakReport:
    (brk,) = report.breaks
    return brk


def assert_split_as_torch_logs(brk: BreakReport, fixture: Path) -> None:
    """torch logs a break "in user code at" the line of the frame that splits, when that is a callee
    Dynamo resumed in (a nested graph break), else at its root cause."""
    at = brk.split_frame if brk.nested else brk.root
    logged = [entry.at for entry in logged_breaks(fixture) if not entry.skipped]
    assert (at.path, at.span.line) in logged, (at, logged)


@needs_nested
async def test_the_readme_example_splits_at_the_print(analyse_file: Analyse) -> None:
    fixture = NESTED / "readme.py"
    report = await analyse_file(fixture)
    brk = only(report)
    assert [(loc.function, loc.span.line) for loc in brk.chain] == [
        ("preprocess", 21),
        ("normalize", 15),
        ("log_stats", 9),
    ]
    # The split is where the cause is: the squiggle is on the print, not on normalize(y).
    assert brk.cause.split == 2 and brk.split_frame == brk.root and brk.span == brk.root.span
    assert brk.split is None  # no other place to point to
    assert brk.effect == SPLIT
    assert brk.message == (
        "Failed to trace builtin operator (print) (via normalize → log_stats); nested graph break: "
        "splits in log_stats, keeping the code of preprocess → normalize in the graphs"
    )
    hover = break_markdown(brk, None, Where(brk.path, str(FIXTURES)))
    assert "Nested graph break: the graph splits in log_stats" in hover and "splits at step 3" in hover
    assert_agrees_with_torch(report, fixture)
    assert_split_as_torch_logs(brk, fixture)
    # Dynamo compiled the function and its resume function only: no callee became a frame of its own.
    assert {base_name(c.function) for c in logged_compiles(fixture)} == {"preprocess"}
    graphs = gbls_graphs(report, "preprocess")
    assert graphs == dynamo_graphs(fixture) and len(graphs) == 2


@needs_nested
async def test_the_same_ops_in_fewer_graphs_than_without_the_flag(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    fixture = NESTED / "readme.py"
    flat = tmp_path / "readme_flat.py"
    flat.write_text(fixture.read_text().replace("nested_graph_breaks = True", "nested_graph_breaks = False"))
    nested, without = await analyse_file(fixture), await analyse_file(flat)
    assert only(without).cause.split == 0 and only(without).splits_at.span.line == 21  # on normalize(y)
    nested_graphs, flat_graphs = gbls_graphs(nested, "preprocess"), gbls_graphs(without, "preprocess")
    assert flat_graphs == dynamo_graphs(flat) and len(flat_graphs) > len(nested_graphs)
    assert sum(ops for _, ops in flat_graphs) == sum(ops for _, ops in nested_graphs)


@needs_nested
async def test_a_break_in_a_callees_loop_splits_in_its_caller(analyse_file: Analyse) -> None:
    fixture = NESTED / "loop_callee.py"
    report = await analyse_file(fixture)
    brk = only(report)
    assert [(loc.function, loc.span.line) for loc in brk.chain] == [
        ("run", 23),
        ("scale", 17),
        ("accumulate", 10),
    ]
    # accumulate cannot resume inside its loop: scale can, at its call of accumulate.
    assert brk.cause.split == 1 and (brk.splits_at.function, brk.splits_at.span.line) == ("scale", 17)
    assert brk.span.line == 10  # the break itself is on its root cause
    assert brk.effect == SPLIT
    assert_agrees_with_torch(report, fixture)
    assert_split_as_torch_logs(brk, fixture)
    # accumulate itself runs eagerly, as a frame of its own: Dynamo made no code, no graph of it.
    assert [c.guarded for c in logged_compiles(fixture) if c.function == "accumulate"] == [False]
    assert gbls_graphs(report, "run") == dynamo_graphs(fixture) == [("run", 2), ("run", 2)]


@pytest.mark.skipif(not HAS_DISABLE_NESTED, reason="this torch has no disable_nested_graph_breaks")
async def test_a_callee_that_disables_nested_breaks_splits_the_compiled_function(
    analyse_file: Analyse,
) -> None:
    fixture = NESTED / "disabled_callee.py"
    report = await analyse_file(fixture)
    brk = only(report)
    assert [(loc.function, loc.span.line) for loc in brk.chain] == [
        ("guarded", 22),
        ("normalize", 16),
        ("log_stats", 9),
    ]
    assert brk.cause.split == 0 and not brk.nested and brk.splits_at.span.line == 22  # on normalize(y)
    assert brk.span.line == 9  # the break itself is on its root cause
    assert "nested" not in brk.message
    assert_agrees_with_torch(report, fixture)
    assert_split_as_torch_logs(brk, fixture)
    # Each callee, re-entered after the split, is a frame of its own again, its graphs run in guarded's call.
    graphs = gbls_graphs(report, "guarded")
    assert graphs == dynamo_graphs(fixture) and {frame for frame, _ in graphs} > {"guarded"}


def raised_at(path: Path) -> tuple[str, int]:
    """What ``python path`` raises: the exception's first line, and the line of ``path`` it names last."""
    completed = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 1, completed.stderr
    raised = next(line for line in completed.stderr.splitlines() if line.startswith("torch._dynamo.exc."))
    lines = re.findall(rf'File "{re.escape(str(path))}", line (\d+)', completed.stderr)
    return raised, int(lines[-1])


async def assert_breaks_as_without_the_flag(report: FileReport, fixture: Path, flat: Path) -> None:
    """The analysis goes on past a raising break as the program does without the flag: the same
    breaks, at the same places, as torch logs for it."""
    flat.write_text(
        fixture.read_text()
        .replace("fullgraph=True", "fullgraph=False")
        .replace("error_on_graph_break(True)", "error_on_graph_break(False)")
    )
    logged = [entry for entry in logged_breaks(flat) if not entry.suppressed]
    lines = sorted(brk.root.span.line for brk in report.breaks)
    assert sorted(root_of(entry)[1] for entry in logged) == lines
    for entry in logged:  # by GB id where torch's log prints them (2.9+)
        assert not entry.gb_ids or any(
            brk.gb_id in entry.gb_ids for brk in report.breaks if brk.root.span.line == root_of(entry)[1]
        )


async def test_a_break_under_fullgraph_raises(analyse_file: Analyse, tmp_path: Path) -> None:
    fixture = RAISING / "fullgraph.py"
    report = await analyse_file(fixture)
    strict, relaxed = report.breaks
    raised, line = raised_at(fixture)
    assert raised.startswith("torch._dynamo.exc.Unsupported") and line == strict.span.line == 9
    assert (strict.function, strict.cause.raises, strict.raises) == (
        "strict",
        "fullgraph",
        "fullgraph=True: this break raises at run time",
    )
    assert strict.message.startswith("fullgraph=True: this break raises at run time: ")
    # The program stops at strict's break; without the flag it goes on to relaxed's, and so does gbls.
    assert (relaxed.function, relaxed.cause.raises, relaxed.raises) == ("relaxed", "", "")
    lines = fixture.read_text().splitlines()
    view = views.by_file(report)[report.path]
    diagnostics = file_diagnostics(view, fixture.read_text(), "warning", lambda _: lines)
    assert [(d.range.start.line + 1, d.severity) for d in diagnostics if d.code == "GB0059"] == [
        (9, lsp.DiagnosticSeverity.Error),
        (15, lsp.DiagnosticSeverity.Warning),
    ]
    said = text.render([report], {}).splitlines()[-1]
    assert said.startswith(
        f"Found 2 graph breaks (1 raises at run time) in {common.relative(str(fixture))}; "
    )
    await assert_breaks_as_without_the_flag(report, fixture, tmp_path / "fullgraph.py")


@pytest.mark.skipif(not HAS_ERROR_ON_GRAPH_BREAK, reason="this torch has no error_on_graph_break")
async def test_error_on_graph_break_raises_where_it_is_on(analyse_file: Analyse, tmp_path: Path) -> None:
    fixture = RAISING / "error_on_graph_break.py"
    report = await analyse_file(fixture)
    allowed, refused = report.breaks
    raised, line = raised_at(fixture)
    assert raised.startswith("torch._dynamo.exc.Unsupported") and line == refused.span.line == 13
    assert refused.cause.raises == "error_on_graph_break"
    assert refused.raises == "error_on_graph_break(True): this break raises at run time"
    # error_on_graph_break(False) around the first print is honoured: it only splits the graph.
    assert (allowed.span.line, allowed.cause.raises, allowed.effect) == (11, "", SPLIT)
    await assert_breaks_as_without_the_flag(report, fixture, tmp_path / "error_on_graph_break.py")
