"""A project's pytest tests as runs: ``gbls run -m pytest ...``, and the tests and scripts that reach
a library file whose compiled method nothing else calls (``gbls check lib/ops.py`` with nothing
configured), each checked against torch's own log of the same program from the project's folder.

The fixture ``testreach`` is a library (``mylib/ops.py``: ``Scaler.apply``, compiled, prints) whose
one caller is ``tests/test_ops.py``, importing it inside a test's body. ``uplib`` is shaped as
x-transformers: a compiled ``generate`` of its synthetic-data network reached by one test of 42 (the
whole file takes longer than an analysis's budget), and a mixer whose compiled method a training
script calls without ever saying "compile".
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gbls.engine import reach
from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.shared.protocol import Run

from ..support import FIXTURES
from ..support.measured import unmeasured
from ..support.torchlog_runs import logged_run

TESTREACH = FIXTURES / "runs" / "testreach"


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "testreach"
    shutil.copytree(TESTREACH, folder)
    return folder


def logged(folder: Path, *tests: str) -> list[tuple[str, int, str]]:
    """torch's breaks of ``python -m pytest -s TESTS`` from ``folder`` (``-s``: pytest's capture would
    swallow torch's log; it changes nothing Dynamo sees): their workspace place and gb_type."""
    run = Run("oracle", "", "pytest", ("-s", *tests), str(folder))
    return sorted({(e.at[0], e.at[1], e.gb_types[0]) for e in logged_run(run).breaks})


async def pytest_report(worker: Worker, folder: Path, *tests: str) -> FileReport:
    run = Run(f"-m pytest {' '.join(tests)}", "", "pytest", tests, str(folder))
    return await analyse(worker, "", "", Settings(timeout=120), str(folder), read_source, run=run)


async def test_a_pytest_run_reports_the_library_s_break_in_the_library_and_the_test_that_found_it(
    worker: Worker, tmp_path: Path
) -> None:
    folder = project(tmp_path)
    test = "tests/test_ops.py::test_apply_scales"
    before = sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))
    report = await pytest_report(worker, folder, test)
    assert report.status == "ok", report.message
    # pytest's cache and bytecode, written in a layer that is gone.
    assert sorted(str(path.relative_to(folder)) for path in folder.rglob("*")) == before
    assert sorted((b.root.path, b.root.span.line, b.gb_type) for b in report.breaks) == logged(folder, test)
    (brk,) = report.breaks
    assert (brk.path, brk.span.line, brk.reason) == (str(folder / "mylib" / "ops.py"), 13, "print")
    assert brk.called_at is not None and brk.called_at.path == str(folder / "tests" / "test_ops.py")
    source = (folder / "tests" / "test_ops.py").read_text()
    assert reach.test_in(brk.called_at.path, brk.called_at.span.line, source) == "test_apply_scales"
    (apply,) = report.functions
    assert (apply.qualname, apply.analysed) == ("Scaler.apply", True)


async def test_failing_tests_do_not_hide_the_breaks_they_found(worker: Worker, tmp_path: Path) -> None:
    folder = project(tmp_path)
    failing = folder / "tests" / "test_failing.py"
    failing.write_text(
        "import torch\nfrom mylib.ops import Scaler\n\n\n"
        "def test_wrong() -> None:\n    assert Scaler(3.0).apply(torch.ones(2)).sum() == 0\n"
    )
    report = await pytest_report(worker, folder, "tests/test_failing.py")
    # pytest exits with status 1 when a test failed: every test ran, and so did the analysis.
    assert report.status == "ok", report.message
    assert any("some of the tests failed" in note for note in report.notes)
    assert sorted((b.root.path, b.root.span.line, b.gb_type) for b in report.breaks) == logged(
        folder, "tests/test_failing.py"
    )


async def test_a_pytest_usage_error_is_a_failure(worker: Worker, tmp_path: Path) -> None:
    folder = project(tmp_path)
    report = await pytest_report(worker, folder, "tests/no_such_test.py")
    assert (report.status, report.failure_kind) == ("error", "exit")
    assert "status 4" in report.message


