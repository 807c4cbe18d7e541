"""The escape hatches torch offers, as fixes: each offered only on a torch that has it, applied, and
the file analysed again by the real translator (and checked against torch's log of it)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from gbls.engine.fixes import policy
from gbls.engine.fixes.edits import Fix, apply
from gbls.engine.model import FileReport
from gbls.engine.sources import Sources, read_source

from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch
from .test_proofs import proofs_by

HATCHES = FIXTURES / "hatches"
# Feature detection in the test's own torch, as the worker does it in the user's.
HAS_PRINT_HOP = isinstance(getattr(torch._higher_order_ops, "print", None), torch._ops.HigherOrderOperator)
HAS_IGNORE_LOGGING = hasattr(torch._dynamo.config, "ignore_logging_functions")
HAS_NESTED = hasattr(torch._dynamo.config, "nested_graph_breaks")


class Copy:
    """A fixture copied into its own folder: the fixes edit files on disk."""

    def __init__(self, analyse_file: Analyse, folder: Path, name: str) -> None:
        self.analyse_file = analyse_file
        self.path = folder / name
        shutil.copy(HATCHES / name, self.path)

    async def offered(self) -> tuple[FileReport, list[Fix]]:
        report = await self.analyse_file(self.path)
        (brk,) = report.breaks
        fixes = policy.for_break(brk, str(self.path), Sources(read_source), [str(self.path.parent)])
        return report, fixes

    async def fixed(self, fixes: list[Fix], title: str) -> FileReport:
        """The file analysed again after the fix titled ``title``, which must be among ``fixes``."""
        (fix,) = [fix for fix in fixes if fix.title.startswith(title)]
        for path in {edit.path for edit in fix.edits}:
            text = Path(path).read_text()
            Path(path).write_text(apply(text, [edit for edit in fix.edits if edit.path == path]))
        return await self.analyse_file(self.path)


def titles(fixes: list[Fix]) -> list[str]:
    return [fix.title for fix in fixes]


async def test_print_from_the_graph(analyse_file: Analyse, tmp_path: Path) -> None:
    copy = Copy(analyse_file, tmp_path, "printed.py")
    title = "Print from the graph: torch._higher_order_ops.print"
    _, fixes = await copy.offered()
    if not HAS_PRINT_HOP:
        assert title not in titles(fixes)
        return
    after = await copy.fixed(fixes, title)
    printing = "torch._higher_order_ops.print('scaled {{x}} {y!s} {arg2!s}', y=y, arg2=str(y.shape))"
    assert printing in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    # Printed from the graph as print printed it, the shape too.
    assert after.outcome.printed == "scaled {x} tensor([2., 2., 2.]) torch.Size([3])\n"
    assert logged_breaks(copy.path) == []
    # The program as it runs, compiled by inductor (which takes no list of sizes), prints it so.
    command = [sys.executable, copy.path.name]
    ran = subprocess.run(command, cwd=copy.path.parent, capture_output=True, text=True, timeout=300)
    assert (ran.returncode, ran.stdout) == (0, after.outcome.printed), ran.stderr[-3000:]


@pytest.mark.parametrize(("name", "ignored"), [("printed.py", "print"), ("logged.py", "logging.Logger.info")])
async def test_logging_left_out_of_compiled_code(
    analyse_file: Analyse, tmp_path: Path, name: str, ignored: str
) -> None:
    copy = Copy(analyse_file, tmp_path, name)
    title = f"Leave {ignored.rsplit('.', 1)[-1]}() out of compiled code"
    _, fixes = await copy.offered()
    if not HAS_IGNORE_LOGGING:
        assert not any(fix.startswith(title) for fix in titles(fixes))
        return
    after = await copy.fixed(fixes, title)
    assert f"torch._dynamo.config.ignore_logging_functions.add({ignored})\n" in copy.path.read_text()
    assert after.breaks == () and "scaled" not in after.output  # the call no longer runs
    assert logged_breaks(copy.path) == []


async def test_nested_graph_breaks_keep_the_callers_code_in_the_graphs(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    copy = Copy(analyse_file, tmp_path, "deep_print.py")
    title = "Turn on nested graph breaks: split in report"
    before, fixes = await copy.offered()
    if not HAS_NESTED:
        assert not any(fix.startswith(title) for fix in titles(fixes))
        return
    after = await copy.fixed(fixes, title)
    (brk,) = after.breaks
    assert (brk.nested, brk.split_frame.function, brk.span.line) == (
        "splits in report, keeping the code of preprocess → normalize in the graphs",
        "report",
        6,  # the print, a line down: the flag is set after the imports
    )
    assert len(after.functions[0].graphs) < len(before.functions[0].graphs)
    assert_agrees_with_torch(after, copy.path)


async def test_the_smallest_enclosing_function_runs_eagerly(analyse_file: Analyse, tmp_path: Path) -> None:
    copy = Copy(analyse_file, tmp_path, "deep_print.py")
    _, fixes = await copy.offered()
    # The last resort, a workaround: the graph still splits.
    assert titles(fixes)[-1].startswith("Stop compiling report: @torch.compiler.disable runs it eagerly")
    assert not fixes[-1].removes
    after = await copy.fixed(fixes, "Stop compiling report")
    assert "\n@torch.compiler.disable\ndef report(x):\n" in copy.path.read_text()
    # The print's break is gone: Dynamo splits once, at the call of the disabled function.
    (brk,) = after.breaks
    assert (brk.gb_type, brk.root.function, brk.root.span.line) == (
        "Skip calling `torch.compiler.disable()`d function",
        "normalize",
        12,
    )
    assert_agrees_with_torch(after, copy.path)


def printed(report: FileReport) -> str:
    """What the program printed last (its result; torch may warn on the lines before it)."""
    return report.output.strip().splitlines()[-1]


# A line of torch's own logging ("W1203 17:29:27.393000 31 torch/...] ..."), whose time and process
# differ from run to run.
TORCH_LOG_LINE = re.compile(r"[DIWEC]\d{4} \d\d:\d\d:\d\d")


def program_lines(report: FileReport) -> list[str]:
    """What the program printed, without torch's warnings."""
    return [line for line in report.output.strip().splitlines() if not TORCH_LOG_LINE.match(line)]


