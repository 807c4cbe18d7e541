"""The warm worker: torch and Dynamo imported once, one forked child per analysis.

Speaks the protocol on stdin/stdout (JSON lines). Each ``analyse`` request forks a child from
this warm, never-used-by-user-code parent, so every analysis starts from a clean state without
paying for ``import torch``. The child runs in its own session and process group with rlimits
(address space, CPU, open files, file size, processes, no core dumps), stdin closed, stdout and
stderr captured through a pipe (bounded here), a scratch directory of its own, and, when no
outer sandbox cut it already, no network. The parent enforces the wall-clock timeout and a
process count, answers cancels, and when a child ends kills its whole group and, as a
subreaper, every process that escaped the group. Events the child streamed before it died are
kept, and every way it can end is put in words.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import io
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
from typing import Any, Dict, List, Optional, Set

from . import protocol
from .protocol import Failure, Request, Result

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
KILL_GRACE = 0.5  # seconds between asking a timed-out child where it is and SIGKILL
WATCH_INTERVAL = 0.25  # seconds between process counts
PIPE_GRACE = 1.0  # seconds to wait for a dead child's pipes to reach end of file
SWEEP_ROUNDS = 200  # kill-and-look rounds, 10 ms apart, until no stray process is left
TAIL_BYTES = 16 * 1024
EVENTS_LIMIT = 64 * 1024 * 1024
FILE_SIZE_LIMIT = 1 << 30
# Ended by the parent, besides protocol.TIMEOUT and protocol.CANCELLED.
PROCESSES = "processes"
FLOOD = "flood"

CRASHES = {
    "SIGSEGV": "crashed with a segmentation fault (SIGSEGV)",
    "SIGBUS": "crashed with a bus error (SIGBUS)",
    "SIGFPE": "crashed with a floating-point exception (SIGFPE)",
    "SIGILL": "crashed with an illegal instruction (SIGILL)",
    "SIGABRT": "aborted (SIGABRT), e.g. by a failed check in C++ code",
    "SIGKILL": "was killed (SIGKILL), most likely because the machine ran out of memory",
}

# The real one: the analysis wraps os._exit to learn which line called it.
_exit = os._exit
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
        self.streams = {events_fd: "events", output_fd: "output"}
        self.partial = b""
        self.event_bytes = 0
        self.events: List[Dict[str, Any]] = []
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
            self.stop(FLOOD)
            return
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        for line in lines:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                continue

    def stop(self, reason: str) -> None:
        if not self.ended_by and self.status is None:
            self.ended_by = reason
            _kill_group(self.pid)

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

    def _last(self, kind: str) -> Optional[Dict[str, Any]]:
        found = [event for event in self.events if event["event"] == kind]
        return found[-1] if found else None

    def _failure(self) -> Optional[Failure]:
        settings = self.request.settings
        if self.ended_by == protocol.TIMEOUT:
            return self._timeout()
        if self.ended_by == protocol.CANCELLED:
            return Failure("cancelled", "analysis cancelled: a newer request replaced it")
        if self.ended_by == PROCESSES:
            fork = self._last("fork")
            line = fork["line"] if fork else None
            where = f" (the first fork is at line {line})" if line else ""
            message = f"started more than {settings.max_processes} processes (a fork bomb?) and was stopped"
            return Failure("processes", message + where, line)
        if self.ended_by == FLOOD:
            limit = EVENTS_LIMIT >> 20
            return Failure("flood", f"produced more than {limit} MB of graph-break events and was stopped")
        status = self.status or 0
        line = _line_running(self.output.text(), self.request.path)
        where = f" while running line {line}" if line else ""
        if os.WIFSIGNALED(status):
            name = signal.Signals(os.WTERMSIG(status)).name
            if name == "SIGXCPU":
                cpu = _cpu_seconds(settings)
                return Failure("timeout", f"used more than {cpu} s of CPU time and was stopped{where}", line)
            message = CRASHES.get(name, f"was killed by {name}")
            return Failure("memory" if name == "SIGKILL" else "crashed", message + where, line)
        if not any(event["event"] == "done" for event in self.events):
            exit_call = self._last("exit")
            if exit_call is not None:
                message = f"the module called os._exit({exit_call['code']}); the analysis stopped there"
                return Failure("exit", message, exit_call["line"])
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
            return Failure("exit", f"the analysis process exited with code {code} before it finished", line)
        first = next((event for event in self.events if event["event"] == "failure"), None)
        if first is not None:
            return Failure(first["kind"], first["message"], first.get("line"), first.get("column"))
        return None

    def _timeout(self) -> Failure:
        seconds = f"timed out after {self.request.settings.timeout:g} s"
        stuck = self._last("stuck")
        if stuck is not None and stuck["line"] and stuck["tracing"]:
            message = f"{seconds} while Dynamo was tracing line {stuck['line']} (in {stuck['tracing']})"
            return Failure("timeout", message, stuck["line"])
        # The child's own report, else the stack faulthandler printed (the child was stuck in C).
        line = stuck["line"] if stuck is not None else None
        line = line or _line_running(self.output.text(), self.request.path)
        return Failure("timeout", f"{seconds} while running line {line}" if line else seconds, line)


def _line_running(output: str, path: str) -> Optional[int]:
    """The analysed file's innermost line in the last stack faulthandler printed."""
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
                if child.request.id == message["id"]:
                    child.stop(protocol.CANCELLED)

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
        self.selector.register(events_r, selectors.EVENT_READ, child)
        self.selector.register(output_r, selectors.EVENT_READ, child)

    def _read_child(self, fd: int, child: Child) -> None:
        try:
            data = os.read(fd, 1 << 16)
        except OSError:
            data = b""
        if data:
            child.feed(fd, data)
        else:
            self._close(child, fd)

    def _close(self, child: Child, fd: int) -> None:
        self.selector.unregister(fd)
        os.close(fd)
        del child.streams[fd]

    def _wait(self) -> List[Child]:
        """Reap every dead child of ours (escaped processes too); the analyses among them."""
        ended: List[Child] = []
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return ended
            if pid == 0:
                return ended
            child = self.children.get(pid)
            if child is not None:
                child.status = status
                child.exited_at = time.monotonic()
                ended.append(child)

    def _reap(self) -> None:
        ended = self._wait()
        for child in ended:
            _kill_group(child.pid)  # whatever it started in its group dies with it
        if ended:
            self._sweep()

    def _sweep(self) -> None:
        """Kill what escaped the groups (new sessions, orphans), and wait until it is gone."""
        for _ in range(SWEEP_ROUNDS):
            if not self._kill_strays(_children_by_parent()):
                return
            time.sleep(0.01)
            for child in self._wait():
                _kill_group(child.pid)

    def _kill_strays(self, children_of: Dict[int, List[int]]) -> bool:
        """As subreaper, orphans of every analysis become our children: none may live on."""
        strays = [pid for pid in children_of.get(os.getpid(), []) if pid not in self.children]
        victims = [victim for pid in strays for victim in _subtree(children_of, pid)]
        for pid in victims:
            _signal(pid, signal.SIGKILL)
        return bool(victims)

    def _enforce(self) -> None:
        now = time.monotonic()
        for child in self.children.values():
            if child.status is not None:
                continue
            if not child.ended_by and now >= child.deadline:
                child.ended_by = protocol.TIMEOUT
                child.kill_at = now + KILL_GRACE
                _signal(child.pid, signal.SIGUSR1)  # the child reports where it is stuck
            elif child.kill_at is not None and now >= child.kill_at:
                _kill_group(child.pid)
        if now >= self.next_watch and self.children:
            self.next_watch = now + WATCH_INTERVAL
            children_of = _children_by_parent()
            for child in self.children.values():
                # Counted by descent, not by group or session: a new session escapes neither.
                if child.status is None and len(_subtree(children_of, child.pid)) > (
                    child.request.settings.max_processes
                ):
                    child.stop(PROCESSES)
            self._kill_strays(children_of)

    def _finish(self) -> None:
        now = time.monotonic()
        for pid, child in list(self.children.items()):
            if child.status is None:
                continue
            if child.streams and now - (child.exited_at or now) < PIPE_GRACE:
                continue  # let the pipes drain
            for fd in list(child.streams):
                self._drain(child, fd)
            del self.children[pid]
            shutil.rmtree(child.scratch, ignore_errors=True)
            self.send(protocol.encode("result", id=child.request.id, result=child.result(self.torch_version)))

    def _drain(self, child: Child, fd: int) -> None:
        os.set_blocking(fd, False)
        try:
            while True:
                data = os.read(fd, 1 << 16)
                if not data:
                    break
                child.feed(fd, data)
        except OSError:
            pass
        self._close(child, fd)

    def _shutdown(self) -> None:
        for pid in list(self.children):
            _kill_group(pid)
        self.children.clear()
        self._sweep()


