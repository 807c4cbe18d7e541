"""A program the timeout stops: where gbls can stop it in its own code (as Ctrl-C would), the compiled
code it never reached is called with synthesized inputs, as after a program that ended; where it
cannot (Dynamo tracing for ever), what it never reached is said to be so, never "never ran"."""

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
    assert (report.status, report.message) == ("timeout", "timed out after 10 s while running line 22")
    evaluate = summary(report, "evaluate")
    assert (evaluate.analysed, evaluate.target.input_source) == (True, "synthesized")
    # Run to its end, the script calls evaluate itself: the same breaks.
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)


async def test_a_timeout_inside_dynamo_says_what_it_did_not_reach(analyse_file: Analyse) -> None:
    fixture = SCRIPTS / "hangs_in_dynamo.py"
    report = await analyse_file(fixture, settings=Settings(timeout=10))
    assert report.status == "timeout"
    assert report.message.startswith("timed out after 10 s while Dynamo was tracing line")
    later = summary(report, "later")
    assert (later.analysed, later.reason) == (False, "the analysis timed out before it ran")
    logged = logged_script(fixture, seconds=20).main  # what torch logged before it traced for ever
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)
