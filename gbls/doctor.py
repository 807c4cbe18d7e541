"""``gbls doctor``: what this setup gives gbls — the interpreter and its torch, the sandbox, the
persistent cache, the runs configured for the folder — each said where it comes from. It analyses
nothing and imports no torch: the interpreter is asked, the sandbox probed in a child process."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

from . import __version__
from .engine import runs
from .engine.store import FOLDER, SUFFIX
from .runtime import persistent
from .runtime.sandbox import bwrap_support, worker_environment
from .settings import cache_dir_from_environment, cache_off_by_environment
from .worker.shared import processes
from .worker.shared.protocol import Run

# What the interpreter says of itself and of its torch, found without importing it.
PROBE = """
import importlib.metadata, importlib.util, json, sys
spec = importlib.util.find_spec("torch")
try:
    version = importlib.metadata.version("torch")
except importlib.metadata.PackageNotFoundError:
    version = None
where = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
print(json.dumps({"python": sys.version.split()[0], "executable": sys.executable, "torch": version,
                  "where": where}))
"""
HELP = "say what this setup gives gbls: the interpreter and its torch, the sandbox, the cache, the runs"
OLDEST_TORCH = (2, 6)


@dataclass(frozen=True)
class Interpreter:
    python: str
    executable: str
    torch: str | None
    where: str | None


def ask(python: str) -> Interpreter | str:
    """What ``python`` is and which torch it has, or why it could not say."""
    executable = shutil.which(python) or python
    try:
        done = subprocess.run(
            [executable, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=persistent.PROBE_SECONDS,
            env=worker_environment(),
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"{python} does not run: {error}"
    if done.returncode != 0:
        return f"{python} does not run: {done.stderr.strip().splitlines()[-1:] or done.returncode}"
    return Interpreter(**json.loads(done.stdout))


def interpreter_lines(python: str) -> tuple[list[str], bool]:
    """The interpreter's lines, and whether gbls can analyse with it."""
    found = ask(python)
    if isinstance(found, str):
        return [f"interpreter: {found}"], False
    lines = [f"interpreter: {found.executable} (Python {found.python})"]
    if found.torch is None:
        return [
            *lines,
            "torch: missing: `pip install torch` into it, or name another with --python",
        ], False
    release = tuple(int(part) for part in found.torch.split("+")[0].split(".")[:2] if part.isdigit())
    if release < OLDEST_TORCH:
        return [
            *lines,
            f"torch: {found.torch} in {found.where}: too old, gbls needs torch 2.6 or newer",
        ], False
    return [*lines, f"torch: {found.torch} in {found.where}"], True


def _in_child(flags: int) -> bool:
    """Whether a child process can have the namespaces ``flags`` (in a user namespace of its own if
    the kernel wants one) and mounts private to it, as an analysis makes them without bubblewrap."""
    pid = os.fork()
    if pid == 0:  # the child: try, answer by the exit status, touch nothing of the parent's
        made = processes.unshare(flags) or processes.unshare(processes.CLONE_NEWUSER | flags)
        os._exit(0 if made and (not flags & processes.CLONE_NEWNS or processes.private_mounts()) else 1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0


def sandbox_lines() -> list[str]:
    """Whether the sandbox is whole (bubblewrap works), and what an analysis gets without it."""
    support = bwrap_support()
    if support is not None:
        layer = (
            "yes (the worker holds CAP_SYS_ADMIN for its mounts)"
            if support.admin
            else "no: this bwrap cannot lend the worker CAP_SYS_ADMIN, so a run's writes are refused"
        )
        return [
            f"sandbox: whole: bubblewrap {shutil.which('bwrap')} works (no network but a loopback of "
            "its own, its own PID namespace, a read-only root, a private /tmp)",
            f"  a run's throwaway write layer: {layer}",
        ]
    offline = _in_child(processes.CLONE_NEWNET)
    layered = _in_child(processes.CLONE_NEWNS | processes.CLONE_NEWNET)
    network = "yes: no network but a loopback" if offline else "no: the network is reachable"
    layer = (
        "yes (a mount namespace of its own)"
        if layered
        else "no: runs are refused, their writes would reach disk"
    )
    return [
        "sandbox: partial: bubblewrap (bwrap) is missing or does not work here (`apt install bubblewrap`): "
        "the analysed code can write wherever you can; the limits, process groups and a closed stdin apply",
        f"  network namespace: {network}",
        f"  a run's throwaway write layer: {layer}",
    ]


def cache_lines(cache_dir: str, folder: str) -> list[str]:
    """Where the persistent cache of ``folder`` is, what put it there, and how much it holds."""
    if cache_off_by_environment():
        return ["cache: off (GBLS_NO_CACHE)"]
    named = cache_dir_from_environment()
    origin = "--cache-dir" if cache_dir else "GBLS_CACHE_DIR" if named else "default"
    where = os.path.abspath(os.path.join(folder, cache_dir or named or FOLDER))
    entries = [os.path.join(here, name) for here, _, names in os.walk(where) for name in names]
    entries = [path for path in entries if path.endswith(SUFFIX)]
    size = sum(os.path.getsize(path) for path in entries)
    count = f"{len(entries)} analys{'is' if len(entries) == 1 else 'es'}"
    return [f"cache: {where} ({origin}): " + (f"{count}, {size / 1024:.0f} KiB" if entries else "empty")]


def _run_line(run: Run, origin: str, folder: str) -> str:
    """The run as a command that does it when pasted in ``folder``, and the file that configures it."""
    return f"  {run.name}: {runs.shell_command(run, folder)} — {origin}"


def run_lines(folder: str) -> list[str]:
    """The runs ``folder`` configures, each with the file that says so, and what could not be read."""
    pyproject, launch = runs.from_pyproject(folder), runs.from_launch_json(folder)
    both = f"{runs.PYPROJECT} and {runs.LAUNCH}"
    lines = [_run_line(run, both if run in launch.runs else runs.PYPROJECT, folder) for run in pyproject.runs]
    lines += [_run_line(run, runs.LAUNCH, folder) for run in launch.runs if run not in pyproject.runs]
    lines += [f"  problem: {problem}" for problem in (*pyproject.problems, *launch.problems)]
    if not lines:
        return [f"runs: none configured in {folder} ([[tool.gbls.run]] in {runs.PYPROJECT}, {runs.LAUNCH})"]
    return [f"runs of {folder}:", *lines]


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--python", default="", help="the interpreter to analyse with (default: gbls's)")
    parser.add_argument(
        "--cache-dir", default="", metavar="DIR", help="the cache folder gbls check would use"
    )


def report(python: str, cache_dir: str, folder: str) -> tuple[str, bool]:
    """What ``gbls doctor`` says of the workspace ``folder``, and whether gbls can analyse with
    ``python`` (its torch)."""
    lines, usable = interpreter_lines(python or sys.executable)
    text = [f"gbls {__version__} ({os.path.dirname(os.path.abspath(__file__))})", *lines]
    text += [*sandbox_lines(), *cache_lines(cache_dir, folder), *run_lines(folder)]
    return "\n".join(text) + "\n", usable


def main(python: str, cache_dir: str) -> int:
    """``gbls doctor``: 0, or 2 where the interpreter cannot be analysed with."""
    text, usable = report(python, cache_dir, os.getcwd())
    sys.stdout.write(text)
    return 0 if usable else 2
