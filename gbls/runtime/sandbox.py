"""How the worker is started: inside bubblewrap where it works, with an environment cut to size.

bwrap gives the worker no network, no capabilities, its own PID namespace (nothing outlives it),
a read-only root file system (the workspace included), and a private, size-bounded /tmp; it is
killed with its parent. Without bwrap the worker still gets everything the worker itself
enforces (rlimits, process groups, timeouts, closed stdin, a scratch directory, and a network
namespace where the kernel allows one), and gbls says once that it runs without its sandbox.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .errors import SandboxError

WORKER_MAIN = Path(__file__).parent.parent / "worker" / "__main__.py"
TMP_BYTES = 1 << 30
SHM_BYTES = 256 << 20

PASSED_VARIABLES = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
}  # fmt: skip
PASSED_PREFIXES = ("LC_", "TORCH", "PYTORCH", "CONDA_")
# Never passed on, whatever the prefix: the user's code does not need the user's credentials.
SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|KEY|PRIVATE|AUTH|SESSION|COOKIE", re.IGNORECASE)
# TORCH_LOGS and friends would print Dynamo's own logs into the captured output for every analysis.
DROPPED = {"TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE"}


@dataclass(frozen=True)
class Launch:
    command: tuple[str, ...]
    environment: dict[str, str]
    sandbox: str  # bwrap | none
    note: str  # what the user should know about the sandbox, said once


def worker_environment(workspace: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The variables the analysed code plausibly needs, without secrets, with the workspace importable."""
    source = dict(os.environ if base is None else base)
    environment = {
        name: value
        for name, value in source.items()
        if (name in PASSED_VARIABLES or name.startswith(PASSED_PREFIXES))
        and not SECRET.search(name)
        and name not in DROPPED
    }
    paths = [workspace] + [p for p in environment.get("PYTHONPATH", "").split(os.pathsep) if p]
    environment["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    environment["CUDA_VISIBLE_DEVICES"] = ""
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    environment["PYTHONUNBUFFERED"] = "1"
    environment.setdefault("OMP_NUM_THREADS", "1")
    return environment


@lru_cache(maxsize=1)
def bwrap_sizes() -> bool | None:
    """Whether bwrap works here (installed, and user namespaces allowed), and can size its tmpfs.

    ``None``: no working bwrap. ``False``: a bwrap older than 0.7, without ``--size``.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    for sized in (True, False):
        try:
            probe = subprocess.run(
                [bwrap, *_bwrap_arguments([], sized), "true"], capture_output=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if probe.returncode == 0:
            return sized
    return None


def _bwrap_arguments(folders: list[str], sized: bool) -> list[str]:
    def tmpfs(path: str, size: int) -> list[str]:
        return ["--size", str(size), "--tmpfs", path] if sized else ["--tmpfs", path]

    arguments = [
        "--unshare-all",  # network, PID, IPC, UTS, cgroup and (where possible) user namespaces
        "--die-with-parent",
        # Root in the sandbox could otherwise remount the read-only root read-write.
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--proc", "/proc",
        "--dev", "/dev",
        *tmpfs("/dev/shm", SHM_BYTES),
        "--remount-ro", "/dev",
        # Writable space is RAM: bounded, and only in /tmp (where the scratch directories are).
        *tmpfs("/tmp", TMP_BYTES),
        # Sockets of system services (D-Bus, Docker) accept connections through a read-only mount.
        "--tmpfs", "/run",
        "--remount-ro", "/run",
    ]  # fmt: skip
    for folder in folders:
        # A workspace under /tmp must still be seen through the private /tmp; /tmp itself (gbls run
        # from there) must not cover it, or nothing could write a temporary file.
        if folder.startswith("/tmp/"):
            arguments += ["--ro-bind-try", folder, folder]
    return [*arguments, "--chdir", "/"]


def launch(interpreter: str | None, folders: list[str], mode: str = "auto") -> Launch:
    """The command and environment that start the worker; ``mode`` is auto, bwrap or off.

    ``folders`` are the workspace folders: visible (read-only) to the analysed code and importable.
    """
    python = interpreter or sys.executable
    folders = [os.path.abspath(folder) for folder in folders] or [os.getcwd()]
    environment = worker_environment(folders[0])
    worker = [python, str(WORKER_MAIN)]
    sized = bwrap_sizes() if mode != "off" else None
    if sized is not None:
        bwrap = shutil.which("bwrap") or "bwrap"
        environment["GBLS_SANDBOX"] = "bwrap"
        # The interpreter's environment (bin/..) and gbls's worker, were they under /tmp, too.
        visible = [
            *folders,
            os.path.dirname(os.path.dirname(os.path.abspath(python))),
            str(WORKER_MAIN.parent),
        ]
        return Launch((bwrap, *_bwrap_arguments(visible, sized), *worker), environment, "bwrap", "")
    if mode == "bwrap":
        raise SandboxError(
            "the sandbox setting asks for bwrap, but bubblewrap is missing or does not work here"
        )
    why = (
        "the sandbox setting is off"
        if mode == "off"
        else "bubblewrap (bwrap) is missing or does not work here"
    )
    note = (
        f"analysed code runs without the gbls sandbox ({why}): it can write wherever you can; timeouts, "
        "memory, CPU, file and process limits, process groups, a closed stdin and (where the kernel "
        "allows) no network still apply"
    )
    return Launch(tuple(worker), environment, "none", note)
