"""Projects opened as they are: a script with nothing configured runs as ``python FILE`` from the
folder its users start it in (``python -m`` for a script of a package that imports its own package),
and every program, configured or not, runs through all its phases to its end.

Each fixture is the shape of a real training program that a stop after its first steps got wrong:
an evaluation under ``no_grad`` before training, a fused optimizer step per parameter group followed
by a second compiled step, a policy every step with its update only after a warm-up, a loss per
chunk with a smaller last chunk. Each is checked against torch's own log of the same program started
the same way (same folder, ``-m``), and its folder byte for byte unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.shared.protocol import Run

from ..support import ROOT
from ..support.torchlog_runs import RunLog
from .test_runs import PROJECTS, assert_breaks_agree, fingerprint, oracle, run_report

SETTINGS = Settings(timeout=120)


@dataclass(frozen=True)
class Case:
    script: str  # relative to the project's folder
    module: str = ""  # how its users start it: ``python -m module`` from the folder


CASES = {
    "nanogpt": Case("train.py"),
    "fused": Case("train.py"),
    "rl": Case("train.py"),
    "chunked": Case("train.py"),
    "nanochat": Case("scripts/base_train.py", "scripts.base_train"),
}


@dataclass(frozen=True)
class Project:
    folder: Path
    run: Run  # as its users start it
    logged: RunLog  # torch's own log of that


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Project]:
    """Each fixture copied once, with torch's log of it run as its users run it."""
    root = tmp_path_factory.mktemp("opened")
    home = root / "home"
    home.mkdir()
    found = {}
    for name, case in CASES.items():
        folder = root / name
        shutil.copytree(PROJECTS / name, folder)
        script = str(folder / case.script)
        run = Run(name, "" if case.module else script, case.module, (), str(folder))
        found[name] = Project(folder, run, oracle(run, home))
    return found


def assert_agrees(report: FileReport, project: Project) -> None:
    """Every break and every compilation torch logged, and nothing more."""
    assert report.status == "ok", report.message
    assert_breaks_agree(report, project.logged)
    compiled_again = sorted(r.compile_id for found in report.recompiles for r in found.recompiles)
    assert compiled_again == sorted(entry.compile_id for entry in project.logged.recompiles.recompiles)


async def opened(worker: Worker, project: Project, name: str) -> FileReport:
    """The script analysed with nothing configured, as ``gbls check`` run in its folder does."""
    path = project.folder / CASES[name].script
    source = read_source(str(path)) or ""
    return await analyse(
        worker, str(path), source, SETTINGS, str(project.folder), read_source, cwd=str(project.folder)
    )


@pytest.mark.parametrize("name", sorted(CASES))
async def test_a_script_with_nothing_configured_runs_as_its_users_start_it(
    worker: Worker, projects: dict[str, Project], name: str
) -> None:
    project = projects[name]
    before = fingerprint(project.folder)
    report = await opened(worker, project, name)
    assert_agrees(report, project)
    assert fingerprint(project.folder) == before


@pytest.mark.parametrize("name", ["nanogpt", "fused", "rl", "chunked"])
async def test_a_configured_run_goes_through_all_its_phases(
    worker: Worker, projects: dict[str, Project], name: str
) -> None:
    project = projects[name]
    report = await run_report(worker, project.run, project.folder)
    assert_agrees(report, project)


async def test_the_training_step_after_an_evaluation_under_no_grad_recompiles(
    worker: Worker, projects: dict[str, Project]
) -> None:
    report = await opened(worker, projects["nanogpt"], "nanogpt")
    (gpt,) = report.functions
    assert gpt.qualname == "GPT" and gpt.analysed
    reasons = [found.guard.text for found in report.recompiles if found.guard is not None]
    assert any("grad_mode" in reason for reason in reasons)


async def test_every_parameter_group_of_both_compiled_steps_is_compiled(
    worker: Worker, projects: dict[str, Project]
) -> None:
    report = await opened(worker, projects["fused"], "fused")
    assert sorted((f.qualname, f.compilations) for f in report.functions) == [
        ("adam_step", 4),
        ("ema_step", 4),
    ]


async def test_an_update_first_called_after_a_warm_up_is_analysed(
    worker: Worker, projects: dict[str, Project]
) -> None:
    report = await opened(worker, projects["rl"], "rl")
    functions = {f.qualname: f for f in report.functions}
    assert functions["policy"].analysed and functions["update"].analysed
    assert sorted(b.code for b in report.breaks if b.function == "update") == ["GB0059", "GB0124", "GB0170"]


async def test_a_script_of_a_package_runs_as_a_module_from_the_root(
    worker: Worker, projects: dict[str, Project]
) -> None:
    project = projects["nanochat"]
    report = await opened(worker, project, "nanochat")
    (printed,) = report.breaks
    assert printed.path == str(project.folder / "nanochat" / "gpt.py")


def test_checking_a_model_says_nothing_of_the_scripts_failures_it_ran_to_reach_it(tmp_path: Path) -> None:
    """``gbls check model.py``: train.py reaches it; sample.py, which gbls ran too, fails at its
    import. model.py is analysed, and sample.py's failure is not the check's: no error line, and the
    exit status is model.py's."""
    folder = tmp_path / "nanogpt"
    shutil.copytree(PROJECTS / "nanogpt", folder)
    (folder / "sample.py").write_text(
        "import gbls_fixture_no_tokenizer\nimport torch\n\n"
        "from model import GPT\n\nmodel = torch.compile(GPT)\n"
    )
    checked = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--no-cache", "model.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),  # this checkout's gbls, in any interpreter
    )
    assert "error:" not in checked.stdout and "sample.py" not in checked.stdout, checked.stdout
    assert checked.returncode == 1, checked.stdout + checked.stderr  # model.py's break, nothing else
    assert "model.py:" in checked.stdout
