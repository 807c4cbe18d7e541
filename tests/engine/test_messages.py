"""Failures said in words that explain themselves: where a relative path was looked for.

A file runs as ``python FILE`` from the folder its users start it in: the file's reads see that
folder, as they would under plain ``python``.
"""

from __future__ import annotations

from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings

from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots

SCRIPTS = FIXTURES / "scripts"


async def test_a_relative_path_is_read_from_the_folder_the_file_runs_from(analyse_file: Analyse) -> None:
    fixture = SCRIPTS / "relative_open.py"
    report = await analyse_file(fixture)  # started in its own folder, where steps.txt is
    assert report.status == "ok", report.message
    logged = logged_script(fixture, cwd=SCRIPTS).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)


async def test_a_relative_path_not_found_says_where_it_was_looked_for(worker: Worker) -> None:
    fixture = SCRIPTS / "relative_open.py"
    report = await analyse(
        worker,
        str(fixture),
        read_source(str(fixture)) or "",
        Settings(),
        str(SCRIPTS),
        read_source,
        cwd=str(FIXTURES),
    )
    assert (report.status, report.failure_kind) == ("error", "raised")
    assert report.failure_span is not None and report.failure_span.line == 13
    assert report.message == (
        "FileNotFoundError: [Errno 2] No such file or directory: 'steps.txt' (a relative path, looked up in "
        f"{FIXTURES}, where gbls runs the file from; steps.txt is in {SCRIPTS})"
    )
    # Started from that folder, the program fails there under plain python too, after the same break.
    logged = logged_script(fixture, cwd=FIXTURES).main
    assert_same_roots(report, logged)
