"""One analysis's child process: set up and run in the fork, and its record in the warm parent."""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
import traceback
from typing import List, Optional

from . import endings, events, limits, processes
from .events import DoneEvent, Event, FailureEvent, NoteEvent, StoppedEvent
from .protocol import CANCELLED, ERROR, OK, TIMEOUT, Failure, ProtocolError, Request, Result

TAIL_BYTES = 16 * 1024
EVENTS_LIMIT = 64 * 1024 * 1024

# The real one: the analysis wraps os._exit to learn which line called it.
_exit = os._exit


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

    def __init__(self, request: Request, pid: int, events_fd: int, output_fd: int, scratch: str) -> None:
        self.request = request
        self.pid = pid
        self.scratch = scratch
        self.streams = {events_fd: "events", output_fd: "output"}
        self.partial = b""
        self.event_bytes = 0
        self.events: List[Event] = []
        self.unreadable = 0  # event lines that are not gbls events: the analysed code wrote them
        self.output = Output(request.settings.max_output)
        self.started = time.monotonic()
        self.deadline = self.started + request.settings.timeout
        self.ended_by = ""  # timeout | cancelled | processes | flood
        self.kill_at: Optional[float] = None
        self.status: Optional[int] = None
        self.exited_at: Optional[float] = None

    def feed(self, fd: int, data: bytes) -> None:
        if self.streams[fd] == "output":
            self.output.feed(data)
            return
        self.event_bytes += len(data)
        if self.event_bytes > EVENTS_LIMIT:
            self.stop(endings.FLOOD)
            return
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            try:
                self.events.append(events.decode(line))
            except ProtocolError:
                self.unreadable += 1

    def stop(self, reason: str) -> None:
        if not self.ended_by and self.status is None:
            self.ended_by = reason
            processes.kill_group(self.pid)

    def result(self, torch_version: str) -> Result:
        from .merge import merge

        functions, breaks, graphs = merge(self.events, self.request.path)
        failure = endings.failure(
            self.ended_by,
            self.status or 0,
            self.events,
            self.output.text(),
            self.request.path,
            self.request.settings,
            EVENTS_LIMIT,
        )
        if failure is None and self.unreadable:
            failure = Failure(
                "tampered",
                f"the analysed code tampered with gbls's results ({self.unreadable} lines in its event "
                "stream are not gbls's); what gbls captured is shown, but may be incomplete",
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
    request: Request, events_fd: int, output_fd: int, scratch: str, protocol_fd: int, sandboxed: bool
) -> None:
    """The forked child: isolate, limit, analyse, and never return."""
    me = os.getpid()

    def emit(event: Event) -> None:
        if os.getpid() != me:  # a process the analysed code forked has no say in the result
            return
        data = events.encode(event)
        while data:
            data = data[os.write(events_fd, data) :]

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
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        _writable_caches(scratch)
        offline = sandboxed or processes.unshare_network()
        limits.apply(request.settings)
        _fresh_random_state()
        from .analyse import run as analyse

        analyse(request, emit, offline)
        code = 0
    except BaseException as error:  # a bug in gbls, not in the analysed code
        traceback.print_exc()
        try:
            emit(
                FailureEvent(kind="worker", message=f"gbls's worker failed: {type(error).__name__}: {error}")
            )
            emit(DoneEvent())
        except OSError:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            _exit(code)
