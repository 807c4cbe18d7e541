"""How the worker is started: inside bubblewrap where it works, with an environment cut to size.

bwrap gives the worker no network, no capability but the one it needs to give each analysis a
fresh /tmp and /dev/shm (which the analysis then drops), its own PID namespace (nothing outlives
it), a read-only root file system (the workspace included), and a private, size-bounded /tmp; it
is killed with its parent. Without bwrap the worker still gets everything the worker itself
enforces (rlimits, process groups, timeouts, closed stdin, a scratch directory, and a network
namespace where the kernel allows one), and gbls says once that it runs without its sandbox.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..manual import page
from ..settings import SandboxMode
from ..worker.shared import processes
from .errors import SandboxError

PACKAGE = Path(__file__).parent.parent
WORKER_MAIN = PACKAGE / "worker" / "__main__.py"
TMP_BYTES = 1 << 30
SHM_BYTES = 256 << 20

PASSED_VARIABLES = {
    "PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
    "LD_LIBRARY_PATH", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
    "GBLS_WORKER_LOG",  # the worker's log of its decisions, for debugging gbls
}  # fmt: skip
PASSED_PREFIXES = ("LC_", "TORCH", "PYTORCH", "CONDA_")
# Never passed on, whatever the prefix: the user's code does not need the user's credentials.
SECRET = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|KEY|PRIVATE|AUTH|SESSION|COOKIE", re.IGNORECASE)
# TORCH_LOGS and friends would print Dynamo's own logs into the captured output for every analysis.
DROPPED = {"TORCH_LOGS", "TORCH_TRACE", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE"}


def not_dumpable() -> None:
    """Keep the analysed code, which runs as the same user, out of this process's /proc/<pid>/fd
    (its ends of the worker's pipes) when it lacks CAP_SYS_PTRACE, as under bwrap."""
    processes.prctl(processes.PR_SET_DUMPABLE, 0)


@dataclass(frozen=True)
class Launch:
    command: tuple[str, ...]
    environment: dict[str, str]
    sandbox: str  # bwrap | none
    note: str  # what the user should know about the sandbox, said once


def worker_environment(base: dict[str, str] | None = None, gpu: bool = False) -> dict[str, str]:
    """The variables the analysed code plausibly needs, without secrets; the GPU hidden unless ``gpu``.

    The workspace is not on ``PYTHONPATH`` here: a workspace ``random.py`` would replace the
    standard library's for the worker itself. Each analysis puts it first once the worker's own
    imports are done.
    """
    source = dict(os.environ if base is None else base)
    environment = {
        name: value
        for name, value in source.items()
        if (name in PASSED_VARIABLES or name.startswith(PASSED_PREFIXES))
        and not SECRET.search(name)
        and name not in DROPPED
    }
    if gpu:
        # Asked through NVML, torch.cuda.is_available() does not initialize CUDA, which a forked
        # analysis could not use had the warm worker initialized it.
        environment["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    else:
        environment["CUDA_VISIBLE_DEVICES"] = ""
    environment["PYTHONDONTWRITEBYTECODE"] = "1"
    environment["PYTHONUNBUFFERED"] = "1"
    environment.setdefault("OMP_NUM_THREADS", "1")
    return environment


@dataclass(frozen=True)
class Bwrap:
    """What the bwrap here can do: size its tmpfs (0.7 and later), lend the worker CAP_SYS_ADMIN
    (not a setuid bwrap run by another user than root)."""

    sized: bool
    admin: bool


@lru_cache(maxsize=1)
def bwrap_support() -> Bwrap | None:
    """Whether bwrap works here (installed, and user namespaces allowed), and what it can do."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return None
    for support in (Bwrap(True, True), Bwrap(True, False), Bwrap(False, True), Bwrap(False, False)):
        try:
            probe = subprocess.run(
                [bwrap, *_bwrap_arguments([], support), "true"], capture_output=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        if probe.returncode == 0:
            return support
    return None


def _bwrap_arguments(folders: list[str], support: Bwrap, gpu: bool = False) -> list[str]:
    def tmpfs(path: str, size: int) -> list[str]:
        return ["--size", str(size), "--tmpfs", path] if support.sized else ["--tmpfs", path]

    # Root in the sandbox could otherwise remount the read-only root read-write. CAP_SYS_ADMIN
    # gives each analysis its own /tmp and /dev/shm; each drops it before running any user code.
    # CAP_DAC_OVERRIDE too: a run's throwaway write layer (an overlay) needs it, as root, to mount.
    lent = ["--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_DAC_OVERRIDE"]
    capabilities = ["--cap-drop", "ALL", *(lent if support.admin else [])]
    arguments = [
        "--unshare-all",  # network, PID, IPC, UTS, cgroup and (where possible) user namespaces
        "--die-with-parent",
        *capabilities,
        "--ro-bind", "/", "/",
        "--proc", "/proc",
        "--dev", "/dev",
        # The bare /dev bwrap makes has no GPU: CUDA opens /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia0.
        *[argument for node in (_gpu_devices() if gpu else []) for argument in ("--dev-bind", node, node)],
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


def import_folders(prefix: str, environment: dict[str, str]) -> list[str]:
    """The folders an interpreter whose environment is ``prefix`` imports from outside it: those
    ``PYTHONPATH`` and its site-packages' .pth files name (a venv given another's packages, as a
    project's CI venv under /tmp is). Read, not asked of the interpreter: nothing of the user's
    environment runs outside the sandbox."""
    found = [folder for folder in environment.get("PYTHONPATH", "").split(os.pathsep) if folder]
    for pth in sorted(
        glob.glob(os.path.join(glob.escape(prefix), "lib", "python*", "site-packages", "*.pth"))
    ):
        try:
            lines = Path(pth).read_text().splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        # As site.addpackage reads them: a line that starts with "import" is code, not a folder.
        found += [
            os.path.join(os.path.dirname(pth), line.rstrip())
            for line in lines
            if line.strip() and not line.startswith(("#", "import ", "import\t"))
        ]
    return [os.path.normpath(folder) for folder in found]


def _gpu_devices() -> list[str]:
    return sorted(glob.glob("/dev/nvidia*"))


def launch(
    interpreter: str | None, folders: list[str], mode: SandboxMode = "auto", gpu: bool = False
) -> Launch:
    """The command and environment that start the worker; ``mode`` is auto, bwrap or off; ``gpu``:
    the analyses are shown the GPU.

    ``folders`` are the workspace folders: visible (read-only) to the analysed code and importable.
    """
    python = interpreter or sys.executable
    folders = [os.path.abspath(folder) for folder in folders] or [os.getcwd()]
    environment = worker_environment(gpu=gpu)
    worker = [python, str(WORKER_MAIN)]
    support = bwrap_support() if mode != "off" else None
    if support is not None:
        bwrap = shutil.which("bwrap") or "bwrap"
        environment["GBLS_SANDBOX"] = "bwrap"
        # The interpreter's environment (bin/..), what it imports from beyond it and gbls's package,
        # were they under /tmp, too: the whole package, not only the worker, since a pytest the
        # analysed program starts loads gbls's pytest plugin from wherever the interpreter finds
        # gbls (an editable install's finder names the checkout).
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
        visible = [*folders, prefix, *import_folders(prefix, environment), str(PACKAGE)]
        return Launch((bwrap, *_bwrap_arguments(visible, support, gpu), *worker), environment, "bwrap", "")
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
        f"allows) no network still apply ({page('sandbox')})"
    )
    return Launch(tuple(worker), environment, "none", note)
