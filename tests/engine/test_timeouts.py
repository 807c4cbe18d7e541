"""A program still running when its budget (the timeout) ends is cut, not failed: its result is "ok",
with where it was. Where gbls can stop it in its own code (as Ctrl-C would), the compiled code it
never reached is called with synthesized inputs, as after a program that ended; where it cannot
(Dynamo tracing for ever), what it never reached is said to be so, never "never ran"."""

from __future__ import annotations

from gbls.settings import Settings

from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots, summary

SCRIPTS = FIXTURES / "scripts"


async def test_after_a_timeout_what_was_not_reached_gets_synthesized_inputs(analyse_file: Analyse) -> None:
    fixture = SCRIPTS / "hangs.py"
    report = await analyse_file(fixture, settings=Settings(timeout=10))
    assert (report.status, report.message, report.failure_kind) == ("ok", "", "")
    assert report.cut is not None and report.cut.span is not None
    assert (report.cut.path, report.cut.span.line, report.cut.tracing) == (str(fixture), 22, "")
    assert report.cut.message.startswith("cut after 10 s at hangs.py:22: the program was still running")
    evaluate = summary(report, "evaluate")
    assert (evaluate.analysed, evaluate.target.input_source) == (True, "synthesized")
    # Run to its end, the script calls evaluate itself: the same breaks.
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)


async def test_a_timeout_inside_dynamo_says_what_it_did_not_reach(analyse_file: Analyse) -> None:
    fixture = SCRIPTS / "hangs_in_dynamo.py"
    report = await analyse_file(fixture, settings=Settings(timeout=10))
    assert (report.status, report.message) == ("ok", "")
    assert report.cut is not None and report.cut.tracing == "spin"
    assert report.cut.message.startswith("cut after 10 s at hangs_in_dynamo.py:")
    assert "while Dynamo was still translating `spin`" in report.cut.message
    later = summary(report, "later")
    assert (later.analysed, later.reason) == (
        False,
        "the program was cut at the end of its budget, before it ran it",
    )
    logged = logged_script(fixture, seconds=20).main  # what torch logged before it traced for ever
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)
