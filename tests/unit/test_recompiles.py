"""Recompilations the analysed code forges: dropped without a translator, as the source cannot bear
them out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gbls.engine.ranges import Span
from gbls.engine.recompiles import remedies
from gbls.engine.report import build
from gbls.engine.sources import read_source
from gbls.worker.shared.protocol import OK, Code, Frame, Function, Guard, Recompile, Result


def test_recompilations_that_cannot_be_true_of_the_source_are_dropped(tmp_path: Path) -> None:
    """The analysed code can forge its recompilations too: a frame outside the file, a device."""
    path = str(tmp_path / "forged.py")
    source = "import torch\n\n\ndef f(x):\n    return x * 2\n"
    guard = Guard("x == 1", "0/0", "value", "x", chain=(Frame(path, "f", 5, 11, 16),))
    good = Recompile("f", Code(path, 4, "f"), True, "0/1", guard)
    result = Result(
        path=path,
        status=OK,
        functions=(Function("f", "f", path, 4, analysed=True),),
        recompiles=(
            good,
            dataclasses.replace(good, frame=Code(path, 99, "f")),
            dataclasses.replace(
                good, guard=dataclasses.replace(guard, chain=(Frame("/dev/zero", "f", 1, 0, 1),))
            ),
        ),
    )
    report = build(path, source, result, (), read_source)
    assert [found.recompiles for found in report.recompiles] == [(good,)]
    assert report.recompiles[0].span == Span(5, 11, 5, 16)
    assert report.failure_kind == "tampered" and "and 1 more" in report.message


def test_a_value_held_across_a_break_is_said_as_the_call_it_came_from(tmp_path: Path) -> None:
    """A guard on what a resume function received names the call the function broke at, and where;
    the advice is about that call, not about a tensor argument."""
    path = str(tmp_path / "noisy.py")
    source = (
        "import torch\n\n\ndef step(x):\n    noise = np.random.rand()\n    return x * float(np.tanh(noise))\n"
    )
    origin = Frame(path, "step", 5, 12, 28)
    guard = Guard("np.random.rand() == 0.5", "1/0", "value", "np.random.rand()", origin=origin)
    recompile = Recompile("step", Code(path, 4, "step"), True, "1/1", guard)
    result = Result(path=path, status=OK, functions=(Function("step", "step", path, 4, analysed=True),))
    report = build(
        path, source, dataclasses.replace(result, recompiles=(recompile, recompile)), (), read_source
    )
    (found,) = report.recompiles
    held = "held across the graph break at line 5 of `step`"
    assert found.why == f"the value of `np.random.rand()`, {held}, changes between calls"
    assert found.origin is not None and found.origin.span == Span(5, 12, 5, 28)
    first, second = remedies(found)
    assert first.startswith("`np.random.rand()` gives `step` a Python number at its graph break on line 5")
    assert second == "Or remove the graph break at line 5: traced, the value stays inside the graph."
    # A forged origin outside the file is dropped like any other frame.
    forged = dataclasses.replace(guard, origin=Frame(path, "step", 99, 0, 1))
    result = dataclasses.replace(result, recompiles=(dataclasses.replace(recompile, guard=forged),))
    assert build(path, source, result, (), read_source).recompiles == ()


def test_a_number_that_drives_range_is_specialized_and_said_so(tmp_path: Path) -> None:
    path = str(tmp_path / "loops.py")
    source = "def repeat(x, n):\n    for _ in range(n):\n        x = x + 1\n    if n > 3:\n        x = -x\n"
    loop = Guard("n == 1", "0/0", "value", "n", chain=(Frame(path, "repeat", 2, 13, 21),))
    branch = dataclasses.replace(loop, chain=(Frame(path, "repeat", 4, 7, 12),))
    function = Function("repeat", "repeat", path, 1, analysed=True)
    tips = []
    for guard in (loop, branch):
        recompiles = tuple(
            Recompile("repeat", Code(path, 1, "repeat"), True, f"0/{i}", guard) for i in (1, 2)
        )
        result = Result(path=path, status=OK, functions=(function,), recompiles=recompiles)
        (found,) = build(path, source, result, (), read_source).recompiles
        tips.append(remedies(found))
    in_range, in_branch = tips
    assert found.guarded == "n > 3"
    assert in_range[0].startswith("`n` sets how many times `range(n)` loops: Dynamo unrolls the loop")
    assert not any("as a tensor (" in tip for tip in in_range)  # a tensor cannot drive range()
    assert in_branch[0].startswith("`n` decides a branch (`n > 3`)")
