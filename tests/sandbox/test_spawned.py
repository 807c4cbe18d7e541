"""Python interpreters the analysed program starts (the ranks of torch.multiprocessing.spawn, a
script it runs with ``sys.executable``) get gbls's capture: the no-op backend, and their compiled
functions and breaks reported with the process they came from, each checked against torch's log
of that process. With bubblewrap, with the sandbox off, and without bubblewrap on PATH."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ..engine.test_engine import root_of
from ..support import FIXTURES
from ..support.torchlog import ScriptLog, logged_script
from ..support.worker import Analyse
from .test_sandbox import require_bwrap

ROOT = Path(__file__).parent.parent.parent
DISTRIBUTED = FIXTURES / "distributed"
FILES = ("spawn_ddp.py", "run_worker.py")
# What child_sees.py's child prints.
CHILD_SEES = (DISTRIBUTED / "child_sees.py").read_text().split('"""')[3]
MODES = {"bwrap": ["--sandbox", "bwrap"], "off": ["--sandbox", "off"], "no bwrap": ["--sandbox", "auto"]}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each mode's JSON entries, by file; one mode at a time, for the ranks' sake on two cores."""
    no_bwrap = {**os.environ, "PATH": str(tmp_path_factory.mktemp("empty-path"))}
    entries = {}
    for mode, arguments in MODES.items():
        result = subprocess.run(
            [sys.executable, "-m", "gbls", "check", "--format", "json", "--timeout", "300", *arguments]
            + [str(DISTRIBUTED / name) for name in FILES],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=no_bwrap if mode == "no bwrap" else None,
            timeout=1200,
        )
        entries[mode] = {Path(entry["path"]).name: entry for entry in json.loads(result.stdout)["files"]}
    return entries


@functools.cache
def oracle(name: str) -> ScriptLog:
    return logged_script(DISTRIBUTED / name)


def roots(log: list[Any]) -> set[tuple[str, int]]:
    return {root_of(entry) for entry in log}


def entry_of(checked: dict[str, dict[str, Any]], mode: str, name: str) -> dict[str, Any]:
    if mode == "bwrap":
        require_bwrap()
    entry: dict[str, Any] = checked[mode][name]
    assert (entry["status"], entry["failure"]) == ("ok", None), entry["message"]
    return entry


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_ranks_of_a_spawned_process_group(checked: dict[str, dict[str, Any]], mode: str) -> None:
    entry = entry_of(checked, mode, "spawn_ddp.py")
    (net,) = entry["functions"]
    assert (net["qualname"], net["analysed"], net["input_source"]) == ("Net", True, "module")
    assert net["processes"] == ["rank 0", "rank 1"]
    assert net["graphs"] == 2  # each rank's two graphs around its break: the same two
    (brk,) = entry["breaks"]  # the print in forward: one break, hit in both ranks
    assert brk["processes"] == ["rank 0", "rank 1"]
    log = oracle("spawn_ddp.py")
    assert log.main == [] and len(log.children) == 2
    assert (
        {(brk["chain"][-1]["path"], brk["chain"][-1]["line"])}
        == roots(log.children[0])
        == roots(log.children[1])
    )


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_script_run_with_the_same_interpreter(checked: dict[str, dict[str, Any]], mode: str) -> None:
    entry_of(checked, mode, "run_worker.py")  # it ran to its end
    # The compiled function and its break are worker_step.py's, the file they are in.
    entry = entry_of(checked, mode, "worker_step.py")
    (scale,) = entry["functions"]
    assert (scale["qualname"], scale["analysed"], scale["input_source"]) == ("scale", True, "module")
    assert len(scale["processes"]) == 1 and scale["processes"][0].startswith("process ")
    log = oracle("run_worker.py")
    assert log.main == []
    (child,) = log.children
    assert {(brk["chain"][-1]["path"], brk["chain"][-1]["line"]) for brk in entry["breaks"]} == roots(child)


async def test_a_child_interpreter_starts_as_without_gbls(analyse_file: Analyse) -> None:
    """What a child interpreter sees of its start is what it sees under plain python: gbls's start-up
    hook is gone from its PYTHONPATH, its sys.path and its variables, its own sitecustomize ran; until
    it imports torch, gbls's watch for that import is first on its sys.meta_path, then gone."""
    report = await analyse_file(DISTRIBUTED / "child_sees.py")
    seen = json.loads(report.message.removeprefix("LookupError: "))
    plain = subprocess.run(
        [sys.executable, "-c", CHILD_SEES],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": seen["pythonpath"]},
    )
    without = json.loads(plain.stdout)
    assert seen["meta_path"] == ["_TorchWatch", *without["meta_path"]]
    assert {**seen, "meta_path": without["meta_path"]} == without
    assert "spawned" not in seen["pythonpath"] and seen["variables"] == []
