"""The warm worker: torch and Dynamo imported once, one forked child per analysis.

Speaks the protocol on stdin/stdout (JSON lines). Each ``analyse`` request forks a child from
this warm, never-used-by-user-code parent, so every analysis starts from a clean state without
paying for ``import torch``. The child runs in its own session and process group with rlimits
(address space, CPU, open files, file size, no core dumps), stdin closed, stdout and stderr
captured through a pipe (bounded here), a scratch directory of its own, and, when no outer
sandbox cut it already, no network. The parent enforces the wall-clock timeout and a process
count, answers cancels, kills the whole group when a child ends, and, as a subreaper, kills
whatever escaped the group. Events the child streamed before it died are kept.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import faulthandler
import json
import os
import re
import resource
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, List, Optional

from . import protocol
from .protocol import Failure, Request, Result

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
KILL_GRACE = 0.5  # seconds between the traceback dump and SIGKILL on timeout
WATCH_INTERVAL = 0.25  # seconds between process counts
TAIL_BYTES = 16 * 1024

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


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
    def __init__(self, request: Request, pid: int, events_fd: int, output_fd: int, scratch: str) -> None:
        self.request = request
        self.pid = pid
        self.scratch = scratch
        self.open_fds = {events_fd, output_fd}
        self.partial = b""
        self.events: List[Dict[str, Any]] = []
        self.output = Output(request.settings.max_output)
        self.started = time.monotonic()
        self.deadline = self.started + request.settings.timeout
        self.ended_by = ""  # timeout | cancelled | processes
        self.kill_at: Optional[float] = None
        self.status: Optional[int] = None
        self.exited_at: Optional[float] = None

    def feed_events(self, data: bytes) -> None:
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                continue

    def result(self, torch_version: str) -> Result:
        from .merge import merge

        functions, breaks, graphs = merge(self.events, self.request.path)
        failure = self._failure()
        if self.ended_by in (protocol.TIMEOUT, protocol.CANCELLED):
            status = self.ended_by
        elif failure is not None:
            status = protocol.ERROR
        else:
            status = protocol.OK
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
        )

    def _failure(self) -> Optional[Failure]:
        settings = self.request.settings
        if self.ended_by == protocol.TIMEOUT:
            line = _line_running(self.output.text(), self.request.path)
            where = f"; it was running line {line}" if line else ""
            return Failure("timeout", f"analysis timed out after {settings.timeout:g} s{where}", line)
        if self.ended_by == protocol.CANCELLED:
            return Failure("cancelled", "analysis cancelled: a newer request replaced it")
        if self.ended_by == "processes":
            return Failure(
                "crashed",
                f"the analysis started more than {settings.max_processes} processes (a fork bomb?) "
                "and was stopped",
            )
        reported = [e for e in self.events if e["event"] == "failure"]
        finished = any(e["event"] == "done" for e in self.events)
        status = self.status or 0
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            name = signal.Signals(number).name
            why = {
                "SIGSEGV": "segmentation fault",
                "SIGXCPU": "CPU time limit exceeded",
                "SIGKILL": "killed, likely by the memory limit",
                "SIGBUS": "bus error",
                "SIGABRT": "aborted",
            }.get(name, "killed by a signal")
            kind = "memory" if name == "SIGKILL" else "crashed"
            return Failure(kind, f"the analysis process crashed: {name} ({why}); breaks seen before are kept")
        if not finished:
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
            first = reported[0] if reported else None
            message = (
                f"the analysed code ended the process with exit code {code} (os._exit?) "
                "before the analysis finished"
            )
            return Failure("exit", message, first["line"] if first else None)
        if reported:
            first = reported[0]
            return Failure(first["kind"], first["message"], first.get("line"), first.get("column"))
        return None


def _line_running(output: str, path: str) -> Optional[int]:
    """The analysed file's innermost line in the last faulthandler dump."""
    dump = output.rsplit("(most recent call first):", 1)
    if len(dump) < 2:
        return None
    for match in re.finditer(r'File "([^"]+)", line (\d+)', dump[1]):
        if match.group(1) == path:
            return int(match.group(2))
    return None