def _child(
    request: Request, events_fd: int, output_fd: int, scratch: str, protocol_fd: int, sandboxed: bool
) -> None:
    """The forked child: isolate, limit, analyse, and never return."""
    me = os.getpid()

    def emit(event: Dict[str, Any]) -> None:
        if os.getpid() != me:  # a process the analysed code forked has no say in the result
            return
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
        os.chdir(scratch)
        os.environ["TMPDIR"] = scratch
        tempfile.tempdir = scratch
        offline = sandboxed or _unshare_network()
        _limit(request.settings)
        from .analyse import run

        run(request, emit, offline)
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
            _exit(code)


def _cpu_seconds(settings: protocol.Settings) -> int:
    return int(settings.timeout * 2) + 10


def _limit(settings: protocol.Settings) -> None:
    # Relative to what the warm parent already maps: the limit is what the analysis may add.
    _lower(resource.RLIMIT_AS, _vm_size() + settings.memory_mb * 1024 * 1024)
    cpu = _cpu_seconds(settings)
    _lower(resource.RLIMIT_CPU, cpu, cpu + 5)  # SIGXCPU at the soft limit, SIGKILL at the hard one
    _lower(resource.RLIMIT_CORE, 0)
    _lower(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT)
    _lower(resource.RLIMIT_NOFILE, 1024)
    if os.getuid() != 0:  # the kernel does not apply RLIMIT_NPROC to root; the parent counts instead
        uid = os.getuid()
        mine = sum(1 for name in os.listdir("/proc") if name.isdigit() and _owner(name) == uid)
        _lower(resource.RLIMIT_NPROC, mine + settings.max_processes)


