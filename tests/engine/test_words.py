"""gbls says what it found in the user's words: nothing it produces on the fixtures the engine
tests analyse, files and runs (``gbls check``'s text and JSON, diagnostics, hovers, the break
report, code lenses, code actions) names Dynamo's internals: a value kept across a break
(``___stack0``), a guard's helper (``___check_obj_id``), a resume function
(``torch_dynamo_resume_in_step_at_10``) or an ATen operator (``aten.nonzero.default``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gbls.engine.runs import entry_of
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.shared import reasons
from gbls.worker.shared.frames import base_name, resume_line
from gbls.worker.shared.protocol import Guard, Run

from ..support import FIXTURES
from ..support.said import internal_names
from ..support.torchlog import logged_script
from ..support.torchlog_recompiles import logged_recompiles
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots

# The fixture folders the engine layer analyses, file by file.
FOLDERS = (
    "cuda",
    "engine",
    "fidelity",
    "fixes",
    "guards",
    "hatches",
    "hover",
    "incremental",
    "nested",
    "raising",
    "recompiles",
    "scripts",
    "testing",
    "values",
    "words",
)
FILES = sorted(
    path
    for folder in FOLDERS
    for path in (FIXTURES / folder).rglob("*.py")
    if "compile" in path.read_text(encoding="utf-8", errors="replace")
)


def in_words(check: str, guard: Guard) -> str:
    """A check as torch printed it, as gbls says it: locals and globals by their names, Dynamo's
    helpers as the Python they compute, a value held across a break (``___stack0``) as the code gbls
    names (which the test checks against torch's own resume functions)."""
    return reasons.HELD.sub(lambda _: guard.subject, reasons.readable(check))


# The runs the engine layer analyses, as their users start them: (folder, script, arguments, variables).
RUNS = [
    ("fastgen", "generate.py", ("--compile",), ()),
    ("fastgen", "generate.py", ("--compile", "--draft", "--compile_prefill"), ()),
    ("twofile", "train.py", (), ()),
    ("echoed", "check_args.py", ("--label", "two words"), (("MODE", "a b"),)),
]


@pytest.mark.parametrize("path", FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
async def test_nothing_gbls_says_names_dynamos_internals(analyse_file: Analyse, path: Path) -> None:
    report = await analyse_file(path)
    assert internal_names([report], str(path.parent)) == []


@pytest.mark.parametrize("folder, script, arguments, env", RUNS, ids=lambda value: str(value))
async def test_nothing_gbls_says_of_a_run_names_dynamos_internals(
    worker: Worker, folder: str, script: str, arguments: tuple[str, ...], env: tuple[tuple[str, str], ...]
) -> None:
    where = FIXTURES / "runs" / folder
    run = Run(script, str(where / script), "", arguments, str(where), env)
    path = entry_of(run)
    report = await analyse(
        worker, path, read_source(path) or "", Settings(), str(where), read_source, run=run
    )
    assert report.status == "ok", report.message
    assert internal_names([report], str(where)) == []


async def test_a_value_held_across_a_break_is_the_call_torch_resumed_after(analyse_file: Analyse) -> None:
    """A guard on ``___stack0`` of ``torch_dynamo_resume_in_step_at_14`` is on what the call at
    line 14 returned: the break torch logs there is the call gbls names, at the place gbls shows."""
    fixture = FIXTURES / "words" / "noisy_step.py"
    report = await analyse_file(fixture)
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)  # the break at `np.random.rand()`, as torch logs it
    (brk,) = report.breaks
    (found,) = report.recompiles
    resumed = [entry for entry in logged_recompiles(fixture).recompiles if entry.path == str(fixture)]
    assert [r.compile_id for r in found.recompiles] == [entry.compile_id for entry in resumed]
    for recompile, entry in zip(found.recompiles, resumed, strict=True):
        # torch compiled the rest of `step` again, after line 12, for the value on its stack there.
        assert (base_name(entry.function), resume_line(entry.function)) == ("step", brk.span.line)
        reason, guard = entry.reasons[0], recompile.guard
        assert guard is not None and "___stack0" in reason.text
        assert (guard.subject, guard.text) == (brk.call, in_words(reason.text, guard))
        assert guard.origin is not None and (guard.origin.function, guard.origin.line) == (
            "step",
            brk.span.line,
        )
    assert brk.call == "np.random.rand()" and found.origin is not None and found.origin.span == brk.span
    held = f"held across the graph break at line {brk.span.line} of `step`"
    assert found.why == f"the value of `np.random.rand()`, {held}, changes between calls"
    # The break's own text names the call, not the operator Dynamo traced it as.
    assert "`np.random.rand()`" in brk.explanation and "aten." not in brk.explanation
    assert "aten." in brk.cause.explanation  # as torch wrote it: the words are gbls's


async def test_a_graph_break_torch_asks_for_says_whose_it_is(analyse_file: Analyse) -> None:
    """torch's optimizer calls ``torch._dynamo.graph_break()`` in its own code: the break is on the
    user's ``optimizer.step()``, said as torch's own, for PyTorch to act on."""
    fixture = FIXTURES / "words" / "optimizer_step.py"
    report = await analyse_file(fixture)
    logged = logged_script(fixture).main
    # Each break torch logged, at its last line of the user's code (gbls folds torch's own frames).
    # (torch logs the break once more as it translates its own optimizer's frame: no line of the user's.)
    users = [[frame for frame in entry.stack if frame.path == str(fixture)] for entry in logged]
    mine = {(frames[-1].path, frames[-1].line) for frames in users if frames}
    assert {(brk.root.path, brk.root.span.line) for brk in report.breaks} == mine
    (asked,) = [brk for brk in report.breaks if brk.torch_asks]
    assert (asked.call, asked.owner) == ("optimizer.step()", "pytorch")
    assert asked.torch_asks == "torch's own graph_break(), inside `optimizer.step()`"
    assert asked.message.endswith(f"; {asked.torch_asks}")
    # torch's log of the same break goes on below the user's line, into torch's own optimizer.
    (entry,) = [
        e
        for e in logged
        if e.stack and e.stack[-1].path.endswith(os.path.join("torch", "optim", "optimizer.py"))
    ]
    user = [frame for frame in entry.stack if frame.path == str(fixture)]
    assert (user[-1].path, user[-1].line) == (str(fixture), asked.span.line)
    # The user's own calls into torch that Dynamo refuses are theirs to change.
    assert all(not brk.torch_asks and brk.owner == "user" for brk in report.breaks if brk is not asked)
