"""torch's own log of a project run, as the oracle gbls's runs are checked against.

Runs the program as its users run it (``python SCRIPT ARGS`` or ``python -m MODULE ARGS``, in
its working directory, with its variables), with every ``torch.compile`` on the eager backend, once
under ``TORCH_LOGS=graph_breaks,recompiles`` (when a test first asks for what it logged), and parses
that log as ``torchlog`` and ``torchlog_recompiles`` parse a file's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from gbls.worker.shared.protocol import Run

from . import torchlog, torchlog_recompiles
from .torchlog import FRAME, MARKER, SETUP, LoggedBreak, LoggedCompile
from .torchlog_recompiles import Logged

# torchlog's setup, for one program started as python starts it instead of files run in turn.
PROGRAM = (
    SETUP
    + r"""
import runpy
print(MARKER + "run", file=sys.stderr, flush=True)
mode, target, *arguments = sys.argv[1:]
sys.argv = [target, *arguments]
del sys.path[0]  # python -c puts the working directory first; python SCRIPT puts the script's folder
try:
    if mode == "-m":
        sys.path.insert(0, os.getcwd())
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
except SystemExit:
    pass
print_compilations()
"""
)


KEY = Path("run")


@dataclass
class RunLog:
    """torch's logs of ``run``, from one run of the program (made when a test first asks for them);
    ``elide``: graphs of more element-operations than that run without computing, as gbls's
    analysis runs them (None: every graph computed, on the eager backend)."""

    run: Run
    elide: int | None = None

    @cached_property
    def _log(self) -> str:
        return _program(self.run, torchlog.LOGS, self.elide)

    @cached_property
    def _graph_breaks(self) -> tuple[dict[Path, list[LoggedBreak]], dict[Path, list[LoggedCompile]]]:
        return torchlog.parse(self._log)

    @cached_property
    def breaks(self) -> list[LoggedBreak]:
        return self._graph_breaks[0].get(KEY, [])

    @cached_property
    def compiles(self) -> list[LoggedCompile]:
        return self._graph_breaks[1].get(KEY, [])

    @cached_property
    def recompiles(self) -> Logged:
        return torchlog_recompiles.parse(self._log).get(KEY, Logged())


def logged_run(run: Run, elide: int | None = None) -> RunLog:
    return RunLog(run, elide)


def _program(run: Run, logs: str, elide: int | None) -> str:
    mode, target = ("-m", run.module) if run.module else ("script", run.script)
    environment = dict(os.environ, **dict(run.env), TORCH_LOGS=logs, HF_HUB_OFFLINE="1")
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            f"MARKER = {MARKER!r}\nFRAME = {FRAME!r}\nELIDE = {elide!r}\n" + PROGRAM,
            mode,
            target,
            *run.args,
        ],
        capture_output=True,
        text=True,
        env=environment,
        cwd=run.cwd,
        timeout=600,
    )
    return completed.stderr
