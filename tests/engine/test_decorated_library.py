"""A library in HeavyBall's shape, run through its own tests, against torch's log of the same run.

The fixture ``runs/optlib`` compiles its building blocks (``optlib/utils.py``) as HeavyBall does:
each through a decorator whose ``torch.compile(...)(func)`` compiles it on its first call, with
``dynamic=False`` (so every new shape recompiles), and runs it as it is when compiled code calls
it; one more through ``compile_if_available``, a factory calling a ``functools.partial`` of
``torch.compile``. A disabled QR call is reached from two compiled functions (one of them calling it
through a helper that compiled code re-enters from its eager parts), a disabled solve splits a
function whose rest recompiles as a resume frame of its own, and an empty graph under
``fullgraph=True`` still compiles. ``python -m pytest tests`` runs it all, under gbls and under
plain python with ``TORCH_LOGS=graph_breaks,recompiles``: every compilation, recompilation, failed
check and root cause is the same, one for one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gbls.engine import views
from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.shared.frames import base_name, resume_line
from gbls.worker.shared.protocol import Recompile, Run

from ..support import FIXTURES, ROOT
from ..support.torchlog_recompiles import said_as_torch
from ..support.torchlog_runs import RunLog, logged_run

OPTLIB = FIXTURES / "runs" / "optlib"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("library") / "optlib"
    shutil.copytree(OPTLIB, folder)
    return folder


@pytest.fixture(scope="module")
def logged(project: Path) -> RunLog:
    """torch's log of ``python -m pytest -s tests`` (``-s``: pytest would swallow the log)."""
    return logged_run(Run("oracle", "", "pytest", ("-s", "tests"), str(project)))


@pytest.fixture(scope="module")
async def report(worker: Worker, project: Path) -> FileReport:
    run = Run("-m pytest tests", "", "pytest", ("tests",), str(project))
    found = await analyse(worker, "", "", Settings(timeout=300), str(project), read_source, run=run)
    assert found.status == "ok", found.message
    return found


def utils_of(report: FileReport, project: Path) -> FileReport:
    return views.by_file(report)[str(project / "optlib" / "utils.py")]


def order(compile_id: str) -> list[int]:
    return [int(part) for part in compile_id.split("/")]


def test_every_compilation_is_torch_s_once_on_its_frame(
    report: FileReport, logged: RunLog, project: Path
) -> None:
    """Each compile id torch logged for the library's frames is one of gbls's, on the same frame (a
    resume frame by the line it resumes after), in one function only; and gbls has no other."""
    ours = [
        (compile_id, frame.frame, frame.resumes_at)
        for function in report.functions
        for frame in function.target.frames
        for compile_id in frame.compile_ids
    ]
    refused = [(e.compile_id, e.function, e.path) for e in logged.recompiles.limits]
    begun = [(c.compile_id, c.function, c.path) for c in logged.compiles] + refused
    theirs = [
        (compile_id, base_name(name), resume_line(name))
        for compile_id, name, path in begun
        if Path(path).is_relative_to(project)
    ]
    assert len(ours) == len({compile_id for compile_id, _, _ in ours})
    assert sorted(ours, key=lambda found: order(found[0])) == sorted(
        theirs, key=lambda found: order(found[0])
    )
    # The helper compiled code re-enters from the eager parts of the function it runs in, and the
    # decorator's wrapper Dynamo translates there, are that function's frames.
    qr = next(f for f in report.functions if f.qualname == "get_orthogonal_matrix_QR")
    called = {frame.frame for frame in qr.target.frames if not frame.own}
    assert {"copy_stochastic_", "inplace_orthogonal_", "_fn"} <= called


def test_every_recompilation_fails_torch_s_check(report: FileReport, logged: RunLog) -> None:
    """The same recompilations, each of the frame torch recompiled, for the check it logged failing
    first (a check on a value of a resume frame, which torch 2.13 logs first for update_precond_'s,
    named as the function names it)."""
    ours: dict[str, Recompile] = {r.compile_id: r for found in report.recompiles for r in found.recompiles}
    theirs = {entry.compile_id: entry for entry in logged.recompiles.recompiles}
    assert sorted(ours, key=order) == sorted(theirs, key=order)
    for compile_id, entry in theirs.items():
        recompile, reason = ours[compile_id], entry.reasons[0]
        assert (recompile.frame.name, recompile.resumes_at) == (
            base_name(entry.function),
            resume_line(entry.function),
        )
        assert recompile.guard is not None and recompile.guard.failed == reason.failed
        assert said_as_torch(recompile.guard.text, reason.text), (recompile.guard.text, reason.text)


