"""Programs run as ``python SCRIPT ARGS`` runs them, each in a child forked from an interpreter that
imported torch once (a fresh interpreter spends seconds importing it again): the oracles' and the
differential tests' plain runs.

A runner is started per environment and setup (torch reads ``TORCH_LOGS`` when it is imported): it
imports torch (a sitecustomize on ``PYTHONPATH`` may do it first), runs the setup, then for each
request forks a child that runs the script from its working directory, with its own ``sys.argv`` and
its folder first on ``sys.path``, stdin closed and stdout and stderr in the files asked for; an
exception or a ``SystemExit`` ends it as it ends python (the traceback, the status), after its
threads are joined and its exit functions run. No torch operation runs before the fork: the child
starts as a fresh interpreter would. The runner answers the child's pid (torch's log names its
process) and its exit status, once it ended, or once it was killed with its process group after the
seconds it was given.
"""

from __future__ import annotations

import atexit
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RUNNER = r"""
import atexit, json, os, runpy, signal, sys, threading, time
answers = os.fdopen(os.dup(1), "w")  # stdout is the children's
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
import torch
exec(SETUP)
def ended(error):
    # What python does with a SystemExit that ends the program.
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)
    return 1
for request in iter(sys.stdin.readline, ""):
    path, arguments, cwd, stdout, stderr, seconds = json.loads(request)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(os.open(stdout, os.O_WRONLY | os.O_APPEND), 1)
        if stderr == stdout:
            os.dup2(1, 2)
        else:
            os.dup2(os.open(stderr, os.O_WRONLY | os.O_APPEND), 2)
        os.chdir(cwd)
        sys.argv = [path, *arguments]
        sys.path[0] = os.path.dirname(os.path.abspath(path))
        status = 0
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as error:
            status = ended(error)
        except BaseException:
            sys.excepthook(*sys.exc_info())
            status = 1
        try:  # then, as python's own ending: its threads joined, its exit functions run
            threading._shutdown()
            atexit._run_exitfuncs()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(status)
    deadline = time.monotonic() + seconds
    while (child := os.waitpid(pid, os.WNOHANG)) == (0, 0):
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.02)
    print(json.dumps([pid, os.waitstatus_to_exitcode(child[1])]), file=answers, flush=True)
"""

_runners: dict[tuple[str, tuple[tuple[str, str], ...]], subprocess.Popen[str]] = {}


def ask(code: str, environment: dict[str, str], request: object) -> str:
    """Send ``request`` as a JSON line to the process running ``python -c CODE`` in ``environment``
    (started at the first request, kept for the session's later ones); its answer line, or an empty
    string if it ended."""
    # pytest names the running test in the environment: that is no reason for a runner of its own.
    environment = {name: value for name, value in environment.items() if name != "PYTEST_CURRENT_TEST"}
    key = (code, tuple(sorted(environment.items())))
    runner = _runners.get(key)
    if runner is None or runner.poll() is not None:
        runner = subprocess.Popen(
            [sys.executable, "-c", code],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=environment,
        )
        _runners[key] = runner
        atexit.register(runner.kill)
    assert runner.stdin is not None and runner.stdout is not None
    runner.stdin.write(json.dumps(request) + "\n")
    runner.stdin.flush()
    return runner.stdout.readline()


@dataclass(frozen=True)
class Ran:
    pid: int  # the child's: the process torch's log names
    status: int  # its exit status; negative: the signal that ended it


def run_forked(
    path: Path,
    arguments: tuple[str, ...] = (),
    *,
    cwd: Path,
    environment: dict[str, str],
    stdout: Path,
    stderr: Path,
    setup: str = "",
    seconds: float = 600,
) -> Ran:
    """Run ``python PATH ARGUMENTS`` in ``cwd``, its output appended to ``stdout`` and ``stderr`` (one
    file: one stream), by the runner for ``environment`` and ``setup`` (code run once torch is
    imported, before any fork)."""
    request = [str(path), list(arguments), str(cwd), str(stdout), str(stderr), seconds]
    answer = ask(f"SETUP = {setup!r}\n" + RUNNER, environment, request)
    if not answer:
        raise RuntimeError(f"the runner ended before running {path}")
    pid, status = json.loads(answer)
    return Ran(pid, status)
