"""``gbls check --baseline``: a baseline written for the demo, then the demo edited three ways."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..support.schema import gbls_json

ROOT = Path(__file__).parents[2]
DEMO = ROOT / "examples" / "demo.py"
PRINT = '    print("normalizing", x.shape)  # a print two calls deep breaks the caller\'s graph\n'


def gbls(*arguments: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gbls", "check", *arguments],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),  # this checkout's gbls, wherever it runs from
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finished(process: subprocess.Popen[str]) -> subprocess.CompletedProcess[str]:
    out, err = process.communicate(timeout=900)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_only_what_the_baseline_does_not_hold_fails(tmp_path: Path) -> None:
    for name in ("new", "fixed", "moved"):
        (tmp_path / name).mkdir()
        shutil.copy(DEMO, tmp_path / name / "demo.py")
    written = finished(gbls("--baseline", "gbls-baseline.json", "--update-baseline", ".", cwd=tmp_path))
    assert written.returncode == 0, written.stderr
    assert "gbls: wrote 12 entries to gbls-baseline.json" in written.stderr
    assert written.stdout.splitlines()[-1] == (
        "Found no graph break in fixed/demo.py, moved/demo.py and new/demo.py; 12 compile sites, all "
        "analysed; 12 more in the baseline gbls-baseline.json."
    )
    entries = json.loads((tmp_path / "gbls-baseline.json").read_text())["entries"]
    of_fixed = [e for e in entries if e["path"] == "fixed/demo.py"]
    assert [tuple(e.values()) for e in of_fixed] == [
        ("fixed/demo.py", "Head", "Dynamic shape operator", "torch.nonzero(logits > 0)"),
        ("fixed/demo.py", "gate", "Data-dependent branching", "x.sum() > 0"),
        (
            "fixed/demo.py",
            "gate",
            "Unsupported Tensor.item() call with capture_scalar_outputs=False",
            "x.abs().max().item()",
        ),
        ("fixed/demo.py", "preprocess", "Failed to trace builtin operator", 'print("normalizing", x.shape)'),
    ]

    new, fixed, moved = (tmp_path / name / "demo.py" for name in ("new", "fixed", "moved"))
    new.write_text(
        DEMO.read_text().replace("    return torch.relu(", '    print("fused")\n    return torch.relu(')
    )
    assert PRINT in DEMO.read_text()
    fixed.write_text(DEMO.read_text().replace(PRINT, ""))
    # A blank line above every line where the demo's graphs break, and above each root cause.
    lines = DEMO.read_text().splitlines(keepends=True)
    moved.write_text(
        "".join(
            ("\n" if number in (8, 20, 26, 28, 39) else "") + line for number, line in enumerate(lines, 1)
        )
    )

    every = gbls("--baseline", "gbls-baseline.json", "--format", "json", ".", cwd=tmp_path)
    old = gbls("--baseline", "gbls-baseline.json", "fixed", "moved", cwd=tmp_path)
    every_run, old_run = finished(every), finished(old)

    # Only the new break fails; the one fixed is removable; the ones moved down still match.
    assert every_run.returncode == 1, every_run.stderr
    document = gbls_json(every_run.stdout)
    breaks = {Path(f["path"]).parent.name: f["breaks"] for f in document["files"]}
    assert {name: [(b["function"], b["gb_type"]) for b in found] for name, found in breaks.items()} == {
        "new": [("fused", "Failed to trace builtin operator")],
        "fixed": [],
        "moved": [],
    }
    assert document["baseline"] == {
        "path": str(tmp_path / "gbls-baseline.json"),
        "matched": 11,
        "removable": [of_fixed[-1]],
    }

    # Files not analysed keep their entries, neither matched nor removable.
    assert old_run.returncode == 0, old_run.stderr
    assert old_run.stdout.splitlines()[-3:] == [
        "Found no graph break in fixed/demo.py and moved/demo.py; 8 compile sites, all analysed; "
        "7 more in the baseline gbls-baseline.json.",
        "gbls-baseline.json: 1 entry no longer occurs; `--update-baseline` removes it:",
        '  fixed/demo.py: Failed to trace builtin operator in preprocess (print("normalizing", x.shape))',
    ]
