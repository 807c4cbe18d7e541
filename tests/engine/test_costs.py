"""What each compilation costs and why torch decided each size as it did, on real fixtures and the
real translator, against torch's own record of a plain run of the same file: its compilation
metrics (guards, ops, restarts), its recompilation log, its shape decisions (``TORCH_LOGS=dynamic``,
``TORCH_TRACE``) and the exception a recompile limit under ``fullgraph=True`` ends it with. Times
are measured, never compared between runs: only that each compilation has one, and that the totals
are their sums."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from lsprotocol import types as lsp

from gbls.engine import costs, views, words
from gbls.engine.fixes import policy
from gbls.engine.fixes.edits import apply
from gbls.engine.model import FileReport, RecompileReport
from gbls.engine.sources import Sources, read_source
from gbls.lsp.codelens import lens_title
from gbls.lsp.diagnostics import file_diagnostics
from gbls.lsp.hover import break_markdown, function_markdown, hover_markdown
from gbls.lsp.markdown import Where
from gbls.worker.shared.lines import split_lines

from ..support import FIXTURES, ROOT
from ..support.schema import gbls_json
from ..support.torchlog import logged_script
from ..support.torchlog_costs import PlainRun, plain_run
from ..support.torchlog_recompiles import COLUMNS, said_as_torch
from ..support.worker import Analyse
from .test_proofs import proofs_by
from .test_recompiles import assert_agrees_with_torch

COSTS = FIXTURES / "costs"
GRAD_AND_SIZES = COSTS / "grad_and_sizes.py"
# torch logs "marking L['x'] as dynamic" from 2.13 (before, at debug level of another log).
LOGS_DYNAMIC = tuple(map(int, torch.__version__.split(".")[:2])) >= (2, 13)

_runs: dict[Path, PlainRun] = {}


def torch_run(path: Path) -> PlainRun:
    if path not in _runs:
        _runs[path] = plain_run(path)
    return _runs[path]


def only_problem(report: FileReport, function: str) -> RecompileReport:
    (found,) = [r for r in report.problems if r.function == function]
    return found


async def test_each_compilation_costs_what_torch_measured(analyse_file: Analyse) -> None:
    report = await analyse_file(GRAD_AND_SIZES)
    assert_agrees_with_torch(report, GRAD_AND_SIZES)
    ran = torch_run(GRAD_AND_SIZES)
    (forward,) = report.functions
    # The same compilations, with the guards and ops torch's own metrics count.
    assert [(c.compile_id, c.guards, c.ops) for c in forward.costs] == [
        (logged.compile_id, logged.guards, logged.ops) for logged in ran.compiles
    ]
    assert all(cost.seconds > 0 for cost in forward.costs)
    assert forward.seconds == sum(cost.seconds for cost in forward.costs)
    # Why each happened: what torch's recompilation log says failed, in words.
    logged = {entry.compile_id: entry.reasons[0].text for entry in ran.recompiles.recompiles}
    assert logged["0/1"] == "GLOBAL_STATE changed: grad_mode"
    rows = costs.rows(forward, report.recompiles_of("forward"))
    assert [row.why for row in rows] == [
        "first compilation",
        "recompiled for grad mode",
        "recompiled for the shape of `x`",
        "recompiled for the shape of `x`",
    ]
    grad, shape = sorted(report.recompiles_of("forward"), key=lambda r: r.count)
    assert grad.seconds == forward.costs[1].seconds
    assert shape.seconds == forward.costs[2].seconds + forward.costs[3].seconds
    said = costs.summary(forward, report.recompiles_of("forward"))
    assert said.startswith(f"`forward`: 4 compilations, {costs.seconds(forward.seconds)} of translation, ")
    assert f"{costs.seconds(grad.seconds)} for grad mode" in said
    assert f"{costs.seconds(shape.seconds)} for the shape of `x`" in said
    # The hover's table and the lens.
    where = Where(str(GRAD_AND_SIZES), str(FIXTURES))
    hover = function_markdown(forward, report, where)
    assert f"**Cost**: {said}." in hover
    for logged_compile in ran.compiles:
        assert re.search(rf"\| {logged_compile.compile_id} \| [\d.]+ s \| {logged_compile.guards} \| ", hover)
    assert lens_title(forward, 0).endswith(f" · translated in {costs.seconds(forward.seconds)}")


async def test_why_a_size_is_dynamic_or_specialized(analyse_file: Analyse) -> None:
    report = await analyse_file(GRAD_AND_SIZES)
    ran = torch_run(GRAD_AND_SIZES)
    checks = {entry.compile_id: entry.reasons[0].text for entry in ran.recompiles.recompiles}
    dynamic, zero_one = report.shapes
    # Made dynamic where the size changed, as torch's failed check says it did.
    assert (dynamic.shape.decision, dynamic.shape.reason, dynamic.shape.dim) == ("dynamic", "changed", 0)
    old, new = dynamic.shape.value.split(" → ")
    mismatch = f"tensor 'x' size mismatch at index 0. expected {old}, actual {new}"
    assert said_as_torch(mismatch, checks[dynamic.shape.compile_id])
    if LOGS_DYNAMIC:
        assert ran.dynamic == [(dynamic.shape.compile_id, "L['x']")]
    # Specialized apart for being 1: the compilation whose check is the bound of a dynamic size.
    assert (zero_one.shape.decision, zero_one.shape.reason, zero_one.shape.value) == (
        "specialized",
        "zero_one",
        "1",
    )
    assert said_as_torch("2 <= x.size()[0]", checks[zero_one.shape.compile_id])
    # Both on the input, in the def of forward.
    lines = GRAD_AND_SIZES.read_text().splitlines()
    for found in report.shapes:
        assert found.path == str(GRAD_AND_SIZES)
        assert lines[found.span.line - 1].startswith("def forward(")
        assert lines[found.span.line - 1][found.span.column : found.span.end_column] == "x"
    where = Where(str(GRAD_AND_SIZES), str(FIXTURES))
    view = views.by_file(report)[str(GRAD_AND_SIZES)]
    problem = only_problem(report, "forward")
    markdown = hover_markdown(view, problem.span.line, problem.span.column, where)
    assert markdown is not None and zero_one.message in markdown and dynamic.message in markdown


async def test_the_code_that_specialized_a_size(analyse_file: Analyse) -> None:
    fixture = COSTS / "specialized.py"
    report = await analyse_file(fixture)
    ran = torch_run(fixture)
    specialized = [found for found in report.shapes if found.shape.decision == "specialized"]
    # Each of torch's own specializations, at the line of the user's stack it traced.
    assert [(s.shape.compile_id, s.shape.value, s.span.line) for s in specialized] == [
        (logged.compile_id, logged.value, logged.stack[-1][1]) for logged in ran.specializations
    ]
    assert all(logged.sources == ["L['x'].size()[0]"] for logged in ran.specializations)
    # The code itself where torch gives its columns (2.13+), else its line.
    code = "range(x.shape[0])" if COLUMNS else "for _ in range(x.shape[0]):"
    assert {(s.shape.subject, s.shape.dim, s.shape.reason, s.code) for s in specialized} == {
        ("x", 0, "code", code)
    }
    assert specialized[0].message == (
        f"dim 0 of `x` specialized to 4 at compilation 0/1 by `{code}`: the code needs its value, so each "
        "new value compiles again"
    )
    view = views.by_file(report)[str(fixture)]
    at = specialized[0].span
    assert hover_markdown(view, at.line, at.column, Where(str(fixture), str(FIXTURES))) == (
        f"{specialized[0].message} (line {at.line})"
    )
    # Declared dynamic, a size the code needs is refused by torch: no size fix is offered.
    problem = only_problem(report, "repeat")
    titles = [fix.title for fix in policy.for_recompile(problem, report, Sources(read_source))]
    assert not any("dynamic_shapes" in t or "shapes_spec" in t or "mark_" in t for t in titles)


async def test_the_size_fix_is_proven_and_torch_recompiles_less(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    path = tmp_path / GRAD_AND_SIZES.name
    path.write_text(GRAD_AND_SIZES.read_text())
    report = await analyse_file(path)
    problem = only_problem(report, "forward")
    sources = Sources(read_source)
    fix = policy.for_recompile(problem, report, sources)[0]
    features = problem.features
    expected = (
        "dynamic_shapes"
        if "dynamic_shapes_argument" in features
        else "shapes_spec"
        if "shapes_spec_argument" in features
        else "torch._dynamo.decorators.mark_unbacked"
    )
    assert expected in fix.title and fix.proof == "fewer_recompiles"
    assert await proofs_by(analyse_file).prove_recompile(fix, problem, report, sources) is None
    fixed = tmp_path / "fixed" / path.name
    fixed.parent.mkdir()
    fixed.write_text(apply(path.read_text(), list(fix.edits)))
    before, after = torch_run(path), torch_run(fixed)
    assert (before.status, after.status) == (0, 0)
    assert len(after.recompiles.recompiles) < len(before.recompiles.recompiles), after.stderr


@pytest.mark.parametrize(
    "fixture",
    [COSTS / "restarts.py", FIXTURES / "words" / "noisy_step.py"],  # `print`; numpy's number read out
    ids=lambda path: path.name,
)
async def test_a_break_costs_its_restart_and_the_code_after_it(analyse_file: Analyse, fixture: Path) -> None:
    report = await analyse_file(fixture)
    ran = torch_run(fixture)
    (brk,) = report.breaks
    (step,) = report.functions
    # The compilations torch restarted for the break its log names (torch 2.6: by its line of text,
    # its ATen operator and all; later releases: by its gb_type), which gbls names as it names the break.
    (logged,) = {entry.text.splitlines()[0] for entry in logged_script(fixture).main}
    restarted = {c.compile_id for c in ran.compiles if logged in c.restarts}
    assert restarted == {cost.compile_id for cost in step.costs if brk.cause.gb_type in cost.restarts}
    # Said as the break's gb_type is, in the user's words (torch 2.6: no ATen operator, no Dynamo
    # class: its `print` restart names `ConstantVariable`), but without the call (a row has none).
    rows = costs.rows(step, ())
    said = {reason for row in rows if row.cost.compile_id in restarted for reason in row.reasons}
    assert said == {words.said(brk.cause.gb_type, "")}
    resumed = {
        c.compile_id for c in ran.compiles if c.function == f"torch_dynamo_resume_in_step_at_{brk.span.line}"
    }
    assert restarted and resumed and {cost.compile_id for cost in brk.costs} == restarted | resumed
    assert brk.seconds == sum(
        cost.seconds if cost.compile_id in resumed else cost.restart_seconds / len(cost.restarts)
        for cost in brk.costs
    )
    assert "**Cost**: " in break_markdown(brk, step, Where(str(fixture), str(FIXTURES)), full=True)
    assert rows[-1].why == f"the code of `step` after line {brk.span.line} (a break)"


async def test_the_recompile_limit_under_fullgraph_raises_on_the_call_line(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    fixture = FIXTURES / "recompiles" / "fullgraph_limit.py"
    report = await analyse_file(fixture)
    assert_agrees_with_torch(report, fixture)
    ran = torch_run(fixture)
    # FailOnRecompileLimitHit from torch 2.7 (2.6: RecompileLimitExceeded), at the call past the limit.
    assert ran.status != 0 and re.search(
        r"^torch\._dynamo\.exc\.(FailOnRecompileLimitHit|RecompileLimitExceeded)", ran.stderr, re.M
    )
    frames = re.findall(rf'File "{re.escape(str(fixture))}", line (\d+)', ran.stderr)
    problem = only_problem(report, "total")
    assert problem.raises == "fullgraph=True"
    assert problem.raises_at is not None and problem.raises_at.span.line == int(frames[-1])
    assert problem.raise_message.startswith("fullgraph=True: this call raises at the recompile limit")
    # In the editor: an error on that line, beside the recompilation's own diagnostic (an error too).
    view = views.by_file(report)[str(fixture)]
    lines_of = lambda path: split_lines(Path(path).read_text())  # noqa: E731
    shown = file_diagnostics(view, fixture.read_text(), "warning", lines_of)
    (raised,) = [d for d in shown if d.code == "recompile-limit"]
    assert (raised.severity, raised.range.start.line) == (lsp.DiagnosticSeverity.Error, int(frames[-1]) - 1)
    assert [d.severity for d in shown if d.code == "recompile"] == [lsp.DiagnosticSeverity.Error]
    # The limit's fix: this compile call's own limit where torch.compile takes one, else the config.
    path = tmp_path / fixture.name
    path.write_text(fixture.read_text())
    copy = await analyse_file(path)
    found = only_problem(copy, "total")
    sources = Sources(read_source)
    (limit,) = [fix for fix in policy.for_recompile(found, copy, sources) if fix.proof == "under_limit"]
    if "recompile_limit_argument" in found.features:
        assert [edit.text for edit in limit.edits] == [", recompile_limit=16"]
    else:
        assert found.limit is not None
        config = f"torch._dynamo.config.{found.limit.limit} = 16"
        assert [edit.text.strip() for edit in limit.edits] == [config]
    assert await proofs_by(analyse_file).prove_recompile(limit, found, copy, sources) is None
    fixed = tmp_path / "fixed" / path.name
    fixed.parent.mkdir()
    fixed.write_text(apply(path.read_text(), list(limit.edits)))
    assert torch_run(fixed).status == 0


async def test_stances_are_read_where_the_program_sets_them(analyse_file: Analyse) -> None:
    fixture = COSTS / "stances.py"
    report = await analyse_file(fixture)
    ran = torch_run(fixture)
    assert [(s.stance.stance, s.span.line) for s in report.stances] == [
        ("eager_on_recompile", 10),
        ("fail_on_recompile", 13),
    ]
    # Under eager_on_recompile the call that did not fit ran eagerly: torch compiled it once, as gbls saw.
    assert ran.recompiles.recompiles == [] and not report.recompiles
    assert [c.compile_id for c in ran.compiles] == [c.compile_id for c in report.functions[0].costs]


def test_check_json_and_statistics_give_each_compilation() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--format", "json", "--statistics", str(GRAD_AND_SIZES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    (file,) = gbls_json(run.stdout)["files"]
    ran = torch_run(GRAD_AND_SIZES)
    (forward,) = file["functions"]
    assert [(c["compile_id"], c["guards"], c["ops"]) for c in forward["costs"]] == [
        (c.compile_id, c.guards, c.ops) for c in ran.compiles
    ]
    assert forward["cost"].startswith("`forward`: 4 compilations, ")
    assert [(s["decision"], s["reason"], s["compile_id"]) for s in file["shapes"]] == [
        ("dynamic", "changed", "0/2"),
        ("specialized", "zero_one", "0/3"),
    ]
    # The statistics go to stderr beside JSON: stdout stays one document.
    assert "compiled function" in run.stderr and forward["cost"] in run.stderr
    assert json.loads(run.stdout)
