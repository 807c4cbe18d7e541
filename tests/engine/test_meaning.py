"""Each kind of fix, proven by re-analysis, then checked without gbls: the program run eagerly
(``torch.compile`` as the identity) returns, prints and exits as it did before the fix, torch's own
log shows fewer breaks (and frames it would not convert) and no code moved into a disabled function,
and torch compiles the function into no more graphs than before (and into one at least; a function
compiled in the place of another, as many as it did, or one where it compiled none)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbls.engine.fixes import policy
from gbls.engine.fixes.edits import Fix, apply
from gbls.engine.model import BreakReport, FileReport
from gbls.engine.sources import Sources, read_source
from gbls.worker.shared.protocol import Feature

from ..support import FIXTURES
from ..support.meaning import Eager, assert_same_meaning, assert_same_returns, eager_run, graphs_compiled
from ..support.torchlog import LoggedBreak, logged_breaks, logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch
from .test_proofs import proofs_by

SKIP = "Skip calling `torch.compiler.disable()`d function"
# What torch 2.15 names some of the breaks the kinds stand for.
TORCH_2_15 = {"GB0811": ("GB9493",), "GB0142": ("GB0008",), "GB0007": ("GB9193",)}


@dataclass(frozen=True)
class Kind:
    fixture: str
    gb_id: str
    title: str  # how the fix's title starts
    needs: tuple[Feature, ...] = ()  # what of the user's torch it needs (any one of), if anything
    not_with: tuple[Feature, ...] = ()  # what of the user's torch takes its place (another fix), if anything
    drops_output: bool = False  # it says it drops the output of the call it removes
    removes: bool = True  # a fix; else a workaround that keeps the split
    line: int = 0  # the line of the break it is for, where the fixture has more than one of its kind


KINDS = {
    "flag for .item()": Kind(
        "fixes/item_call.py", "GB0124", "Enable torch._dynamo.config.capture_scalar_outputs"
    ),
    "flag for a slice by a tensor": Kind(
        "torch_tests/tensor_slice.py", "GB0124", "Enable torch._dynamo.config.capture_scalar_outputs"
    ),
    "flag for dynamic shapes": Kind(
        "fixes/nonzero_call.py", "GB0036", "Enable torch._dynamo.config.capture_dynamic_output_shape_ops"
    ),
    "explicit break removed": Kind("fixes/explicit_break.py", "GB0025", "Remove the explicit"),
    "print reordered": Kind("torch_tests/progress_print.py", "GB0059", "Let Dynamo print after the graph"),
    "print from the graph": Kind("hatches/printed.py", "GB0059", "Print from the graph", ("print_hop",)),
    "print from the graph of a compiled function another calls": Kind(
        "fidelity/nested_compiled.py", "GB0059", "Print from the graph", ("print_hop",)
    ),
    "logging left out of compiled code": Kind(
        "hatches/logged.py", "GB0291", "Leave info() out of compiled code", ("ignore_logging_functions",)
    ),
    "a logger's method made reorderable": Kind(
        "hatches/logged_lines.py", "GB0291", "Run log.info() after the graph", ("reorderable_logger_methods",)
    ),
    "a logger's call through a function made reorderable": Kind(
        "hatches/logged_lines.py", "GB0291", "Log with log_info()", not_with=("reorderable_logger_methods",)
    ),
    "print removed": Kind("fixes/print_call.py", "GB0059", "Remove `print(", drops_output=True),
    "warning reordered": Kind("torch_tests/warned.py", "GB0007", "Let Dynamo warn after the graph"),
    "torch.where": Kind("fixes/branch_where.py", "GB0170", "Rewrite the branch with torch.where"),
    "torch.where of an expression": Kind(
        "fixes/ifexp_where.py", "GB0170", "Rewrite the conditional expression with torch.where"
    ),
    "torch.cond": Kind("fixes/branch_cond.py", "GB0170", "Rewrite the branch with torch.cond"),
    "torch.cond of an early return": Kind("fixes/return_cond.py", "GB0170", "Rewrite the early return"),
    "torch.cond skeleton": Kind("fixes/branch_skeleton.py", "GB0170", "Turn the branch into a torch.cond"),
    "torch._check of a guard": Kind(
        "hatches/guarded_count.py", "GB0170", "Check n <= x.shape[0]", ("check",)
    ),
    "torch._assert_async": Kind("hatches/asserted.py", "GB0033", "Check the condition in the graph"),
    "argsort": Kind("hatches/ranked.py", "GB0207", "Sort with argsort"),
    "nn.Module.__init__": Kind("hatches/uninitialized.py", "GB0119", "Call nn.Module's __init__"),
    "class defined once": Kind("hatches/local_class.py", "GB8977", "Define class Config once"),
    "disable decorator dropped": Kind("torch_tests/disabled_helper.py", "GB0098", "Remove @torch.compiler"),
    "nonstrict tracing": Kind(
        "hatches/skipped_helper.py",
        "GB0007",
        "Trace jittered non-strictly",
        ("dynamo_nonstrict_trace", "compiler_nonstrict_trace"),
    ),
    "custom op": Kind("hatches/interpolated.py", "GB0294", "Make interpolated the custom op", ("custom_op",)),
    "context manager made where entered": Kind(
        "torch_tests/shared_no_grad.py", "GB0142", "Make the context manager where it is entered"
    ),
    "tolist iterated as tensors": Kind("hatches/listed.py", "GB0109", "Iterate the elements of `weights`"),
    "a list passed, not an iterator": Kind("torch_tests/zipped_input.py", "GB0811", "Pass weighted a list"),
    "a module's iterator made a list": Kind("hatches/mapped.py", "GB0811", "Make `SCALES` a list"),
    "a custom op's fake written": Kind(
        "torch_tests/fake_not_written.py", "GB0087", "Write the fake of the custom op", ("custom_op",)
    ),
    "an input's view made out of place": Kind(
        "hatches/unsqueezed.py", "GB0148", "Make the view out of place"
    ),
    "lstsq by the pseudo-inverse": Kind(
        "torch_tests/lstsq_fit.py", "GB0037", "Solve with the pseudo-inverse"
    ),
    "nested graph breaks (a workaround)": Kind(
        "hatches/deep_print.py",
        "GB0059",
        "Turn on nested graph breaks",
        ("nested_graph_breaks",),
        removes=False,
    ),
    "a skipped call made where the function is called": Kind(
        "hatches/skipped_call.py", "GB0007", "Call `random.gauss(0.0, 0.01)` where jitter is called"
    ),
    "next() made where the function is called": Kind(
        "hatches/scheduled.py", "GB4347", "Call `next(schedule)` where step is called"
    ),
    "a call into NumPy's Python made where the function is called": Kind(
        "hatches/calibrated.py", "GB0008", "Call `CALIBRATION(temperature)` where corrected is called"
    ),
    "an operator's fake of a data-dependent size": Kind(
        "hatches/deduped.py", "GB0037", "Register the fake of the operator dedupe::dedupe"
    ),
    "a generator consumed by a compiled function": Kind(
        "fidelity/generators.py", "GB0003", "Compile `produce_list`, a function that consumes the generator"
    ),
    "a check that raises run before the compiled code": Kind(
        "torch_tests/raised.py", "GB0088", "Run checked_ratio's leading check in Python"
    ),
    "a helper's assert run before the compiled code": Kind(
        "hatches/validated.py", "GB0034", "Run normalized's leading check in Python"
    ),
    "a check that raises run after the compiled code": Kind(
        "fidelity/escaping_exception.py", "GB0088", "Run checked's trailing check in Python"
    ),
    "timer reads run around the compiled code": Kind(
        "torch_tests/skipped_stdlib.py", "GB0007", "Read timed_step's timers in Python around", line=12
    ),
    "an object the function made, made once before it": Kind(
        "torch_tests/bound_method.py", "GB0092", "Return the `apply` of one Scaler made once"
    ),
    "run eagerly (a workaround)": Kind(
        "hatches/counted.py", "GB0037", "Stop compiling `torch.ops.counted.counted(x * 2)`", removes=False
    ),
}


def unsuppressed(path: Path) -> list[LoggedBreak]:
    return [entry for entry in logged_breaks(path) if not entry.suppressed]


def broken(path: Path) -> int:
    """What torch's log of the program shows broken: its breaks, and the frames it would not convert
    at all (a compiled generator's, which no break log has)."""
    log = logged_script(path)
    return sum(1 for entry in log.main if not entry.suppressed) + len(log.refused)


def skips(logged: list[LoggedBreak]) -> int:
    return sum(1 for entry in logged if entry.gb_types[:1] == [SKIP] or SKIP in entry.text)


async def offered(
    analyse_file: Analyse, path: Path, kind: Kind
) -> tuple[FileReport, BreakReport, Fix | None]:
    report = await analyse_file(path)
    found = [b for b in report.breaks if b.gb_id in (kind.gb_id, *TORCH_2_15.get(kind.gb_id, ()))]
    if not found:  # torch 2.6 names breaks otherwise, without GB ids; a newer torch may trace it whole
        named = [b.gb_type for b in report.breaks]
        pytest.skip(f"this torch reports no {kind.gb_id} here ({named or 'no break'})")
    (brk,) = [b for b in found if b.root.span.line == kind.line] if kind.line else found
    fixes = policy.for_break(brk, str(path), Sources(read_source), [str(path.parent)])
    return report, brk, next((fix for fix in fixes if fix.title.startswith(kind.title)), None)


@pytest.mark.parametrize("name", list(KINDS))
async def test_a_fix_keeps_what_the_program_does_and_joins_the_graph(
    analyse_file: Analyse, tmp_path: Path, name: str
) -> None:
    kind = KINDS[name]
    fixture = FIXTURES / kind.fixture
    before, after = tmp_path / "before" / fixture.name, tmp_path / "after" / fixture.name
    for copy in (before, after):
        copy.parent.mkdir()
        shutil.copy(fixture, copy)
    report, brk, fix = await offered(analyse_file, before, kind)
    if fix is None and not brk.cause.context:
        pytest.skip("this torch says too little of the break to tell what it is (torch 2.6)")
    if fix is None and set(kind.not_with) & set(brk.features):
        pytest.skip(f"this torch has {' or '.join(kind.not_with)}, and another fix for it")
    if fix is None:
        assert kind.needs and not set(kind.needs) & set(brk.features), f"{kind.title} is not offered"
        pytest.skip(f"this torch has no {' or '.join(kind.needs)}")
    assert fix.removes == kind.removes
    assert await proofs_by(analyse_file).prove(fix, brk, report, Sources(read_source)) is None
    fixed = apply(before.read_text(), list(fix.edits))
    assert all(edit.path == str(before) for edit in fix.edits)
    after.write_text(fixed)

    eager: tuple[Eager, Eager] = (eager_run(before), eager_run(after))
    if kind.drops_output:  # only the removed call's lines are gone, in order
        lines = iter(eager[0].stdout.splitlines())
        assert all(line in lines for line in eager[1].stdout.splitlines())
        assert eager[1].stdout != eager[0].stdout and eager[1].status == eager[0].status
        assert_same_returns(eager[0].returns, eager[1].returns)
    else:
        checked_after = {old: new for old, new in fix.compiled_as if new in fix.checked_after}
        first = {old: fix.returns_first for old, _ in fix.compiled_as if fix.returns_first}
        assert_same_meaning(*eager, checked_after, first)
    if fix.checked_after:  # its one call raised: its compiled body returns, its output says it raised
        assert eager[1].returns and "caught too long" in eager[0].stdout
    else:
        assert eager[0].returns, "the fixture's compiled function returns something to compare"

    logged = (unsuppressed(before), unsuppressed(after))
    graphs = (graphs_compiled(before), graphs_compiled(after))
    assert graphs[1] >= 1
    # A function compiled in the place of one that compiled no graph (a generator's consumer) compiles one.
    taken = sum(
        1 for old, _ in fix.compiled_as if not any(f.graphs for f in report.functions if f.qualname == old)
    )
    if kind.removes:
        assert broken(after) < broken(before) and skips(logged[1]) <= skips(logged[0]), logged
        assert graphs[1] <= max(graphs[0], 1) + taken, graphs
        if fix.compiled_as:
            assert graphs[1] == graphs[0] + taken, graphs
    elif fix.proof == "skip":  # the break's place taken by one skip of the disabled function
        assert skips(logged[1]) == skips(logged[0]) + 1
    else:  # nested: the split moves, the graphs of the compiled function are fewer
        assert graphs[1] < graphs[0], graphs


async def test_a_print_in_a_loop_is_first_fixed_by_what_keeps_its_output(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """The first fix offered, and the one ``--fix --unsafe-fixes`` applies, keeps the output and
    joins the loop into one graph."""
    path = tmp_path / "progress_print.py"
    shutil.copy(FIXTURES / "torch_tests" / "progress_print.py", path)
    report = await analyse_file(path)
    (brk,) = report.breaks
    first = policy.for_break(brk, str(path), Sources(read_source), [str(tmp_path)])[0]
    assert first.title.startswith("Let Dynamo print after the graph") and first.changes == ""
    assert await proofs_by(analyse_file).prove(first, brk, report, Sources(read_source)) is None
    fixed = tmp_path / "fixed" / path.name
    fixed.parent.mkdir()
    fixed.write_text(apply(path.read_text(), list(first.edits)))
    assert_same_meaning(eager_run(path), eager_run(fixed))
    assert unsuppressed(fixed) == [] and graphs_compiled(fixed) == 1
    assert "step 0\nstep 1\nstep 2\n" in (await analyse_file(fixed)).outcome.printed


@pytest.mark.parametrize("name", sorted(path.name for path in (FIXTURES / "torch_tests").glob("*.py")))
async def test_the_files_built_from_torchs_tests_break_as_torchs_log_says(
    analyse_file: Analyse, name: str
) -> None:
    """The breaks of ``fixtures/torch_tests`` (the coverage figure counts them) are torch's own, each
    file logged alone (some set Dynamo's config, as the tests they are built from do)."""
    path = FIXTURES / "torch_tests" / name
    report = await analyse_file(path)
    assert report.status == "ok" and report.breaks, report.message
    assert_agrees_with_torch(report, path, logged_script(path).main)
