"""Local distributed code runs in the analysis as under plain ``python``: the analysis's network
namespace has its loopback up, whatever the sandbox (bubblewrap brings it up in the worker's;
without bubblewrap, or with the sandbox off, gbls does in each analysis's own)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..engine.test_engine import root_of
from ..support import FIXTURES
from ..support.torchlog import logged_script
from .test_sandbox import require_bwrap

ROOT = Path(__file__).parent.parent.parent
GLOO = FIXTURES / "distributed" / "gloo_loopback.py"
# How gbls check is run: with bubblewrap, with the sandbox off, and "auto" on a machine without
# bubblewrap (none on PATH: the code path of a machine that lacks it).
MODES = {"bwrap": ["--sandbox", "bwrap"], "off": ["--sandbox", "off"], "no bwrap": ["--sandbox", "auto"]}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.CompletedProcess[str]]:
    no_bwrap = {**os.environ, "PATH": str(tmp_path_factory.mktemp("empty-path"))}
    started = {
        mode: subprocess.Popen(
            [sys.executable, "-m", "gbls", "check", "--format", "json", *arguments, str(GLOO)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=no_bwrap if mode == "no bwrap" else None,
        )
        for mode, arguments in MODES.items()
    }
    done = {}
    for mode, process in started.items():
        out, err = process.communicate(timeout=600)
        done[mode] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return done


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_gloo_process_group_on_the_loopback(
    checked: dict[str, subprocess.CompletedProcess[str]], mode: str
) -> None:
    if mode == "bwrap":
        require_bwrap()
    result = checked[mode]
    (entry,) = json.loads(result.stdout)["files"]
    assert (entry["status"], entry["failure"]) == ("ok", None), entry["message"]
    roots = [(brk["chain"][-1]["path"], brk["chain"][-1]["line"]) for brk in entry["breaks"]]
    assert set(roots) == {root_of(logged) for logged in logged_script(GLOO).main}
    assert result.returncode == 1  # the print in step: found, as torch logs it
