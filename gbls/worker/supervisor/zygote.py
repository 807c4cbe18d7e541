"""The warm worker: torch and Dynamo imported once, one forked child per analysis.

Speaks the protocol on stdin/stdout (JSON lines). Each ``analyse`` request forks a child from
this warm, never-used-by-user-code parent, so every analysis starts from a clean state without
paying for ``import torch``. The child (``child``) runs in its own session and process group
with rlimits (``limits``), stdin closed, stdout and stderr captured through a pipe (bounded
here), a scratch directory in a /tmp and /dev/shm of its own, and, when no outer sandbox cut it
already, no network.
This parent enforces the wall-clock timeout and a process count, answers cancels, and when a
child ends kills its whole group and, as a subreaper, every process that escaped the group.
Events the child streamed before it died are kept, and every way it can end is put in words
(``endings``).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import io
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from ..fork import interpreters, setup
from ..log import log
from ..shared import processes, protocol
from ..shared.events import LibrariesEvent
from ..shared.protocol import (
    AliveLine,
    AnalyseLine,
    CancelLine,
    FatalLine,
    Line,
    ReadyLine,
    Request,
    Result,
    ResultLine,
)
from ..shared.workspace import installed
from . import endings, exact, record
from .record import Child

# Seconds between asking a child at the end of its budget where it is (and to stop there) and
# SIGKILL: a program at real size is stopped as it returns from a C call that can take a second.
KILL_GRACE = 2.0
WATCH_INTERVAL = 0.25  # seconds between process counts
PIPE_GRACE = 1.0  # seconds to wait for a dead child's pipes to reach end of file
SWEEP_ROUNDS = 200  # kill-and-look rounds, 10 ms apart, until no stray process is left
HEARTBEAT = 1.0  # seconds between "alive" lines while analyses run: the server tells busy from hung
MAX_LIBRARIES = 5000  # library modules warmed from one analysis: transformers alone imports hundreds


class Zygote:
    def __init__(self, torch_version: str, sandboxed: bool, startup: frozenset[str]) -> None:
        self.torch_version = torch_version
        self.sandboxed = sandboxed
        self.scratch = tempfile.mkdtemp(prefix="gbls-worker-")  # each analysis's scratch is made in it
        self.startup = startup
        self.selector = selectors.DefaultSelector()
        self.children: dict[int, Child] = {}
        self.inbox = b""
        self.out = os.dup(1)
        os.dup2(2, 1)  # a stray print from an import must never corrupt the protocol
        self.next_watch = 0.0
        self.strays_left = False  # a sweep gave up on escaped processes: look again, children or not
        self.next_beat = 0.0
        # Installed libraries analyses imported: imported here once no analysis runs, so that the
        # next analysis of the project forks with them loaded (``warm_libraries``).
        self.wanted: set[str] = set()
        self.tried: set[str] = set()
        # Analyses running again with exact values (``exact``): by request id, the request as it came
        # and what its first run, with values elided, answered.
        self.again: dict[str, tuple[Request, Result]] = {}

    def send(self, line: str) -> None:
        data = (line + "\n").encode()
        while data:
            data = data[os.write(self.out, data) :]

    def serve(self) -> None:
        self.selector.register(0, selectors.EVENT_READ, None)
        while True:
            busy = bool(self.children) or self.strays_left
            digesting = any(child.pending for child in self.children.values())
            for key, _ in self.selector.select(0 if digesting else 0.05 if busy else None):
                if key.data is None:
                    if not self._read_requests():
                        self._shutdown()
                        return
                else:
                    self._read_child(key.fd, key.data)
            for child in self.children.values():
                child.digest(record.DIGEST_LINES)
            self._reap()
            self._enforce()
            self._finish()
            if self.children and time.monotonic() >= self.next_beat:
                self.next_beat = time.monotonic() + HEARTBEAT
                self.send(protocol.encode(AliveLine()))
            if not self.children and self.wanted - self.tried:
                self._warm_libraries()

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

    def _handle(self, message: Line) -> None:
        if isinstance(message, AnalyseLine):
            self._start(message.request)
        elif isinstance(message, CancelLine):
            for child in self.children.values():
                if child.request.id == message.id:
                    child.stop(protocol.CANCELLED)

    def _start(self, request: Request) -> None:
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        scratch = tempfile.mkdtemp(prefix="gbls-", dir=self.scratch)
        key = os.urandom(16)  # signs this analysis's events: see ``events.sign``
        pid = os.fork()
        if pid == 0:
            os.close(events_r)
            os.close(output_r)
            # The other analyses' requests (their ids, paths, sources) are none of this one's business.
            self.children = {}
            self.inbox = b""
            setup.run(request, events_w, key, output_w, scratch, self.out, self.sandboxed, self.startup)
        os.close(events_w)
        os.close(output_w)
        log(f"analyse {request.path} (request {request.id}): child {pid}")
        child = Child(request, pid, events_r, key, output_r, scratch)
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

    def _wait(self) -> list[Child]:
        """Reap every dead child of ours (escaped processes too); the analyses among them."""
        ended: list[Child] = []
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
            processes.kill_group(child.pid)  # whatever it started in its group dies with it
        if ended:
            self._sweep()

    def _sweep(self) -> None:
        """Kill what escaped the groups (new sessions, orphans), and wait until it is gone."""
        for _ in range(SWEEP_ROUNDS):
            self.strays_left = self._kill_strays(processes.children_by_parent())
            if not self.strays_left:
                return
            time.sleep(0.01)
            for child in self._wait():
                processes.kill_group(child.pid)

    def _kill_strays(self, children_of: dict[int, list[int]]) -> bool:
        """As subreaper, orphans of every analysis become our children: none may live on."""
        strays = [pid for pid in children_of.get(os.getpid(), []) if pid not in self.children]
        victims = [victim for pid in strays for victim in processes.subtree(children_of, pid)]
        for pid in victims:
            processes.send(pid, signal.SIGKILL)
        return bool(victims)

    def _enforce(self) -> None:
        now = time.monotonic()
        for child in self.children.values():
            if child.status is not None:
                continue
            if not child.ended_by and now >= child.deadline:
                child.ended_by = endings.BUDGET
                child.kill_at = now + KILL_GRACE
                processes.send(child.pid, signal.SIGUSR1)  # the child reports where it is stuck
            elif child.kill_at is not None and now >= child.kill_at:
                processes.kill_group(child.pid)
        if now >= self.next_watch and (self.children or self.strays_left):
            self.next_watch = now + WATCH_INTERVAL
            children_of = processes.children_by_parent()
            for child in self.children.values():
                # Counted by descent, not by group or session: a new session escapes neither.
                if child.status is None and len(processes.subtree(children_of, child.pid)) > (
                    child.request.settings.max_processes
                ):
                    child.stop(endings.PROCESSES)
            self.strays_left = self._kill_strays(children_of)

    def _finish(self) -> None:
        now = time.monotonic()
        for pid, child in list(self.children.items()):
            if child.status is None:
                continue
            if child.streams and now - (child.exited_at or now) < PIPE_GRACE:
                continue  # let the pipes drain
            for fd in list(child.streams):
                self._drain(child, fd)
            if child.pending:
                continue  # decoded a slice at a time, so that the other children are still served
            del self.children[pid]
            shutil.rmtree(child.scratch, ignore_errors=True)
            shutil.rmtree(interpreters.events_folder(child.scratch), ignore_errors=True)
            result = child.result(self.torch_version)
            for event in child.events:
                if isinstance(event, LibrariesEvent):
                    self.wanted.update(event.names[:MAX_LIBRARIES])
            log(
                f"child {pid} ended (wait status {child.status}, stopped for {child.ended_by or 'nothing'}): "
                f"{result.status}, {len(result.breaks)} breaks, {len(result.functions)} functions, "
                f"{len(child.events)} events ({child.unreadable} unreadable)"
            )
            request = child.request
            if request.id in self.again:
                request, first = self.again.pop(request.id)
                result = exact.told(request, first, result)
            else:
                second = exact.again(request, result, now - child.started)
                if second is not None:
                    log(f"the program failed with values elided: {request.path} again, values exact")
                    self.again[request.id] = (request, result)
                    self._start(second)
                    continue
            self.send(protocol.encode(ResultLine(id=request.id, result=result)))

    def _warm_libraries(self) -> None:
        """Import the installed libraries analyses asked for, each once, before the next fork.

        The analysed code can forge the request: only a module the warm worker's own path finds in
        site-packages is imported (never the workspace, which is not on that path, nor the standard
        library), and one that fails to import is not tried again.
        """
        for name in sorted(self.wanted - self.tried):
            self.tried.add(name)
            if name in sys.modules:
                continue
            spec = None
            if all(part.isidentifier() for part in name.split(".")):
                with contextlib.suppress(BaseException):
                    spec = importlib.util.find_spec(name)
            origin = (spec.origin or "") if spec is not None else ""
            if not installed(origin):
                continue
            self.send(protocol.encode(AliveLine()))
            started = time.monotonic()
            try:
                importlib.import_module(name)
            except BaseException as error:  # the library's own failure: the next analysis imports it
                log(f"warming {name} failed: {type(error).__name__}: {error}")
                continue
            if time.monotonic() - started > 0.5:
                log(f"warmed {name} in {time.monotonic() - started:.1f} s")
        forget_warnings()
        gc.collect()
        gc.freeze()

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
            processes.kill_group(pid)
        self.children.clear()
        self._sweep()
        shutil.rmtree(self.scratch, ignore_errors=True)


def warm_up() -> str:
    """Import torch and run Dynamo over the common breaks once, so that children start with it all loaded."""
    import torch

    torch.set_num_threads(1)  # fork-safe: no OpenMP pool exists when the parent forks
    import torch._dynamo
    import torch._dynamo.guards as guards

    from ..analysis import run  # noqa: F401 - and with it the Dynamo modules the hooks patch

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
    forget_warnings()
    # Children share the warm heap copy-on-write: no collection should walk (and so copy) it.
    gc.collect()
    gc.freeze()
    return torch.__version__.split("+")[0]


def forget_warnings() -> None:
    """A warning the warm-up or a warmed library gave once (Python 3.13.0: "Guards may run slower") is
    the analysed program's to see, as under plain python: forget that it was given."""
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if type(namespace) is dict:  # not a class some library put in sys.modules (a mappingproxy)
            namespace.pop("__warningregistry__", None)


def main(startup: frozenset[str]) -> None:
    processes.prctl(processes.PR_SET_PDEATHSIG, signal.SIGKILL)
    processes.prctl(processes.PR_SET_CHILD_SUBREAPER, 1)
    # Not dumpable: /proc/<pid>/fd of this process (its end of the server's pipe) and of every
    # analysis forked from it cannot be opened by the analysed code, which runs as the same user
    # but without CAP_SYS_PTRACE under bwrap. Another analysis could otherwise write into this one's events.
    processes.prctl(processes.PR_SET_DUMPABLE, 0)
    sandboxed = os.environ.get("GBLS_SANDBOX") == "bwrap"
    try:
        version = warm_up()
    except Exception as error:
        fatal = FatalLine(message=f"torch could not be imported: {type(error).__name__}: {error}")
        print(protocol.encode(fatal), flush=True)
        return
    zygote = Zygote(version, sandboxed, startup)
    zygote.send(
        protocol.encode(
            ReadyLine(
                torch=version,
                python=".".join(str(part) for part in sys.version_info[:3]),
                executable=sys.executable,
                sandbox="bwrap" if sandboxed else "none",
                scratch=zygote.scratch,
            )
        )
    )
    zygote.serve()
