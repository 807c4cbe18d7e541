"""Recompilations the analysed code forges: dropped without a translator, as the source cannot bear
them out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gbls.engine.ranges import Span
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