def named(report: FileReport, gb_type: str) -> None:
    """Skip where this torch names the break otherwise: the catalogue knows the fix by the name (and
    GB id) of torch's registry, which older releases (2.6) do not have."""
    if not report.breaks:
        pytest.skip("this torch traces the code without a break")
    if report.breaks[0].gb_type != gb_type:
        pytest.skip(f"this torch reports the break as {report.breaks[0].gb_type!r}")


HAS_NONSTRICT = callable(getattr(torch._dynamo, "nonstrict_trace", None)) or callable(
    getattr(torch.compiler, "nonstrict_trace", None)
)


async def test_a_helper_dynamo_skips_into_is_traced_nonstrictly(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB0007 in a helper (Python's RNG): ``nonstrict_trace`` on the helper removes the break, the
    helper's tensor operations in the graph (torch's log of the fixed file agrees)."""
    copy = Copy(analyse_file, tmp_path, "skipped_helper.py")
    _, fixes = await copy.offered()
    nonstrict = [fix for fix in fixes if fix.title.startswith("Trace jittered non-strictly")]
    if not HAS_NONSTRICT:
        assert nonstrict == []
        return
    (fix,) = nonstrict
    assert not fix.safe and "its Python runs at each call, and once more while Dynamo traces it" in fix.title
    after = await copy.fixed(fixes, "Trace jittered non-strictly")
    assert "nonstrict_trace\ndef jittered(x):\n" in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert logged_breaks(copy.path) == []


async def test_a_skipped_call_in_the_compiled_function_is_made_where_it_is_called(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """A break in the compiled function itself (no helper to decorate): the call is made where the
    function is called and passed in, and the function compiles whole (torch's log agrees), the same
    numbers out (Python's RNG draws the same number, before the body instead of in it)."""
    copy = Copy(analyse_file, tmp_path, "skipped_call.py")
    before, fixes = await copy.offered()
    if not before.breaks[0].gb_id:
        pytest.skip("this torch names the break without a GB id, and by the function it skips (torch 2.6)")
    assert titles(fixes)[0].startswith("Call `random.gauss(0.0, 0.01)` where jitter is called")
    after = await copy.fixed(fixes, "Call `random.gauss(0.0, 0.01)` where jitter is called")
    text = copy.path.read_text()
    assert "def jitter(x, scale, noise):\n    y = x * scale\n    return y + noise\n" in text
    assert "print(jitter(torch.arange(4.0), 2.0, random.gauss(0.0, 0.01)).tolist())" in text
    assert after.breaks == () and logged_breaks(copy.path) == []
    assert printed(after) == printed(before)


async def test_a_class_defined_in_the_compiled_function_is_defined_once(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB8977 (a class statement in compiled code): the class moves before the function, and the
    function compiles whole (torch's log of the fixed file agrees)."""
    copy = Copy(analyse_file, tmp_path, "local_class.py")
    before, fixes = await copy.offered()
    named(before, "Invalid call to __build_class__")
    assert titles(fixes)[0].startswith("Define class Config once, before scaled")
    after = await copy.fixed(fixes, "Define class Config once")
    assert (
        "\n\nclass Config:\n    factor = 2\n    offset = 1\n\n\n@torch.compile\ndef scaled(x):\n    return"
        in (copy.path.read_text())
    )
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert logged_breaks(copy.path) == []
    assert printed(after) == printed(before)  # the same numbers


async def test_a_data_dependent_assert_is_checked_in_the_graph(analyse_file: Analyse, tmp_path: Path) -> None:
    """GB0033 from ``torch._assert`` on a tensor: ``torch._assert_async`` checks it in the graph, the
    same numbers out (torch's log of the fixed file has no break)."""
    copy = Copy(analyse_file, tmp_path, "asserted.py")
    before = await analyse_file(copy.path)
    named(before, "Data dependent operator")  # torch 2.15 traces it whole
    (brk,) = before.breaks
    fixes = policy.for_break(brk, str(copy.path), Sources(read_source), [str(tmp_path)])
    assert titles(fixes) == ["Check the condition in the graph with torch._assert_async"]
    assert not fixes[0].safe  # a RuntimeError, not an AssertionError; on a GPU, later than the line
    assert await proofs_by(analyse_file).prove(fixes[0], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, "Check the condition in the graph")
    assert after.breaks == () and logged_breaks(copy.path) == []
    assert printed(after) == printed(before)


HAS_CHECK = callable(getattr(torch, "_check", None))


@pytest.mark.parametrize(
    ("name", "holds", "guard", "failing"),
    [
        (
            "guarded_count.py",
            "n <= x.shape[0]",
            "    if n > x.shape[0]:\n",
            "first_rows(torch.tensor([4, 2]), torch.arange(5.0))",
        ),
        (
            "guarded_nonzero.py",
            "where.shape[0] != 0",
            "    if where.shape[0] == 0:\n",
            "positive_mean(torch.tensor([-1.0, -2.0]))",
        ),
    ],
)
async def test_a_guard_on_a_data_dependent_value_is_told_to_the_compiler_with_torch_check(
    analyse_file: Analyse, tmp_path: Path, name: str, holds: str, guard: str, failing: str
) -> None:
    """GB0170 on a symbolic value read from a tensor (``.item()``, ``nonzero``'s rows) in an ``if``
    that raises: ``torch._check`` of what holds, before the ``if``, as torch's message for it says;
    the compiler decides the branch, one graph, the same result (torch's log of the fixed file has
    no break); and the compiled code still refuses an input the guard refused."""
    copy = Copy(analyse_file, tmp_path, name)
    before, fixes = await copy.offered()
    named(before, "Data-dependent branching")
    title = f"Check {holds} with torch._check before the branch"
    if not HAS_CHECK:
        assert not any(fix.startswith(title) for fix in titles(fixes))
        return
    (brk,) = before.breaks
    if not brk.cause.context:
        # torch 2.6 says no more than "Data-dependent jump": not whether the condition is a symbolic
        # value (what torch._check takes) or a tensor. The fix is not offered where it cannot tell.
        assert not any(fix.startswith(title) for fix in titles(fixes))
        return
    # Preferred: the torch.cond skeleton also offered cannot hold the branch's raise.
    assert titles(fixes)[0].startswith(title) and not fixes[0].safe  # a RuntimeError where it fails
    assert await proofs_by(analyse_file).prove(fixes[0], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, title)
    assert f"    torch._check({holds})\n{guard}" in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert logged_breaks(copy.path) == []
    assert printed(after) == printed(before)
    # The fixed program called with what its guard refuses: the compiled check raises, as it said.
    program = copy.path.read_text().rsplit("\nprint(", 1)[0] + f"\n{failing}\n"
    refused = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1].startswith("RuntimeError")


HAS_CUSTOM_OP = callable(getattr(torch.library, "custom_op", None))


def run_as_script(path: Path) -> str:
    """What ``python FILE`` prints last, compiled by inductor (its code holds a custom op's result to
    the op's fake), not by the analysis's backend."""
    ran = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=600, cwd=path.parent
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.strip().splitlines()[-1]


async def test_a_helper_that_calls_numpy_becomes_a_custom_op_with_a_fake_like_its_input(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB0294 (np.interp, which torch's NumPy does not have) in a helper: nonstrict tracing does not
    hold (it runs the helper on fake tensors, and its result is no tensor it can take), a custom op
    does: the helper one op in the graph, its fake ``torch.empty_like(x)``, the same numbers out, by
    the analysis and by inductor, and torch's log of the fixed file has no break."""
    copy = Copy(analyse_file, tmp_path, "interpolated.py")
    before, fixes = await copy.offered()
    named(before, "attempted to trace numpy function unsupported by PyTorch")
    title = "Make interpolated the custom op interpolated::interpolated (torch.library.custom_op), its fake"
    if not HAS_CUSTOM_OP:
        assert not any(fix.startswith("Make interpolated the custom op") for fix in titles(fixes))
        return
    (brk,) = before.breaks
    proofs = proofs_by(analyse_file)
    offered = {fix.title: await proofs.prove(fix, brk, before, Sources(read_source)) for fix in fixes}
    nonstrict = [verdict for title_, verdict in offered.items() if title_.startswith("Trace interpolated")]
    assert all(verdict is not None for verdict in nonstrict)  # offered first, and refused by the proof
    (fix,) = [fix for fix in fixes if fix.title.startswith(title)]
    assert not fix.safe and offered[fix.title] is None
    assert "a backward through it raises until register_autograd gives it one" in fix.title
    after = await copy.fixed(fixes, title)
    assert (
        '@torch.library.custom_op("interpolated::interpolated", mutates_args=())\n'
        "def interpolated(x: torch.Tensor) -> torch.Tensor:\n"
        "    values = np.interp("
    ) in copy.path.read_text()
    assert (
        "\n\n@interpolated.register_fake\ndef _interpolated_fake(x: torch.Tensor):\n"
        "    return torch.empty_like(x)\n\n\n@torch.compile\n"
    ) in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert after.functions[0].graphs[0].ops == 3  # sin, the op, cos
    assert logged_breaks(copy.path) == []
    assert printed(after) == printed(before)
    # Inductor's own sin and cos round otherwise than eager's in the last bits: the same numbers else.
    assert json.loads(run_as_script(copy.path)) == pytest.approx(json.loads(printed(before)), rel=1e-6)


async def test_a_helper_whose_result_is_not_shaped_like_its_input_gets_a_stub_of_a_fake(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB0294 (np.polyfit) in a helper whose result has the degree's shape: the fake like its input
    is refused by the proof (the worker holds the op to its fake, as inductor does), and the custom
    op with a marked stub of a fake is offered: the helper's own break is gone, one break at the
    op's call in its place (Dynamo runs the stub), the same numbers out, torch's log agreeing."""
    copy = Copy(analyse_file, tmp_path, "fitted.py")
    before, fixes = await copy.offered()
    named(before, "attempted to trace numpy function unsupported by PyTorch")
    like = (
        "Make fitted the custom op fitted::fitted (torch.library.custom_op), its fake a result shaped like x"
    )
    stub = (
        "Make fitted the custom op fitted::fitted (torch.library.custom_op) with a stub of its fake to write"
    )
    if not HAS_CUSTOM_OP:
        assert not any(fix.startswith("Make fitted the custom op") for fix in titles(fixes))
        return
    (brk,) = before.breaks
    proofs = proofs_by(analyse_file)
    (filled,) = [fix for fix in fixes if fix.title.startswith(like)]
    verdict = await proofs.prove(filled, brk, before, Sources(read_source))
    assert verdict is not None and "the fake implementation of the custom op fitted.fitted" in verdict
    assert "f32[6]" in verdict and "f32[3]" in verdict  # what the fake said, what the op returned
    (fix,) = [fix for fix in fixes if fix.title.startswith(stub)]
    assert not fix.safe and "until it is written Dynamo still breaks at its call" in fix.title
    assert await proofs.prove(fix, brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, stub)
    text = copy.path.read_text()
    assert "def fitted(x: torch.Tensor, degree: int = 2) -> torch.Tensor:\n" in text
    assert "def _fitted_fake(x: torch.Tensor, degree: int = 2):\n    # gbls: to write:" in text
    assert (
        '    raise NotImplementedError("the fake implementation of fitted::fitted is to be written")\n'
        in text
    )
    (left,) = after.breaks
    assert (left.gb_type, left.function, left.root.function) == (
        "NotImplementedError/UnsupportedFakeTensorException when running FX node",
        "step",
        "step",
    )
    assert_agrees_with_torch(after, copy.path)
    assert printed(after) == printed(before)


async def test_a_sort_on_tensor_keys_becomes_an_argsort_in_the_graph(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB0207 (``sorted`` on tensor keys, then stacked): the stack indexed by the stable argsort of the
    stacked keys, one graph, the same tensors in the same order (torch's log of the fixed file has
    no break)."""
    copy = Copy(analyse_file, tmp_path, "ranked.py")
    before, fixes = await copy.offered()
    named(before, "sort with non-constant keys")
    (brk,) = before.breaks
    assert titles(fixes)[0].startswith("Sort with argsort on the stacked keys") and not fixes[0].safe
    assert await proofs_by(analyse_file).prove(fixes[0], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, "Sort with argsort")
    assert (
        "torch.stack(outputs)[torch.stack([output.norm() for output in outputs])"
        ".argsort(descending=True, stable=True)]"
    ) in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert logged_breaks(copy.path) == []
    assert printed(after) == printed(before)


async def test_an_uninitialised_module_calls_nn_modules_init(analyse_file: Analyse, tmp_path: Path) -> None:
    """GB0119 (a module whose ``__init__`` never called ``nn.Module``'s): the call torch's hint asks
    for, safe, one graph, the same numbers (torch's log of the fixed file has no break)."""
    copy = Copy(analyse_file, tmp_path, "uninitialized.py")
    before, fixes = await copy.offered()
    named(before, "Uninitialized nn.Module")
    (brk,) = before.breaks
    title = "Call nn.Module's __init__ in Standardize.__init__ (super().__init__())"
    assert titles(fixes)[0] == title and fixes[0].safe
    assert await proofs_by(analyse_file).prove(fixes[0], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, title)
    assert "    def __init__(self):\n        super().__init__()\n\n    def forward" in copy.path.read_text()
    assert after.breaks == () and len(after.functions[0].graphs) == 1
    assert logged_breaks(copy.path) == []
    assert printed(after) == printed(before)


# The GB id each fixture stands for (issue 32's list), where torch's registry names it: torch 2.6 has
# no registry, and names these breaks otherwise.
GB_IDS = {
    "calibrated.py": "GB0008",
    "counted.py": "GB0037",
    "smoothed.py": "GB0087",
    "unsqueezed.py": "GB0148",
    "validated.py": "GB0034",
    "locked.py": "GB0142",
}


def stands_for_its_gb_id(report: FileReport, name: str) -> bool:
    """Whether the fixture ``name`` still breaks with the GB id it stands for, where this torch's
    registry gives ids (gbls's own table fills them in for torch 2.6, from otherwise named breaks)."""
    expected = GB_IDS.get(name)
    from_registry = {
        brk.gb_id
        for brk in report.breaks
        if brk.gb_id and not any("from gbls's table" in gap for gap in brk.cause.gaps)
    }
    return expected is None or not from_registry or expected in from_registry


@pytest.mark.parametrize(
    ("name", "moved", "call"),
    [
        # GB0037: a torch.library operator with data-dependent output sizes, two results, and no meta
        # kernel (with one result, its fake is a fix: test_meaning.py).
        (
            "counted.py",
            "torch.ops.counted.counted(x * 2)",
            "    values, counts = _weighted_mean_eagerly(x)\n",
        ),
    ],
)
async def test_what_no_rewrite_keeps_runs_eagerly_in_a_function_of_its_own(
    analyse_file: Analyse, tmp_path: Path, name: str, moved: str, call: str
) -> None:
    """An operator whose output Dynamo cannot tell without running it: no tensor operation computes
    the same, so the last resort is offered, and proven: the expression runs eagerly, one clean skip
    where it is called, the same numbers out. (An iterator made outside, a library's Python Dynamo
    skips, a fake to write, an in-place view of an input have fixes of their own: test_meaning.py.)"""
    copy = Copy(analyse_file, tmp_path, name)
    before = await analyse_file(copy.path)
    if not before.breaks:
        pytest.skip("this torch traces the code without a break")
    (brk,) = before.breaks
    assert stands_for_its_gb_id(before, name)
    fixes = policy.for_break(brk, str(copy.path), Sources(read_source), [str(tmp_path)])
    title = f"Stop compiling `{moved}`: run it eagerly in a function of its own"
    assert [fix.title.startswith(title) for fix in fixes] == [True]
    assert await proofs_by(analyse_file).prove(fixes[0], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, title)
    assert f"    return {moved}\n" in copy.path.read_text() and call in copy.path.read_text()
    (skip,) = after.breaks
    assert skip.gb_type == "Skip calling `torch.compiler.disable()`d function"
    assert_agrees_with_torch(after, copy.path)
    assert printed(after) == printed(before)


async def test_an_operators_fake_of_a_data_dependent_size_is_held_to_what_the_operator_returns(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """The fake registered for an operator with a data-dependent size and no meta kernel returns a 1-D
    tensor of its argument's dtype: where the operator returns another shape (torch.nonzero's rows,
    one per element), the analysis holds each call to its fake, the fixed program fails where it
    did not, and the proof refuses the fix."""
    path = tmp_path / "deduped.py"
    path.write_text(
        (HATCHES / "deduped.py").read_text().replace("torch.unique(x)", "torch.nonzero(x).float()")
    )
    report = await analyse_file(path)
    (brk,) = report.breaks
    if not stands_for_its_gb_id(report, "deduped.py") or brk.gb_id != "GB0037":
        pytest.skip(f"this torch names the break otherwise ({brk.gb_type})")
    fixes = policy.for_break(brk, str(path), Sources(read_source), [str(tmp_path)])
    (fix,) = [
        fix for fix in fixes if fix.title.startswith("Register the fake of the operator dedupe::dedupe")
    ]
    refused = await proofs_by(analyse_file).prove(fix, brk, report, Sources(read_source))
    assert refused is not None and "the fake implementation of the custom op dedupe.dedupe" in refused, (
        refused
    )


@pytest.mark.parametrize(
    ("name", "helper", "caller"),
    [
        # GB0034: the helper's assert fails while Dynamo inlines it, where no partial graph can be
        # compiled; Dynamo then compiles the helper as a frame of its own, and the same failed
        # assert is a second break there (GB0170 on torch 2.13 and 2.15; torch 2.6 logs it first).
        ("validated.py", "check_batch", "normalized"),
        # GB0142: the helper enters a threading.Lock made outside the compiled code.
        ("locked.py", "count_call", "step"),
    ],
)
async def test_a_helper_dynamo_cannot_trace_through_runs_eagerly(
    analyse_file: Analyse, tmp_path: Path, name: str, helper: str, caller: str
) -> None:
    """A helper that fails an assert while it is inlined, or enters a context manager Dynamo cannot:
    the helper runs eagerly (the proven last resort), one clean skip where the compiled function
    calls it, torch's log of the fixed file agreeing, the same output (the assert still refuses
    what it refused)."""
    copy = Copy(analyse_file, tmp_path, name)
    before = await analyse_file(copy.path)
    brk = before.breaks[0]
    assert brk.root.function == helper and stands_for_its_gb_id(before, name)
    fixes = policy.for_break(brk, str(copy.path), Sources(read_source), [str(tmp_path)])
    title = f"Stop compiling {helper}: @torch.compiler.disable runs it eagerly"
    assert titles(fixes)[-1].startswith(title)  # the last resort, after what keeps more compiled
    assert await proofs_by(analyse_file).prove(fixes[-1], brk, before, Sources(read_source)) is None
    after = await copy.fixed(fixes, title)
    assert f"\n@torch.compiler.disable\ndef {helper}(" in copy.path.read_text()
    (skip,) = after.breaks
    assert (skip.gb_type, skip.root.function) == ("Skip calling `torch.compiler.disable()`d function", caller)
    assert_agrees_with_torch(after, copy.path)
    assert program_lines(after) == program_lines(before)
