"""gbls.schema.json against ``gbls check --format json`` on the engine's and the recompilations'
fixtures: every break, recompilation, fix, failure and function gbls reports there fits it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..support import FIXTURES
from ..support.schema import gbls_json

ROOT = Path(__file__).parents[2]


def test_the_json_of_the_fixtures_fits_the_schema() -> None:
    folders = [str(FIXTURES / "engine"), str(FIXTURES / "recompiles")]
    result = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--format", "json", *folders],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 2, result.stderr  # syntax_error.py is not analysed
    files = gbls_json(result.stdout)["files"]
    # What the schema describes, each at least once, so that none of it goes unchecked.
    assert {file["status"] for file in files} == {"ok", "error"}
    assert any(file["failure"] for file in files)
    assert any(not function["analysed"] for file in files for function in file["functions"])
    assert any(brk["fix"] and brk["fix"]["edits"] for file in files for brk in file["breaks"])
    assert any(brk["effect"] == "eager" for file in files for brk in file["breaks"])
    recompiles = [found for file in files for found in file["recompiles"]]
    assert any(found["limit"] for found in recompiles)
    assert any(found["guard"] and found["guard"]["location"] for found in recompiles)