class Zygote:
    def __init__(self, torch_version: str, sandboxed: bool) -> None:
        self.torch_version = torch_version
        self.sandboxed = sandboxed
        self.selector = selectors.DefaultSelector()
        self.children: Dict[int, Child] = {}
        self.inbox = b""
        self.out = os.dup(1)
        os.dup2(2, 1)  # a stray print from an import must never corrupt the protocol
        self.next_watch = 0.0

    def send(self, line: str) -> None:
        data = (line + "\n").encode()
        while data:
            data = data[os.write(self.out, data) :]

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, None)
        while True:
            busy = bool(self.children)
            for key, _ in self.selector.select(0.05 if busy else None):
                if key.data is None:
                    if not self._read_requests():
                        self._shutdown()
                        return
                else:
                    self._read_child(key.fd, key.data)
            self._reap()
            self._enforce()
            self._finish()

    def _read_requests(self) -> bool:
        data = os.read(0, 1 << 16)
        if not data:
            return False
        lines = (self.inbox + data).split(b"\n")
        self.inbox = lines.pop()
        for line in lines:
            if line.strip():
                self._handle(protocol.decode(line.decode()))
        return True

    def _handle(self, message: Dict[str, Any]) -> None:
        if message["type"] == "analyse":
            self._start(protocol.from_dict(Request, message["request"]))
        elif message["type"] == "cancel":
            for child in self.children.values():
                if child.request.id == message["id"] and not child.ended_by:
                    child.ended_by = protocol.CANCELLED
                    _kill_group(child.pid)

    def _start(self, request: Request) -> None:
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        scratch = tempfile.mkdtemp(prefix="gbls-")
        pid = os.fork()
        if pid == 0:
            os.close(events_r)
            os.close(output_r)
            _child(request, events_w, output_w, scratch, self.out, self.sandboxed)
        os.close(events_w)
        os.close(output_w)
        child = Child(request, pid, events_r, output_r, scratch)
        self.children[pid] = child
        self.selector.register(events_r, selectors.EVENT_READ, (child, "events"))
        self.selector.register(output_r, selectors.EVENT_READ, (child, "output"))

    def _read_child(self, fd: int, data_key: Any) -> None:
        child, stream = data_key
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            data = b""
        if not data:
            self._close(child, fd)
        elif stream == "events":
            child.feed_events(data)
        else:
            child.output.feed(data)

    def _close(self, child: Child, fd: int) -> None:
        self.selector.unregister(fd)
        os.close(fd)
        child.open_fds.discard(fd)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            child = self.children.get(pid)
            if child is not None:
                child.status = status
                child.exited_at = time.monotonic()
                _kill_group(pid)  # whatever it started dies with it

    def _enforce(self) -> None:
        now = time.monotonic()
        for child in self.children.values():
            if child.status is not None:
                continue
            if not child.ended_by and now >= child.deadline:
                child.ended_by = protocol.TIMEOUT
                child.kill_at = now + KILL_GRACE
                _signal(child.pid, signal.SIGUSR1)  # faulthandler dumps where it is stuck
            elif child.kill_at is not None and now >= child.kill_at:
                _kill_group(child.pid)
        if now >= self.next_watch and self.children:
            self.next_watch = now + WATCH_INTERVAL
            sessions = _sessions()
            for child in self.children.values():
                if child.status is None and sessions.get(child.pid, 0) > child.request.settings.max_processes:
                    child.ended_by = "processes"
                    _kill_group(child.pid)

    def _finish(self) -> None:
        now = time.monotonic()
        for pid, child in list(self.children.items()):
            if child.status is None:
                continue
            if child.open_fds and now - (child.exited_at or now) < 1.0:
                continue  # let the pipes drain
            for fd in list(child.open_fds):
                self._drain(child, fd)
            del self.children[pid]
            shutil.rmtree(child.scratch, ignore_errors=True)
            self._kill_orphans()
            self.send(protocol.encode("result", id=child.request.id, result=child.result(self.torch_version)))

    def _drain(self, child: Child, fd: int) -> None:
        os.set_blocking(fd, False)
        try:
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                self._read_child_data(child, fd, data)
        except OSError:
            pass
        self._close(child, fd)

    def _read_child_data(self, child: Child, fd: int, data: bytes) -> None:
        stream = self.selector.get_key(fd).data[1]
        if stream == "events":
            child.feed_events(data)
        else:
            child.output.feed(data)

    def _kill_orphans(self) -> None:
        """As subreaper, processes that escaped a child's group end up ours: none may live on."""
        me = os.getpid()
        for pid, parent, _ in _processes():
            if parent == me and pid not in self.children:
                _signal(pid, signal.SIGKILL)

    def _shutdown(self) -> None:
        for pid in list(self.children):
            _kill_group(pid)
        self._kill_orphans()


