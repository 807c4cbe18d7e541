"""Failures said in words that explain themselves: what the analysis's own working directory has to
do with a file that was not found."""

from __future__ import annotations

from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots

SCRIPTS = FIXTURES / "scripts"


async def test_a_relative_path_not_found_says_where_the_analysis_runs(analyse_file: Analyse) -> None:
    fixture = SCRIPTS / "relative_open.py"
    report = await analyse_file(fixture)
    assert (report.status, report.failure_kind) == ("error", "raised")
    assert report.failure_span is not None and report.failure_span.line == 13
    assert report.message == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'steps.txt' (a relative path: gbls runs "
        "the file in a scratch directory of its own, not in the folder you run it from; steps.txt is in "
        f"{SCRIPTS}: open it relative to the file, `Path(__file__).parent / ...`)"
    )
    # Run from its folder, as torch's log has it, the program reads the file: the same break before.
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)
