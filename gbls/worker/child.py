"""One analysis's child process: set up and run in the fork, and its record in the warm parent."""

from __future__ import annotations

import builtins
import json
import os
import signal
import stat
import sys
import tempfile
import time
import traceback
from collections import deque
from typing import Deque, FrozenSet, List, Optional, Set, Tuple

from . import endings, events, limits, processes
from .events import BreakEvent, DoneEvent, Event, FailureEvent, NoteEvent, StoppedEvent
from .protocol import CANCELLED, ERROR, OK, TIMEOUT, Failure, Frame, ProtocolError, Request, Result

TAIL_BYTES = 16 * 1024
EVENTS_LIMIT = 64 * 1024 * 1024
EVENT_LINE_LIMIT = 1 << 20  # no real event comes near: a longer line is not gbls's
MAX_EVENTS = 100_000
MAX_CHAINS = 5_000  # distinct break chains merged: bounds the merge, however many events repeat them
MAX_BREAKS = 1_000  # root causes reported per file; a real file has a handful
DIGEST_LINES = 200  # event lines decoded per turn of the parent's loop: it serves every child meanwhile
TMP_BYTES = 1 << 30
SHM_BYTES = 256 << 20

# The real ones, taken before any user code runs: the analysed code may replace them.
_exit = os._exit
_write = os.write
_getpid = os.getpid
# What gbls's own code calls while the analysed code runs: replaced, it is the analysed code's doing.
WATCHED = {
    "builtins.__import__": (builtins, "__import__"),
    "builtins.open": (builtins, "open"),
    "json.dumps": (json, "dumps"),
    "json.loads": (json, "loads"),
    "os.write": (os, "write"),
}
_originals = {name: getattr(owner, attribute) for name, (owner, attribute) in WATCHED.items()}


def replaced() -> List[str]:
    """What of ``WATCHED`` the analysed code replaced."""
    return [
        name
        for name, (owner, attribute) in WATCHED.items()
        if getattr(owner, attribute, None) is not _originals[name]
    ]


class Output:
    """A child's stdout and stderr: the head up to a limit, then only a short tail."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL_BYTES:
                self.dropped += len(self.tail) - TAIL_BYTES
                del self.tail[:-TAIL_BYTES]

    def text(self) -> str:
        middle = f"\n[gbls: {self.dropped} bytes of output dropped]\n" if self.dropped else ""
        return (
            bytes(self.head).decode("utf-8", "replace") + middle + bytes(self.tail).decode("utf-8", "replace")
        )


class Child:
    """The parent's record of one running analysis: its pipes, its events, its deadline."""

    def __init__(
        self, request: Request, pid: int, events_fd: int, key: bytes, output_fd: int, scratch: str
    ) -> None:
        self.request = request
        self.key = key
        self.pid = pid
        self.scratch = scratch
        self.streams = {events_fd: "events", output_fd: "output"}
        self.partial = b""
        self.event_bytes = 0
        # Lines not decoded yet: checking an event costs, and the parent serves every child meanwhile.
        self.pending: Deque[bytes] = deque()
        self.received = 0
        # The last lines past MAX_EVENTS: how the analysis ended (done, failure, stuck) is among them.
        self.last: Deque[bytes] = deque(maxlen=64)
        self.events: List[Event] = []
        self.chains: Set[Tuple[int, str, Tuple[Frame, ...]]] = set()
        self.unreadable = 0  # event lines not signed by gbls, or no events: the analysed code wrote them
        self.dropped = 0  # events past MAX_EVENTS
        self.unmerged = 0  # break events past MAX_CHAINS distinct chains
        self.output = Output(request.settings.max_output)
        self.started = time.monotonic()
        self.deadline = self.started + request.settings.timeout
        self.ended_by = ""  # timeout | cancelled | processes | flood | overlong
        self.kill_at: Optional[float] = None
        self.status: Optional[int] = None
        self.exited_at: Optional[float] = None

    def feed(self, fd: int, data: bytes) -> None:
        if self.streams[fd] == "output":
            self.output.feed(data)
            return
        if self.ended_by in (endings.FLOOD, endings.OVERLONG):
            return
        self.event_bytes += len(data)
        if self.event_bytes > EVENTS_LIMIT:
            self.stop(endings.FLOOD)
            return
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if len(self.partial) > EVENT_LINE_LIMIT or any(len(line) > EVENT_LINE_LIMIT for line in lines):
            self.partial = b""
            self.stop(endings.OVERLONG)
            return
        room = max(MAX_EVENTS - self.received, 0)
        self.pending.extend(lines[:room])
        self.received += min(room, len(lines))
        self.last.extend(lines[room:])
        self.dropped += max(len(lines) - room, 0)

    def digest(self, budget: int) -> None:
        """Decode up to ``budget`` of the lines received; lines that are no gbls event are counted."""
        for _ in range(min(budget, len(self.pending))):
            try:
                event = events.decode(events.unsigned(self.key, self.pending.popleft()))
            except ProtocolError:
                self.unreadable += 1
                continue
            if isinstance(event, BreakEvent) and event.messages:
                chain = (event.target, event.messages[0].gb_type, event.chain)
                if chain not in self.chains and len(self.chains) >= MAX_CHAINS:
                    self.unmerged += 1
                    continue
                self.chains.add(chain)
            self.events.append(event)

    def stop(self, reason: str) -> None:
        if not self.ended_by and self.status is None:
            self.ended_by = reason
            processes.kill_group(self.pid)

    def result(self, torch_version: str) -> Result:
        from .merge import merge

        self.pending.extend(self.last)
        self.digest(len(self.pending))
        decoded = self.events
        found = merge(decoded, self.request.path)
        functions, breaks, graphs = found.functions, found.breaks, found.graphs
        truncated = []
        if self.dropped > len(self.last):
            truncated.append(
                f"{self.dropped - len(self.last)} events past the first {MAX_EVENTS} were dropped"
            )
        if self.unmerged:
            truncated.append(
                f"{self.unmerged} graph-break events past {MAX_CHAINS} distinct chains were dropped"
            )
        if len(breaks) > MAX_BREAKS:
            truncated.append(f"only the first {MAX_BREAKS} of {len(breaks)} graph breaks are shown")
            breaks = breaks[:MAX_BREAKS]
        failure = endings.failure(
            self.ended_by,
            self.status or 0,
            decoded,
            self.output.text(),
            self.request.path,
            self.request.settings,
            EVENTS_LIMIT,
        )
        if failure is None and self.unreadable:
            failure = Failure(
                "tampered",
                f"the analysed code tampered with gbls's results (it wrote {self.unreadable} "
                f"line{'s' if self.unreadable != 1 else ''} into gbls's event stream); what gbls "
                "captured is shown, but may be incomplete",
            )
        if truncated:
            note = "gbls output truncated: " + "; ".join(truncated)
            failure = (
                Failure("truncated", note)
                if failure is None
                else Failure(failure.kind, f"{failure.message} ({note})", failure.line, failure.column)
            )
        if self.ended_by in (TIMEOUT, CANCELLED):
            status = self.ended_by
        elif failure is not None:
            status = ERROR
        else:
            status = OK
        return Result(
            path=self.request.path,
            status=status,
            failure=failure,
            functions=functions,
            breaks=breaks,
            graphs=graphs,
            recompiles=found.recompiles,
            output=self.output.text(),
            torch=torch_version,
            seconds=round(time.monotonic() - self.started, 3),
            notes=tuple(dict.fromkeys(event.text for event in self.events if isinstance(event, NoteEvent))),
            stopped_line=next((e.line or 0 for e in self.events if isinstance(e, StoppedEvent)), 0),
        )


