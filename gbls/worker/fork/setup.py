"""The forked child's setup before any user code runs: isolate, limit, then hand over to the analysis.

Runs in the fork of the warm worker (``supervisor.zygote``): a session and process group of its
own, stdin closed, stdout and stderr into the parent's pipe, no network (or bwrap's), a /tmp of
its own under bwrap, every capability dropped, the rlimits (``limits``). Then ``analysis.run``.
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import tempfile
import traceback

from ..analysis.tampering import replaced
from ..log import log
from ..shared import events, processes
from ..shared.events import DoneEvent, Event, FailureEvent, NoteEvent
from ..shared.protocol import Request
from . import interpreters, layers, limits

# Without bwrap and without a throwaway layer, a run's writes would land on the disk.
NO_LAYER = (
    "gbls could not give this run a throwaway layer to write in ({}), so it did not run it: its writes "
    "would reach your disk. Install bubblewrap (apt install bubblewrap), or analyse single files"
)
NO_FILE_LAYER = (
    "gbls could not give this analysis a throwaway layer to write in ({}), so the file ran in a scratch "
    "directory of its own, not in {}: a path relative to that folder is not found there"
)
REFUSED_WRITES = (
    "gbls could not give this run a throwaway layer to write in ({}): writing outside its scratch "
    "directory (tempfile.gettempdir()) is refused in the gbls sandbox"
)

TMP_BYTES = 1 << 30
SHM_BYTES = 256 << 20
# Under bwrap, torch's just-in-time extension builds (load_inline) in the worker's own /tmp, shared by
# its analyses: built once, reused by the next analysis as by the next plain ``python`` run. It is in
# the sandbox's RAM (never on disk, gone with the worker), bounded by its /tmp, and holds only what
# the user's own code built: what one analysis leaves there, the next runs as its own code anyway.
BUILDS = "/tmp/gbls-torch-extensions"

# The real ones, taken before any user code runs: the analysed code may replace them.
_exit = os._exit
_write = os.write
_getpid = os.getpid


def _writable_caches(scratch: str, sandboxed: bool) -> None:
    """torch's build caches where the analysed code can write: a just-in-time C++ extension, inductor
    and triton keep their builds there, and the defaults (under the home folder) are read-only in
    the sandbox, or in a throwaway layer. Where they can be written (no sandbox), the code keeps the
    ones it would use. Under bwrap, extensions are built into ``BUILDS``, which outlives the
    analysis (a layer over the home folder would throw each build away); the others into its
    scratch directory, where they cannot be written."""
    import torch.utils.cpp_extension as cpp_extension

    default_extensions = getattr(cpp_extension, "get_default_build_root", lambda: "")()
    for variable, where in (
        ("TORCH_EXTENSIONS_DIR", os.environ.get("TORCH_EXTENSIONS_DIR") or default_extensions),
        ("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")),
        ("TRITON_CACHE_DIR", os.environ.get("TRITON_CACHE_DIR", "")),
    ):
        if sandboxed and variable == "TORCH_EXTENSIONS_DIR" and _can_write(BUILDS):
            os.environ[variable] = BUILDS
        elif where and not _can_write(where):
            os.environ[variable] = os.path.join(scratch, "cache", variable.lower())


def _can_write(path: str) -> bool:
    """Whether ``path`` can be created or written: its nearest existing folder is writable."""
    path = os.path.abspath(path)
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.access(path, os.W_OK)


def _fresh_random_state() -> None:
    """The random generators seeded afresh, as a new interpreter seeds them: a fork inherits the warm
    parent's, and every analysis would draw the same "random" numbers."""
    import random

    import torch

    random.seed()
    torch.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _fresh_thread_pool() -> None:
    """torch's thread pool made anew while this process has one thread. The fork leaves the parent's
    pool without its threads, and torch replaces it on its next use; the autograd engine's threads,
    started together on the first backward, each use it at once, and on torch 2.15 one of them may
    find it gone in the middle of the replacement and abort ("Invalid thread pool!")."""
    import torch

    torch.set_num_threads(torch.get_num_threads())


