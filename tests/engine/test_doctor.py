"""``gbls doctor`` says what this setup gives: the interpreter and its torch (asked of it), the
sandbox as the worker would get it, the cache and what it holds, the runs and where each is from."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from gbls.runtime.sandbox import bwrap_support

from ..support import FIXTURES, ROOT

TRAINER = FIXTURES / "runs" / "trainer"


def doctor(
    *arguments: str, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gbls", "doctor", *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_doctor_says_what_this_setup_gives(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {name: value for name, value in os.environ.items() if name != "GBLS_NO_CACHE"}
    check = subprocess.run(
        [
            sys.executable,
            "-m",
            "gbls",
            "check",
            "--cache-dir",
            str(cache),
            str(FIXTURES / "engine" / "clean.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert check.returncode == 0, check.stderr
    result = doctor("--cache-dir", str(cache), cwd=TRAINER, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1] == f"interpreter: {sys.executable} (Python {sys.version.split()[0]})"
    assert lines[2].startswith(f"torch: {importlib.metadata.version('torch')} in ")
    assert lines[3].startswith("sandbox: whole: bubblewrap" if bwrap_support() else "sandbox: partial:")
    assert lines[4].startswith("  a run's throwaway write layer: ")
    assert any(line.startswith(f"cache: {cache} (--cache-dir): 1 analysis, ") for line in lines), lines
    assert lines[-2:] == [
        f"runs of {TRAINER}:",
        "  train: python train.py --config configs/small.json --compile"
        " — pyproject.toml and .vscode/launch.json",
    ]


def test_doctor_fails_on_an_interpreter_without_torch(tmp_path: Path) -> None:
    venv.create(tmp_path / "bare", with_pip=False)
    result = doctor("--python", str(tmp_path / "bare" / "bin" / "python"))
    assert result.returncode == 2, result.stderr
    assert "torch: missing: `pip install torch` into it" in result.stdout
    assert "cache: off (GBLS_NO_CACHE)" in result.stdout  # the suite's environment turns it off
    assert "runs: none configured in " in result.stdout


def unshare_allows(*flags: str) -> bool:
    """util-linux's unshare, the oracle: can a process here have these namespaces (in a user namespace
    of its own where the kernel wants one)?"""
    return any(
        subprocess.run(["unshare", *more, *flags, "true"], capture_output=True).returncode == 0
        for more in ([], ["--user", "--map-current-user"])
    )


def test_doctor_without_bubblewrap_says_what_an_analysis_still_gets(tmp_path: Path) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("util-linux's unshare is the oracle here")
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
    result = doctor("--python", sys.executable, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[3].startswith("sandbox: partial: bubblewrap (bwrap) is missing or does not work here")
    network = "yes: no network but a loopback" if unshare_allows("--net") else "no: the network is reachable"
    assert lines[4] == f"  network namespace: {network}"
    layer = "yes (a mount namespace of its own)" if unshare_allows("--mount", "--net") else "no: "
    assert lines[5].startswith(f"  a run's throwaway write layer: {layer}")
