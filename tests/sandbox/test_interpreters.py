"""An interpreter that imports from under /tmp, where bwrap gives the worker a private /tmp: a
project's CI venv there that sees another venv's packages through a .pth file, or a folder on
PYTHONPATH. torch itself is importable only from that folder, so an analysis that reports the
break saw it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ..support import FIXTURES
from ..support.schema import gbls_json
from ..support.torchlog import logged_script
from .test_sandbox import require_bwrap

PROGRAM = FIXTURES / "engine" / "print_body.py"


@pytest.mark.parametrize("named_by", [".pth", "PYTHONPATH"])
def test_packages_under_tmp_are_seen_in_the_sandbox(tmp_path: Path, named_by: str) -> None:
    require_bwrap()
    assert str(tmp_path).startswith("/tmp/")
    packages = tmp_path / "packages"  # this interpreter's packages, torch among them, seen from /tmp
    packages.symlink_to(sysconfig.get_paths()["purelib"], target_is_directory=True)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    environment = dict(os.environ)
    if named_by == ".pth":
        (site_packages,) = (venv / "lib").glob("python*/site-packages")
        (site_packages / "outer.pth").write_text(f"# the project's own packages\n{packages}\n")
    else:
        environment["PYTHONPATH"] = str(packages)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(PROGRAM, workspace)
    python = str(venv / "bin" / "python")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gbls",
            "check",
            "--format",
            "json",
            "--sandbox",
            "bwrap",
            "--python",
            python,
            PROGRAM.name,
        ],
        cwd=workspace,
        env=environment,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.stdout, result.stderr  # where torch is not seen: "torch could not be imported"
    (entry,) = gbls_json(result.stdout)["files"]
    assert (entry["status"], entry["message"]) == ("ok", ""), result.stderr
    logged = logged_script(PROGRAM).main
    assert [brk["range"]["start"]["line"] for brk in entry["breaks"]] == [brk.at[1] for brk in logged]
