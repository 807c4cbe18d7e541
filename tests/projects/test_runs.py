"""Projects run as their users run them: a working directory, arguments, data, ``python -m``, a
library's own ``@torch.compile``, every compiled frame the run reaches, each checked against torch's
own log of the same run (same working directory, same arguments).

Each fixture project is copied to a fresh folder (the test writes its data file there, as a project
would have it); nothing the run writes may reach that folder or the home folder.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
import torch

from gbls.engine import views
from gbls.engine.model import FileReport
from gbls.engine.runs import entry_of
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.shared.protocol import Run

from ..support import FIXTURES
from ..support.torchlog_runs import RunLog, logged_run

PROJECTS = FIXTURES / "runs"
CACHE = Path.home() / ".cache" / "gbls-fixture-trainer"  # what the trainer writes in the home folder


def project(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(PROJECTS / name, folder)
    if name == "trainer":  # its data, written by the test as a project's preparation script would
        (folder / "data").mkdir()
        torch.save(
            torch.randn(4, 2, 8, generator=torch.Generator().manual_seed(0)), folder / "data" / "train.pt"
        )
    return folder


def fingerprint(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` by its content: the workspace byte for byte."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


async def run_report(worker: Worker, run: Run, workspace: Path) -> FileReport:
    path = entry_of(run)
    return await analyse(
        worker, path, read_source(path) or "", Settings(timeout=120), str(workspace), read_source, run=run
    )


def oracle(run: Run, home: Path) -> RunLog:
    """torch's log of the same run under plain python, with a home folder of its own."""
    return logged_run(
        Run(run.name, run.script, run.module, run.args, run.cwd, (*run.env, ("HOME", str(home))))
    )


def assert_breaks_agree(report: FileReport, logged: RunLog) -> None:
    """One break per root cause torch logged, at the workspace place its stack reaches last."""
    typed = all(e.gb_types for e in logged.breaks)  # torch 2.6 logs no gb_type
    ours = sorted((b.root.path, b.root.span.line, *([b.gb_type] if typed else [])) for b in report.breaks)
    theirs = sorted({(e.at[0], e.at[1], *(e.gb_types[:1] if typed else [])) for e in logged.breaks})
    assert ours == theirs


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


async def test_a_training_script_reads_its_config_and_data_and_its_writes_vanish(
    worker: Worker, tmp_path: Path, home: Path
) -> None:
    folder = project("trainer", tmp_path)
    before = fingerprint(folder)
    shutil.rmtree(CACHE, ignore_errors=True)
    run = Run(
        "train", str(folder / "train.py"), "", ("--config", "configs/small.json", "--compile"), str(folder)
    )
    report = await run_report(worker, run, folder)
    assert report.status == "ok", report.message
    # It wrote ./out/ckpt.pt and ~/.cache/gbls-fixture-trainer/ran, in a layer that is gone.
    assert fingerprint(folder) == before and not (folder / "out").exists()
    assert not CACHE.exists()
    assert_breaks_agree(report, oracle(run, home))  # plain python writes ./out: after the check
    # Each break belongs to model.py, where its cause is; the model was compiled in train.py.
    print_, item = sorted(report.breaks, key=lambda b: b.span.line)
    assert (print_.path, print_.span.line, print_.reason) == (str(folder / "model.py"), 13, "print")
    assert (item.path, item.span.line) == (str(folder / "model.py"), 14)
    (model,) = report.functions
    assert (model.qualname, model.analysed, model.target.call_path) == (
        "TinyNet",
        True,
        str(folder / "train.py"),
    )
    assert set(views.by_file(report)) == {str(folder / "train.py"), str(folder / "model.py")}


