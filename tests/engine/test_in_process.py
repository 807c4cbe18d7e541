"""The analysis in one process (``gbls check --in-process``, for debugging gbls) is the analysis the
forked worker makes: the same report for the same file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ..support import FIXTURES
from ..support.measured import unmeasured
from ..support.schema import gbls_json


def check(*arguments: str) -> tuple[dict[str, object], str]:
    completed = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--format", "json", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode in (0, 1), completed.stderr
    return gbls_json(completed.stdout), completed.stderr


# Fixtures whose graphs do not depend on random data (the demo's gate branches on x.sum() > 0).
@pytest.mark.parametrize(
    "fixture",
    [FIXTURES / "engine" / "deep_helpers.py", FIXTURES / "recompiles" / "switch.py"],
    ids=lambda p: p.name,
)
def test_the_analysis_in_process_reports_what_the_forked_worker_reports(fixture: Path) -> None:
    forked, _ = check(str(fixture))
    here, events = check("--in-process", str(fixture))
    assert unmeasured(here) == unmeasured(forked)
    assert forked["files"][0]["breaks"] or forked["files"][0]["recompiles"]  # type: ignore[index]
    # Every event was shown as it happened, the program's own output with them, on stderr.
    assert '"event":"target"' in events and '"event":"done"' in events
