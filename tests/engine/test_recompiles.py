"""Recompilations, on real fixture files and the real translator, against torch's own recompiles log."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from gbls.engine.model import FileReport, FunctionReport, RecompileReport
from gbls.worker.shared import reasons
from gbls.worker.shared.frames import base_name
from gbls.worker.shared.protocol import Guard, Recompile

from ..support import FIXTURES
from ..support.torchlog_recompiles import COLUMNS, LoggedRecompile, logged_recompiles
from ..support.worker import Analyse

RECOMPILES = FIXTURES / "recompiles"
# The config that limits recompilations: renamed in torch 2.7.
LIMIT = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"


def in_words(check: str, guard: Guard) -> str:
    """A check as torch printed it, as gbls says it: locals and globals by their names, Dynamo's
    helpers as the Python they compute, a value held across a break (``___stack0``) as the code gbls
    names (which ``test_words`` checks against torch's own resume functions)."""
    unscoped = re.sub(r"\b[LG]\['([^']+)'\]", r"\1", check)
    return reasons.HELD.sub(lambda _: guard.subject, reasons.readable(unscoped))


def own_frame(function: FunctionReport) -> str:
    return "forward" if function.kind == "module" else function.qualname.rsplit(".", 1)[-1]


def logged_of(fixture: Path, frame: str) -> list[LoggedRecompile]:
    """torch's log of the recompilations of ``frame`` (a code name) in the fixture's own file."""
    return [
        entry
        for entry in logged_recompiles(fixture).recompiles
        if entry.path == str(fixture) and base_name(entry.function) == frame
    ]


def assert_agrees_with_torch(report: FileReport, fixture: Path) -> None:
    """Each function's recompilations are torch's: the same compile ids, the same failed check of
    the same compiled version, installed on the same line, the same recompile limit; and its
    compilations are the first one, plus each recompilation that compiled."""
    logged = logged_recompiles(fixture)
    for function in report.functions:
        ours: list[Recompile] = sorted(
            (
                r
                for found in report.recompiles_of(function.qualname)
                if found.direct
                for r in found.recompiles
            ),
            key=lambda r: [int(part) for part in r.compile_id.split("/")],
        )
        theirs = logged_of(fixture, own_frame(function))
        assert [r.compile_id for r in ours] == [entry.compile_id for entry in theirs], function.qualname
        for recompile, entry in zip(ours, theirs, strict=True):
            guard, reason = recompile.guard, entry.reasons[0]
            assert guard is not None
            assert (guard.failed, guard.text) == (reason.failed, in_words(reason.text, guard))
            if reason.stack:
                assert (guard.chain[-1].path, guard.chain[-1].line) == reason.stack[-1][:2]
            elif reason.located:
                ending, line, _ = reason.located
                assert guard.chain[-1].path.endswith(ending) and guard.chain[-1].line == line
            else:  # torch does not say where (before 2.10): nor does gbls pretend to know
                assert guard.chain == ()
        frames = {entry.compile_id.split("/")[0] for entry in theirs}
        limits = [
            (e.compile_id, e.limit, e.value) for e in logged.limits if e.compile_id.split("/")[0] in frames
        ]
        assert [(r.compile_id, r.limit, r.limit_value) for r in ours if r.limit] == limits
        if function.analysed:
            assert function.compilations == 1 + len(theirs) - len(limits), function.qualname


def placed(fixture: Path, function: str) -> bool:
    """Whether torch says where the failed checks of ``function`` were installed (2.10+); if not,
    gbls shows its recompilations on the argument a check is about, else on the function."""
    return any(
        reason.stack or reason.located for entry in logged_of(fixture, function) for reason in entry.reasons
    )


def marked(fixture: Path, function: str, expression: str, name: str, elsewhere: str) -> str:
    """What gbls marks for a recompilation: the check's expression where torch gives its columns
    (2.13+, Python 3.11+), the checked name in the check's line where torch gives only the line
    (2.10-2.12), else ``elsewhere`` (the argument in the def line, or the compile site)."""
    if not placed(fixture, function):
        return elsewhere
    return expression if COLUMNS else name


def only(report: FileReport, function: str) -> RecompileReport:
    (found,) = report.recompiles_of(function)
    return found


def span_text(path: Path, found: RecompileReport) -> str:
    span = found.span
    assert span.line == span.end_line
    return path.read_text().splitlines()[span.line - 1][span.column : span.end_column]


async def test_a_string_switch_recompiles_until_the_limit(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "switch.py"
    report = await analyse_file(fixture)
    pick = only(report, "pick")
    assert (pick.count, pick.settled, pick.direct) == (8, False, True)
    assert span_text(fixture, pick) == marked(fixture, "pick", 'mode == "a"', "mode", "mode")
    assert pick.span.line == (6 if placed(fixture, "pick") else 5)
    assert pick.guard is not None and (pick.guard.text, pick.guard.kind, pick.guard.subject) == (
        "mode == 'a'",
        "value",
        "mode",
    )
    limit = pick.limit
    assert limit is not None and (limit.limit, limit.limit_value, limit.compile_id) == (
        LIMIT,
        8,
        "0/8",
    )
    assert pick.message == (
        "`pick` recompiled 8 times: guard `mode == 'a'` failed (the value of `mode` changes between calls); "
        "it hit the recompile limit (8), so from then on `pick` runs in eager mode whenever none of its "
        "compiled versions fits the call"
    )
    # The limit is a recompilation, not a graph break.
    assert report.breaks == () and report.problems == (pick,)
    (function,) = report.functions
    assert function.compilations == 8 and len(function.graphs) == 8
    assert_agrees_with_torch(report, fixture)


async def test_int_arguments(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "int_argument.py"
    report = await analyse_file(fixture)
    scaled, repeat = only(report, "scaled"), only(report, "repeat")
    assert (scaled.count, repeat.count) == (3, 3)
    assert span_text(fixture, scaled) == marked(fixture, "scaled", "x * k", "k", "k")
    assert scaled.why == "the value of `k` changes between calls"
    # Inside the loop Dynamo guards a symbolic n, whose checks say only their line: the first says more.
    # torch 2.13+ gives the columns of the check's call, older ones only its line (gbls marks the name).
    assert span_text(fixture, repeat) in ("range(n)", "n") and repeat.span.line == 11
    assert [r.guard.text for r in repeat.recompiles if r.guard] == ["n == 1", "n == 2", "n == 3"]
    assert_agrees_with_torch(report, fixture)


async def test_a_changing_global(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "global_change.py"
    report = await analyse_file(fixture)
    activate = only(report, "activate")
    assert activate.count == 3 and activate.guard is not None and activate.guard.is_global
    assert activate.why == "the global `ACTIVATION` changes between calls"
    assert span_text(fixture, activate) == marked(
        fixture, "activate", 'ACTIVATION == "relu"', "ACTIVATION", "activate"
    )
    assert_agrees_with_torch(report, fixture)


async def test_shapes_with_and_without_automatic_dynamic(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "shapes.py"
    report = await analyse_file(fixture)
    grow, fixed = only(report, "grow"), only(report, "fixed")
    # Automatic dynamic shapes: one recompilation, and the new graph takes any size.
    assert (grow.count, grow.settled, grow.dynamic) == (1, True, True)
    assert (fixed.count, fixed.settled, fixed.dynamic) == (3, False, False)
    assert report.problems == (fixed,)
    # A check on a tensor's size says no line: it sits on the argument, in the def line.
    assert (fixed.span.line, span_text(fixture, fixed)) == (10, "x")
    assert fixed.why == "the shape of `x` changes between calls"
    assert_agrees_with_torch(report, fixture)


async def test_a_module_whose_attribute_changes(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "module_attribute.py"
    report = await analyse_file(fixture)
    scale = only(report, "Scale")
    # torch 2.6 makes the attribute dynamic after one recompilation, later releases never do.
    assert (scale.count, scale.frame.name) == (len(logged_of(fixture, "forward")), "forward")
    assert span_text(fixture, scale) == marked(
        fixture, "forward", "x * self.factor", "self.factor", "torch.compile(Scale())"
    )
    hinted = any(r.hinted for entry in logged_of(fixture, "forward") for r in entry.reasons)
    assert scale.guard is not None and ("allow_unspec_int_on_nn_module" in scale.guard.hint) == hinted
    assert_agrees_with_torch(report, fixture)


async def test_the_limit_on_shapes(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "limit.py"
    report = await analyse_file(fixture)
    total = only(report, "total")
    assert total.count == 8 and total.limit is not None and total.limit.compile_id == "0/8"
    assert span_text(fixture, total) == "x"
    assert_agrees_with_torch(report, fixture)


async def test_a_resume_function_recompiles_as_its_function(analyse_file: Analyse) -> None:
    fixture = RECOMPILES / "resumed.py"
    report = await analyse_file(fixture)
    staged = only(report, "staged")
    assert staged.direct and staged.frame.name == "staged" and staged.count == 3
    assert span_text(fixture, staged) in ("range(n)", "n") and staged.span.line == 8  # as for ``repeat``
    assert [brk.gb_id for brk in report.breaks] == ["GB0059"]
    assert_agrees_with_torch(report, fixture)