def run(
    request: Request,
    events_fd: int,
    key: bytes,
    output_fd: int,
    scratch: str,
    protocol_fd: int,
    sandboxed: bool,
    startup: frozenset[str],
) -> None:
    """The forked child: isolate, limit, analyse, and never return."""
    me = _getpid()

    def emit(event: Event) -> None:
        forward(events.sign(key, events.encode(event)))

    def forward(data: bytes) -> None:
        """Signed lines into the event stream: the analysis's own, and those its interpreters wrote."""
        if _getpid() != me:  # a process the analysed code forked has no say in the result
            return
        while data:
            data = data[_write(events_fd, data) :]

    code = 70
    try:
        os.setsid()
        processes.prctl(processes.PR_SET_PDEATHSIG, signal.SIGKILL)
        os.close(protocol_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(null)
        os.close(output_fd)
        writable = _layer_folders(request)
        offline, unlayered = _isolate(sandboxed, scratch, writable)
        log(f"isolated: under bwrap {sandboxed}, network cut {offline}, scratch {scratch}, layer {writable}")
        if unlayered and not sandboxed and request.run is not None:  # its writes would reach the disk
            emit(FailureEvent(kind="write", message=NO_LAYER.format(unlayered)))
            emit(DoneEvent())
            code = 0
            return
        if unlayered and not sandboxed:
            emit(NoteEvent(text=NO_FILE_LAYER.format(unlayered, request.cwd)))
        elif unlayered:
            emit(NoteEvent(text=REFUSED_WRITES.format(unlayered)))
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        if request.run is None:
            # As ``python FILE`` started there; without a layer to write in, its own scratch directory.
            os.chdir(request.cwd if request.cwd and not unlayered else scratch)
            workspace = request.workspace or os.path.dirname(request.path)
            # Processes the analysed code starts import from the workspace, as the analysis does.
            os.environ["PYTHONPATH"] = os.pathsep.join(
                dict.fromkeys([workspace, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
            )
        else:  # as its users start it: their working directory and variables
            os.chdir(request.run.cwd)
            os.environ.update(dict(request.run.env))
        _writable_caches(scratch, sandboxed)
        limits.apply(request.settings)
        _fresh_random_state()
        _fresh_thread_pool()
        from ..analysis.children import Children
        from ..analysis.run import analyse

        analyse(
            request, emit, offline, startup, Children(interpreters.arm(key, scratch, request), forward, key)
        )
        code = 0
    except BaseException as error:
        sabotaged = replaced()
        try:
            traceback.print_exc()
        except BaseException:
            pass
        if sabotaged:
            message = (
                f"the analysed code replaced {', '.join(sabotaged)}, which gbls needs to report what it "
                f"found, and the analysis stopped ({type(error).__name__}: {error})"
            )
            failure = FailureEvent(kind="tampered", message=message)
        else:  # a bug in gbls, not in the analysed code
            failure = FailureEvent(
                kind="worker", message=f"gbls's worker failed: {type(error).__name__}: {error}"
            )
        try:
            emit(failure)
            emit(DoneEvent())
        except BaseException:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            _exit(code)


def _layer_folders(request: Request) -> list[str]:
    """Where the program may write, through a throwaway layer: its workspace, its working directory and
    the home folder (``~/.cache``); nowhere for a file's analysis without a working directory, which
    writes in its scratch directory."""
    cwd = request.run.cwd if request.run is not None else request.cwd
    if not cwd:
        return []
    return [request.workspace, cwd, os.path.expanduser("~")]


def _isolate(sandboxed: bool, scratch: str, writable: list[str]) -> tuple[bool, str]:
    """No network, a throwaway write layer over ``writable``, and under bwrap a fresh /tmp and /dev/shm;
    whether the network is cut, and why the layer could not be made ("" if it was, or none was asked).

    Under bwrap the network is gone already, and the worker holds CAP_SYS_ADMIN (and CAP_DAC_OVERRIDE)
    only for these mounts: every capability is dropped before any user code runs. Without bwrap, /tmp
    is the machine's, as for plain ``python``, and the network is cut where the kernel lets us.
    """
    unlayered = ""
    if sandboxed:
        if processes.unshare(processes.CLONE_NEWNS):
            _fresh_temporary_space(scratch)
            unlayered = _cover(writable, scratch) if writable else ""
        elif writable:
            unlayered = f"no mount namespace ({processes.last_error()})"
        if not processes.drop_capabilities():
            raise RuntimeError("the analysis could not give up the capabilities bwrap lends the worker")
        return True, unlayered
    if not writable:
        offline, user = _own_namespaces(processes.CLONE_NEWNET)
        if user:
            processes.drop_capabilities()  # a new user namespace gave the analysis every capability in it
        return offline, ""
    if not _own_namespaces(processes.CLONE_NEWNS | processes.CLONE_NEWNET)[0]:
        return False, f"no mount namespace ({processes.last_error()})"
    if not processes.private_mounts():
        return True, f"no private mounts ({processes.last_error()})"
    unlayered = _cover(writable, scratch)
    processes.drop_capabilities()  # a new user namespace gave the analysis every capability in it
    return True, unlayered


def _own_namespaces(flags: int) -> tuple[bool, bool]:
    """Namespaces of the analysis's own (``flags``: a network namespace among them), in a new user
    namespace where the kernel wants one (the user's own ids in it, as outside), and its loopback up,
    as bwrap brings up the worker's: local distributed code (a gloo store, ``tcp://127.0.0.1``) works
    as under plain ``python``, nothing outside is reachable. Whether they were made, and whether in a
    new user namespace (which gave the analysis every capability in it)."""
    uid, gid = os.getuid(), os.getgid()
    user = False
    if not processes.unshare(flags):
        if not processes.unshare(processes.CLONE_NEWUSER | flags):
            return False, False
        processes.map_own_ids(uid, gid)
        user = True
    log(f"own namespaces (a new user namespace: {user}), loopback up: {processes.loopback_up()}")
    return True, user


def _cover(folders: list[str], scratch: str) -> str:
    return layers.cover(layers.folders_to_cover(folders, scratch), scratch)


def _fresh_temporary_space(scratch: str) -> None:
    """Empty /tmp and /dev/shm of this analysis's own, gone with it; the scratch directory in the new
    /tmp, the workspace folders bwrap shows under /tmp shown again, read-only, and the extension
    builds shared by the worker's analyses (``BUILDS``) again, writable."""
    if not processes.private_mounts():
        return
    os.makedirs(BUILDS, mode=0o700, exist_ok=True)  # in the worker's /tmp, still seen here
    # Opened before /tmp is covered: each is bound again from its handle, through /proc.
    shown = [(point, os.open(point, os.O_PATH)) for point in processes.mounts_under("/tmp")]
    builds = os.open(BUILDS, os.O_PATH)
    try:
        if not processes.mount_tmpfs("/tmp", TMP_BYTES):
            return
        for point, handle in shown:
            if stat.S_ISDIR(os.fstat(handle).st_mode):
                os.makedirs(point, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(point), exist_ok=True)
                os.close(os.open(point, os.O_CREAT | os.O_WRONLY, 0o600))
            processes.bind_read_only(f"/proc/self/fd/{handle}", point)
        os.makedirs(BUILDS)
        processes.bind(f"/proc/self/fd/{builds}", BUILDS)
        os.makedirs(scratch, exist_ok=True)
    finally:
        for _, handle in shown:
            os.close(handle)
        os.close(builds)
    if os.path.isdir("/dev/shm"):
        processes.mount_tmpfs("/dev/shm", SHM_BYTES)