def _writable_caches(scratch: str) -> None:
    """torch's build caches where the analysed code can write: a just-in-time C++ extension, inductor
    and triton keep their builds there, and the defaults (under the home folder) are read-only in
    the sandbox. Where they can be written (no sandbox), the code keeps the ones it would use."""
    import torch.utils.cpp_extension as cpp_extension

    default_extensions = getattr(cpp_extension, "get_default_build_root", lambda: "")()
    for variable, where in (
        ("TORCH_EXTENSIONS_DIR", os.environ.get("TORCH_EXTENSIONS_DIR") or default_extensions),
        ("TORCHINDUCTOR_CACHE_DIR", os.environ.get("TORCHINDUCTOR_CACHE_DIR", "")),
        ("TRITON_CACHE_DIR", os.environ.get("TRITON_CACHE_DIR", "")),
    ):
        if where and not _can_write(where):
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


def run(
    request: Request,
    events_fd: int,
    key: bytes,
    output_fd: int,
    scratch: str,
    protocol_fd: int,
    sandboxed: bool,
    startup: FrozenSet[str],
) -> None:
    """The forked child: isolate, limit, analyse, and never return."""
    me = _getpid()

    def emit(event: Event) -> None:
        if _getpid() != me:  # a process the analysed code forked has no say in the result
            return
        data = events.sign(key, events.encode(event))
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
        offline = _isolate(sandboxed, scratch)
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        _writable_caches(scratch)
        workspace = request.workspace or os.path.dirname(request.path)
        # Processes the analysed code starts import from the workspace, as the analysis does.
        os.environ["PYTHONPATH"] = os.pathsep.join(
            dict.fromkeys([workspace, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
        )
        limits.apply(request.settings)
        _fresh_random_state()
        from .analyse import run as analyse

        analyse(request, emit, offline, startup)
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


def _isolate(sandboxed: bool, scratch: str) -> bool:
    """No network, and under bwrap a fresh /tmp and /dev/shm; whether the network is cut.

    Under bwrap the network is gone already, and the worker holds CAP_SYS_ADMIN only for these
    mounts: every capability is dropped before any user code runs. Without bwrap, /tmp is the
    machine's, as for plain ``python``, and the network is cut where the kernel lets us.
    """
    if sandboxed:
        if processes.unshare(processes.CLONE_NEWNS):
            _fresh_temporary_space(scratch)
        if not processes.drop_capabilities():
            raise RuntimeError("the analysis could not give up the capabilities bwrap lends the worker")
        return True
    return processes.unshare(processes.CLONE_NEWNET) or processes.unshare(
        processes.CLONE_NEWUSER | processes.CLONE_NEWNET
    )


def _fresh_temporary_space(scratch: str) -> None:
    """Empty /tmp and /dev/shm of this analysis's own, gone with it; the scratch directory in the new
    /tmp, and the workspace folders bwrap shows under /tmp shown again, read-only."""
    if not processes.private_mounts():
        return
    # Opened before /tmp is covered: each is bound again from its handle, through /proc.
    shown = [(point, os.open(point, os.O_PATH)) for point in processes.mounts_under("/tmp")]
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
        os.makedirs(scratch, exist_ok=True)
    finally:
        for _, handle in shown:
            os.close(handle)
    if os.path.isdir("/dev/shm"):
        processes.mount_tmpfs("/dev/shm", SHM_BYTES)