def _child(
    request: Request, events_fd: int, output_fd: int, scratch: str, protocol_fd: int, sandboxed: bool
) -> None:
    """The forked child: isolate, limit, analyse, and never return."""

    def emit(event: Dict[str, Any]) -> None:
        data = (json.dumps(event, default=str) + "\n").encode()
        while data:
            data = data[os.write(events_fd, data) :]

    code = 70
    try:
        os.setsid()
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        os.close(protocol_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(null)
        os.close(output_fd)
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        if not sandboxed:
            _unshare_network()
        _limit(request.settings)
        from .analyse import run

        run(request, emit)
        code = 0
    except BaseException as error:  # a bug in gbls, not in the analysed code
        traceback.print_exc()
        try:
            emit(
                {
                    "event": "failure",
                    "kind": "worker",
                    "message": f"gbls's worker failed: {type(error).__name__}: {error}",
                }
            )
            emit({"event": "done"})
        except OSError:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _limit(settings: protocol.Settings) -> None:
    memory = _vm_size() + settings.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(settings.timeout * 2) + 10
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 30, 1 << 30))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    files = 1024 if hard == resource.RLIM_INFINITY else min(hard, 1024)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, files), files))
    if os.getuid() != 0:  # the kernel does not apply RLIMIT_NPROC to root; the parent counts instead
        uid = os.getuid()
        mine = sum(1 for pid, _, owner in _processes() if owner == uid)
        limit = mine + settings.max_processes
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))


def _unshare_network() -> None:
    """Without bwrap, still take the network away where the kernel lets us."""
    for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET):
        if _libc.unshare(flags) == 0:
            return


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _processes() -> List[Any]:
    """(pid, parent pid, uid) of every visible process."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            uid = os.stat(f"/proc/{name}").st_uid
        except OSError:
            continue
        found.append((int(name), int(fields[1]), uid))
    return found


def _sessions() -> Dict[int, int]:
    """Number of live processes per session id."""
    counts: Dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            session = int(fields[3])
            counts[session] = counts.get(session, 0) + 1
    return counts


def _signal(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def warm_up() -> str:
    """Import torch and run Dynamo once so that children start with everything loaded."""
    import torch

    torch.set_num_threads(1)  # fork-safe: no OpenMP pool exists when the parent forks
    import torch._dynamo

    from . import capture  # noqa: F401 - imports the Dynamo modules the hooks patch

    class Warm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            y = self.linear(x).relu()
            torch._dynamo.graph_break()
            return y.sum()

    compiled = torch.compile(Warm(), backend=lambda gm, inputs: gm.forward)
    compiled(torch.randn(2, 4))
    torch._dynamo.reset()
    return torch.__version__.split("+")[0]


def main() -> None:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    sandboxed = os.environ.get("GBLS_SANDBOX") == "bwrap"
    try:
        version = warm_up()
    except Exception as error:
        print(
            protocol.encode("fatal", message=f"torch could not be imported: {type(error).__name__}: {error}"),
            flush=True,
        )
        return
    zygote = Zygote(version, sandboxed)
    zygote.send(
        protocol.encode(
            "ready",
            torch=version,
            python=".".join(str(part) for part in sys.version_info[:3]),
            executable=sys.executable,
            sandbox="bwrap" if sandboxed else "none",
        )
    )
    zygote.serve()
