"""The engine's pieces that need no translator: spans without a column table, and results the
source cannot bear out."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gbls.engine.report import build, checked
from gbls.engine.sources import read_source
from gbls.worker.shared.protocol import OK, Break, Frame, Function, Result


def test_spans_without_columns_cover_the_line() -> None:
    """Python < 3.11 gives no column table: the whole line, from its first non-blank character."""
    from gbls.engine.ranges import Span, span_of

    assert span_of("def f():\n    print(x)  \n", 2, None, None) == Span(2, 4, 2, 14)


def test_results_that_cannot_be_true_of_the_source_are_dropped(tmp_path: Path) -> None:
    """What the analysed code can forge: a frame outside the file, a negative column, a device."""
    path = str(tmp_path / "forged.py")
    source = "import torch\n\n\ndef f(x):\n    return x\n"

    def brk(*frames: Frame) -> Break:
        return Break("f", "Forged", None, None, "", (), "", frames)

    good = brk(Frame(path, "f", 5, 4, 12))
    result = Result(
        path=path,
        status=OK,
        breaks=(
            good,
            brk(Frame(path, "f", 6, 0, 1)),  # past the end of the file
            brk(Frame(path, "f", 5, -1, 3)),
            brk(Frame(path, "f", 5, 40, 41)),  # past the end of the line
            brk(Frame(path, "f", 5, 4, 12), Frame("/dev/zero", "g", 1, 0, 1)),
            brk(Frame("helper.py", "f", 1, 0, 1)),
            brk(Frame(path, "f", 2**40, 0, 1)),
        ),
        functions=(Function("f", "f", path, -3),),
    )
    report = build(path, source, result, (), read_source)
    assert [b.span.line for b in report.breaks] == [5]
    assert report.functions == () and report.status == "error" and report.failure_kind == "tampered"
    assert report.message.startswith(
        "the analysed code tampered with gbls's results (a frame is at line 6, column 0, outside forged.py, "
        "and 6 more)"
    )
    assert checked(
        path, source, dataclasses.replace(result, breaks=(good,), functions=())
    ) == dataclasses.replace(result, breaks=(good,), functions=())