@pytest.mark.parametrize(
    ("library", "test", "functions"),
    [
        ("mylib/ops.py", "tests/test_ops.py::test_apply_scales", [("Scaler.apply", True)]),
        # No compile site: a test compiles it (the file's only test: the file runs).
        ("mylib/layers.py", "tests/test_layers.py", [("Gate", True)]),
    ],
)
def test_gbls_check_of_the_library_file_runs_the_tests_that_import_it(
    tmp_path: Path, library: str, test: str, functions: list[tuple[str, bool]]
) -> None:
    folder = project(tmp_path)
    checked = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--no-cache", "--format", "json", library],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == 1, checked.stderr  # breaks found, everything analysed
    document = json.loads(checked.stdout)
    (run,) = document["runs"]
    assert (run["module"], run["args"], run["status"]) == ("pytest", [test], "ok")
    ops = document["files"][0]  # the file named first, then the others the run reached
    assert ops["path"] == str(folder / library)
    assert [(f["qualname"], f["analysed"]) for f in ops["functions"]] == functions
    found = sorted((ops["path"], b["range"]["start"]["line"], b["gb_type"]) for b in ops["breaks"])
    assert found == logged(folder, test)
    # The same as `gbls run -m pytest TEST`, the run it made.
    ran = subprocess.run(
        [sys.executable, "-m", "gbls", "run", "--no-cache", "--format", "json", "-m", "pytest", test],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert unmeasured(json.loads(ran.stdout)["files"]) == unmeasured(document["files"])


UPLIB = FIXTURES / "runs" / "uplib"


def check(folder: Path, *arguments: str) -> tuple[int, dict[str, Any]]:
    """``gbls check --format json ARGUMENTS`` in ``folder`` with the default settings."""
    checked = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--no-cache", "--format", "json", *arguments],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return checked.returncode, json.loads(checked.stdout)


def breaks_in(document: dict[str, Any], path: Path) -> list[tuple[str, int, str]]:
    (found,) = [entry for entry in document["files"] if entry["path"] == str(path)]
    return sorted((found["path"], b["range"]["start"]["line"], b["gb_type"]) for b in found["breaks"])


def test_the_one_test_of_a_large_file_that_reaches_a_compiled_method_runs_alone(tmp_path: Path) -> None:
    folder = tmp_path / "uplib"
    shutil.copytree(UPLIB, folder)
    status, document = check(folder, "uplib/up.py")
    assert status == 1, document  # its break found, everything analysed
    (run,) = document["runs"]
    assert (run["module"], run["args"], run["status"], run["cut"]) == (
        "pytest",
        ["tests/test_uplib.py::test_up"],
        "ok",
        None,
    )
    (up,) = [entry for entry in document["files"] if entry["path"] == str(folder / "uplib" / "up.py")]
    assert [(f["qualname"], f["analysed"]) for f in up["functions"]] == [("SyntheticData.generate", True)]
    assert breaks_in(document, folder / "uplib" / "up.py") == logged(folder, "tests/test_uplib.py::test_up")


def test_a_script_that_never_says_compile_reaches_the_library_s_compiled_code(tmp_path: Path) -> None:
    folder = tmp_path / "uplib"
    shutil.copytree(UPLIB, folder)
    mixer = folder / "uplib" / "mixer.py"
    script = Run("train_mix", str(folder / "train_mix.py"), "", (), str(folder))
    theirs = sorted({(e.at[0], e.at[1], e.gb_types[0]) for e in logged_run(script).breaks})
    assert theirs  # the check on the values splits the graph
    status, named = check(folder, "uplib/mixer.py")
    assert status == 1 and named["runs"] == []
    (entry,) = [entry for entry in named["files"] if entry["path"] == str(mixer)]
    assert [(f["qualname"], f["analysed"]) for f in entry["functions"]] == [("Mixer.mix", True)]
    assert breaks_in(named, mixer) == theirs
    # A check of the folder runs the script too, and the one test that reaches generate.
    status, everything = check(folder, ".")
    assert status == 1
    assert breaks_in(everything, mixer) == theirs
    unanalysed = [f["qualname"] for e in everything["files"] for f in e["functions"] if not f["analysed"]]
    assert unanalysed == []
