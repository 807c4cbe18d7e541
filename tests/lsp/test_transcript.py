"""scripts/transcript.py, which records the LSP traffic of the end-to-end test's session with the
real server so that a refactor can show it changes nothing the server says: recorded here from this
checkout's server, it holds every answer the session asks for, and comparing it finds a change in
what the server said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ..support import ROOT

SCRIPT = ROOT / "scripts" / "transcript.py"


def compared(before: Path, after: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(SCRIPT), "--compare", str(before), str(after)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_the_transcript_of_a_session_says_what_the_server_answered(tmp_path: Path) -> None:
    recorded = tmp_path / "after.json"
    command = [sys.executable, str(SCRIPT), str(recorded)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stderr[-5000:]
    steps = json.loads(recorded.read_text())
    assert [step["step"] for step in steps] == [
        "initialize",
        "open preprocess.py",
        "save preprocess.py",
        "open model.py",
    ]
    for step in steps[1:]:
        pulled, hover, *_ = step["answers"]
        assert all(answer is not None and "code" not in answer for answer in step["answers"][:2]), step
        # The hover on the print where the graph breaks, and the break it explains pulled with it.
        assert "GB0059" in hover["contents"]["value"], hover
        assert any(item["code"] == "GB0059" for item in pulled["items"]), pulled
    # The saved edit added a print: the server said so, in its log and in the document's status.
    assert any("2 graph breaks" in line for line in steps[2]["logged"]), steps[2]["logged"]
    # The project's model.py is analysed by the run of train.py, whose fixes are proven for it.
    assert any(line.startswith("proved") and "train.py" in line for line in steps[3]["logged"])
    assert "<root>" in recorded.read_text() and str(tmp_path) not in recorded.read_text()

    same = compared(recorded, recorded)
    assert (same.returncode, same.stdout.strip()) == (0, "the same traffic")
    changed = tmp_path / "changed.json"
    hover["contents"]["value"] = hover["contents"]["value"].replace("GB0059", "GB0000")
    changed.write_text(json.dumps(steps))
    different = compared(recorded, changed)
    assert different.returncode == 1, different.stdout
    assert "open model.py: answers differs" in different.stdout, different.stdout