def _lower(kind: int, soft: int, hard: Optional[int] = None) -> None:
    """Set a limit, never above the one already in force (raising it would be refused)."""
    current_soft, current_hard = resource.getrlimit(kind)

    def capped(value: int, cap: int) -> int:
        return value if cap == resource.RLIM_INFINITY else min(value, cap)

    new_hard = capped(soft if hard is None else hard, current_hard)
    resource.setrlimit(kind, (capped(capped(soft, current_soft), new_hard), new_hard))


def _owner(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def _unshare_network() -> bool:
    """Without bwrap, still take the network away where the kernel lets us."""
    return any(_libc.unshare(flags) == 0 for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET))


def _vm_size() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _children_by_parent() -> Dict[int, List[int]]:
    """The live (not zombie) processes we can see, by parent pid."""
    children: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _subtree(children_of: Dict[int, List[int]], root: int) -> List[int]:
    """``root`` and all its live descendants."""
    found: List[int] = []
    seen: Set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        found.append(pid)
        todo.extend(children_of.get(pid, []))
    return found


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
    """Import torch and run Dynamo over the common breaks once, so that children start with it all loaded."""
    import torch

    torch.set_num_threads(1)  # fork-safe: no OpenMP pool exists when the parent forks
    import torch._dynamo
    import torch._dynamo.guards as guards

    from . import analyse  # noqa: F401 - and with it the Dynamo modules the hooks patch

    # Dynamo times each new guard set once, after flushing the CPU cache, only to log a metric:
    # half of a translation's time here, and nothing gbls reports depends on it.
    if hasattr(guards, "profile_guard_manager"):
        guards.profile_guard_manager = lambda *args, **kwargs: 0.0

    def helper(x: Any) -> Any:
        print("warm", x.shape)
        return x + 1

    class Warm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x: Any) -> Any:
            y = helper(self.linear(x).relu())
            if y.sum() > 0:
                y = y * 2
            scale = y.abs().max().item()
            torch._dynamo.graph_break()
            return torch.nonzero(y > scale / 2).float().sum()

    sys.stdout = io.StringIO()  # the warm-up's prints go nowhere
    try:
        torch.compile(Warm(), backend=lambda gm, inputs: gm.forward)(torch.randn(2, 4))
    finally:
        sys.stdout = sys.__stdout__
    torch._dynamo.reset()
    # Children share the warm heap copy-on-write: no collection should walk (and so copy) it.
    gc.collect()
    gc.freeze()
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
