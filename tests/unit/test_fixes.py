"""A fix's snippet, for editors that take them: no server, no translator."""

from __future__ import annotations

from ..support import FIXTURES

FIXES = FIXTURES / "fixes"


def test_skeleton_placeholders_for_editors_that_take_snippets() -> None:
    from gbls.engine.fixes.catalogue import fixes_for
    from gbls.engine.model import BreakReport, Location
    from gbls.engine.ranges import Span
    from gbls.engine.sources import Sources, read_source
    from gbls.worker.shared.protocol import Break, Frame

    path = str(FIXES / "branch_skeleton.py")
    root = Location(path, "accumulate", Span(6, 7, 6, 18))
    cause = Break(
        "accumulate", "Data-dependent branching", "GB0170", None, "", (), "", (Frame(path, "accumulate", 6),)
    )
    brk = BreakReport(cause, path, root.span, (root,), "x.sum() > 0")
    (skeleton,) = fixes_for(brk, path, Sources(read_source))
    (edit,) = skeleton.edits
    assert edit.snippet and "def _true_branch(${1:x}):" in edit.text and "return ${3:x}" in edit.text
    assert "${" not in edit.plain_text