def test_one_root_cause_once_whichever_functions_reached_it(report: FileReport, logged: RunLog) -> None:
    typed = all(e.gb_types for e in logged.breaks)  # torch 2.6 logs no gb_type
    ours = [(b.root.path, b.root.span.line, *([b.gb_type] if typed else [])) for b in report.breaks]
    theirs = {(e.at[0], e.at[1], *(e.gb_types[:1] if typed else [])) for e in logged.breaks}
    assert sorted(ours) == sorted(theirs) and len(ours) == len(theirs)
    qr = next(b for b in report.breaks if b.reason == "no_compile_qr")
    assert set(qr.functions) == {"get_orthogonal_matrix_QR", "_compilable_orthogonal_"}


def test_each_decorated_function_is_a_compile_site_of_its_own(report: FileReport, project: Path) -> None:
    """On its own def, linked to the generic call that compiled it; the call itself is no function."""
    utils = utils_of(report, project)
    lines = (project / "optlib" / "utils.py").read_text().splitlines()
    decorator_call = 1 + next(n for n, text in enumerate(lines) if "torch.compile(fullgraph=" in text)
    factory_call = 1 + next(n for n, text in enumerate(lines) if "return compile_static(func)" in text)
    compiled_at = {}
    for function in utils.functions:
        assert function.analysed, (function.qualname, function.reason)
        assert lines[function.span.line - 1].lstrip().startswith(f"def {function.name}("), function.qualname
        compiled_at[function.qualname] = function.target.call_line
    assert compiled_at == {
        "compiled_einsum": decorator_call,
        "_compilable_adam_": decorator_call,
        "update_ggt": decorator_call,
        "_compilable_orthogonal_": decorator_call,
        "get_orthogonal_matrix_QR": decorator_call,
        "update_precond_": decorator_call,
        "clip_": factory_call,
    }


def test_counts_are_torch_s_frame_by_frame(report: FileReport, logged: RunLog, project: Path) -> None:
    """A resume frame's compilations are its own, beside its function's: their sum the total."""
    (precond,) = (f for f in report.functions if f.qualname == "update_precond_")
    own = [frame for frame in precond.target.frames if frame.own]
    break_line = 1 + next(
        n
        for n, text in enumerate((project / "optlib" / "utils.py").read_text().splitlines())
        if "A, conjB = calc_A_and_conjB" in text
    )
    assert [(frame.frame, frame.resumes_at) for frame in own] == [
        ("update_precond_", None),
        ("update_precond_", break_line),
    ]
    for frame in own:
        name = (
            "update_precond_"
            if frame.resumes_at is None
            else f"torch_dynamo_resume_in_update_precond__at_{break_line}"
        )
        assert frame.compilations == sum(1 for c in logged.compiles if c.function == name)
    assert precond.compilations == sum(frame.compilations for frame in own)
    (resumed,) = (r for r in report.recompiles_of("update_precond_") if r.resumes_at is not None)
    assert resumed.message.startswith(f"`update_precond_` after its break at line {break_line} recompiled")
    assert resumed.span.line == break_line


@pytest.mark.parametrize("baselined", [False, True], ids=["breaks", "baselined"])
def test_gbls_check_of_the_library_file_fails_on_its_breaks_alone(
    project: Path, baselined: bool, tmp_path: Path, logged: RunLog
) -> None:
    """Every function analysed through the tests that import the file: only the breaks fail the
    check, and with them in a baseline it passes. The file's own analysis (nothing goes through the
    decorators when it runs) and the tests' make one view, every recompilation in it once."""
    options = ["--baseline", str(tmp_path / "baseline.json"), "--update-baseline"] if baselined else []
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "gbls",
            "check",
            "--no-cache",
            "--format",
            "json",
            *options,
            "optlib/utils.py",
        ],
        cwd=project,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),  # this checkout's gbls, wherever it runs from
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checked.returncode == (0 if baselined else 1), checked.stdout[-2000:] + checked.stderr
    document = json.loads(checked.stdout)
    (run,) = document["runs"]
    assert (run["module"], run["args"], run["status"]) == ("pytest", ["tests/test_optimizers.py"], "ok")
    utils = document["files"][0]
    assert utils["path"] == str(project / "optlib" / "utils.py")
    assert all(f["analysed"] for f in utils["functions"]), utils["functions"]
    assert len(utils["breaks"]) == (0 if baselined else 2)
    if not baselined:
        ours = [compile_id for found in utils["recompiles"] for compile_id in found["compile_ids"]]
        theirs = [entry.compile_id for entry in logged.recompiles.recompiles]
        assert sorted(ours, key=order) == sorted(theirs, key=order)
