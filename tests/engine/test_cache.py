"""The persistent cache through the real ``gbls check`` and ``gbls run``: a second run of an unchanged
project prints the same bytes without starting a worker; a comment edit is still served, its lines
moved; a code edit in an executed file, another torch or another run's environment analyses again.

Whether a worker ran is read from its own log (``GBLS_WORKER_LOG=1``), and whether the cache served
the analyses from gbls's note: how long each takes is the benchmark's business."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support import FIXTURES, ROOT

COMPAT = Path(os.environ.get("GBLS_COMPAT_CACHE", Path.home() / ".cache" / "gbls-compat"))
SERVED = "1 of 1 analyses from the cache in .gbls_cache"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(FIXTURES / "runs" / "twofile", folder)
    return folder


def gbls(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``gbls ARGUMENTS`` in ``project``, the cache in its default place there, the worker's log on."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GBLS_")}
    environment["GBLS_WORKER_LOG"] = "1"
    # This checkout's gbls, wherever the test runs it from.
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), environment.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "gbls", *arguments],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def worker_ran(result: subprocess.CompletedProcess[str]) -> bool:
    return "gbls worker [" in result.stderr


def served(result: subprocess.CompletedProcess[str]) -> bool:
    return SERVED in result.stderr and not worker_ran(result)


def moved(output: str, lines: int) -> str:
    """``output`` with every line of model.py ``lines`` further down."""
    return re.sub(r"model\.py:(\d+)", lambda found: f"model.py:{int(found[1]) + lines}", output)


def test_a_second_check_is_served_from_the_cache_until_the_code_changes(project: Path) -> None:
    first = gbls(project, "check", "train.py")
    assert first.returncode == 1 and "model.py:13:" in first.stdout, first.stderr
    # What is fixable is proven by re-analysis: the proofs' verdicts are kept with the analyses.
    assert "[*] 1 fixable with `gbls check --fix`." in first.stdout
    assert worker_ran(first) and SERVED not in first.stderr
    assert (project / ".gbls_cache" / ".gitignore").read_text().splitlines()[-1] == "*"

    second = gbls(project, "check", "train.py")
    assert served(second), second.stderr
    assert (second.stdout, second.returncode) == (first.stdout, first.returncode)

    model = project / "model.py"
    code = model.read_text()
    model.write_text("# The model.\n\n" + code.replace("h.norm())", "h.norm())  # for the log"))
    commented = gbls(project, "check", "train.py")
    assert served(commented), commented.stderr
    assert commented.stdout == moved(first.stdout, 2) != first.stdout

    model.write_text(code.replace(".item()", ".item()\n        h = h + 1"))
    edited = gbls(project, "check", "train.py")
    assert worker_ran(edited) and SERVED not in edited.stderr
    assert edited.stdout == first.stdout  # the same breaks: the new line is below them

    uncached = gbls(project, "check", "--no-cache", "train.py")
    assert worker_ran(uncached) and SERVED not in uncached.stderr
    assert uncached.stdout == first.stdout


def other_torches() -> list[Path]:
    """The interpreters of the compatibility venvs and of this checkout's ``.venv`` but this test's own:
    in the suite the compatibility venvs (if made yet), in a compatibility run the checkout's torch."""
    own = Path(sys.prefix).resolve()
    found = [*sorted(COMPAT.glob("py*-torch*/bin/python")), ROOT / ".venv" / "bin" / "python"]
    return [python for python in found if python.exists() and python.parent.parent.resolve() != own]


def test_another_torch_analyses_again(project: Path) -> None:
    others = other_torches()
    if not others:
        pytest.skip(f"no virtual environment with another torch in {COMPAT} or {ROOT / '.venv'}")
    first = gbls(project, "check", "--format", "json", "train.py")
    assert worker_ran(first), first.stderr
    other = gbls(project, "check", "--format", "json", "--python", str(others[-1]), "train.py")
    assert worker_ran(other) and SERVED not in other.stderr, other.stderr
    again = gbls(project, "check", "--format", "json", "--python", str(others[-1]), "train.py")
    assert served(again) and again.stdout == other.stdout


def test_a_run_is_served_from_the_cache_until_its_environment_changes(project: Path) -> None:
    first = gbls(project, "run", "train.py")
    assert first.returncode == 1 and "model.py:13:" in first.stdout, first.stderr
    # No fix of a run's is proven (the fixed file alone does not run as the run does): none fixable.
    assert " [*] " not in first.stdout and "fixable" not in first.stdout
    second = gbls(project, "run", "train.py")
    assert served(second) and (second.stdout, second.returncode) == (first.stdout, first.returncode)
    other = gbls(project, "run", "--env", "SEED=1", "train.py")
    assert worker_ran(other) and SERVED not in other.stderr
    # The same findings; the run's command is another: its variable with it.
    assert other.stdout == first.stdout.replace("python train.py", "SEED=1 python train.py", 1)