async def test_a_run_without_its_compile_flag_compiles_nothing_and_says_so(
    worker: Worker, tmp_path: Path
) -> None:
    folder = project("trainer", tmp_path)
    run = Run("eager", str(folder / "train.py"), "", ("--config", "configs/small.json"), str(folder))
    report = await run_report(worker, run, folder)
    assert report.status == "ok" and report.breaks == ()
    (site,) = report.functions
    # Its compile call is in a branch this run did not take: what the run is, not a failure.
    assert (site.path, site.analysed) == (str(folder / "train.py"), False)
    assert site.untaken == "under `if args.compile:` (line 25), which this run did not take"
    assert site.reason == f"not compiled in this run: {site.untaken}"


async def test_a_required_argument_missing_is_the_program_s_exit_status(
    worker: Worker, tmp_path: Path
) -> None:
    folder = project("trainer", tmp_path)
    run = Run("no config", str(folder / "train.py"), "", ("--compile",), str(folder))
    report = await run_report(worker, run, folder)
    assert (report.status, report.failure_kind) == ("error", "exit")
    assert report.message.startswith("the program exited with status 2: the following arguments are required")


async def test_a_package_runs_as_a_module_from_its_root(worker: Worker, tmp_path: Path, home: Path) -> None:
    folder = project("package", tmp_path)
    run = Run("-m scripts.train", "", "scripts.train", (), str(folder))
    report = await run_report(worker, run, folder)
    assert report.status == "ok", report.message
    assert_breaks_agree(report, oracle(run, home))
    (branch,) = report.breaks
    assert (branch.path, branch.span.line) == (str(folder / "nanopkg" / "model.py"), 12)
    assert report.path == str(folder / "scripts" / "train.py")


async def test_a_library_s_own_compile_is_analysed_from_a_script_that_never_mentions_it(
    worker: Worker, tmp_path: Path, home: Path
) -> None:
    folder = project("library", tmp_path)
    library = folder / "vendor" / "site-packages"
    run = Run("sample", str(folder / "sample.py"), "", (), str(folder), (("PYTHONPATH", str(library)),))
    report = await run_report(worker, run, folder)
    assert report.status == "ok", report.message
    assert_breaks_agree(report, oracle(run, home))
    (loop,) = report.breaks
    # Its cause is in the library; it belongs to the script's line that called the library.
    assert loop.root.path == str(library / "synthlib" / "__init__.py") and loop.effect == "eager"
    assert (loop.path, loop.span.line) == (str(folder / "sample.py"), 9)
    (generate,) = report.functions
    assert generate.qualname == "generate"
    # Listed on the workspace line that reaches it, not on the script's first line.
    assert (generate.path, generate.span.line) == (str(folder / "sample.py"), 9)


async def test_an_optimizer_step_recompiles_once_per_parameter_shape(
    worker: Worker, tmp_path: Path, home: Path
) -> None:
    folder = project("optimizer", tmp_path)
    run = Run("optimizer", str(folder / "train.py"), "", (), str(folder))
    report = await run_report(worker, run, folder)
    assert report.status == "ok", report.message
    logged = oracle(run, home).recompiles.recompiles
    (step,) = report.functions
    assert step.qualname == "sgd_step" and step.compilations == len(logged) + 1 == 4
    compiled_again = [r.compile_id for found in report.recompiles for r in found.recompiles]
    assert sorted(compiled_again) == sorted(entry.compile_id for entry in logged)
    assert all(found.guard is not None and "grad" in found.guard.text for found in report.recompiles)


def test_the_three_ways_to_say_a_run_are_one_run(tmp_path: Path) -> None:
    """``gbls run``, [[tool.gbls.run]] and a launch configuration describe the same Run."""
    from gbls.engine import runs

    folder = str(PROJECTS / "trainer")
    cli = runs.command_line(folder, "train.py", ["--config", "configs/small.json", "--compile"], module=False)
    (pyproject,) = runs.from_pyproject(folder).runs
    (launch,) = runs.from_launch_json(folder).runs
    assert pyproject == launch == Run("train", cli.script, "", cli.args, cli.cwd)
    assert cli.name == "train.py" and os.path.isabs(cli.script)
