"""The server's side of the worker: start it warm, send requests, cancel them, survive its death.

Every call is a coroutine; nothing here blocks the event loop. Every request has a deadline of
its own (the analysis's timeout plus a margin): a worker that gives no answer by then, and has
gone quiet (stopped; a working one says it is alive every second), is killed. If the worker
process dies (the analyses run in its children, so this is rare), a request that was the only
one running gets an error result naming what happened; requests that were running beside others
cannot tell which one killed it, so each runs again, alone, on a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import shutil
import signal
import sys
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..settings import worker_log_by_environment
from ..worker.shared import protocol
from ..worker.shared.protocol import (
    AnalyseLine,
    CancelLine,
    Failure,
    FatalLine,
    ProtocolError,
    ReadyLine,
    Request,
    Result,
    ResultLine,
)
from .errors import WorkerError
from .sandbox import Launch

log = logging.getLogger(__name__)

START_TIMEOUT = 180.0  # import torch on a cold disk can take a while
# Seconds past an analysis's own timeout before the worker counts as hung: the worker kills a
# timed-out child within about 2 s, and then merges and sends what it saw.
DEADLINE_MARGIN = 8.0
# Past the deadline, a worker heard from within this many seconds is still at work (a loaded
# machine, a big result): it gets this long again, up to ALIVE_LIMIT seconds in all past the
# deadline. A stopped worker has been silent far longer by the deadline: it is killed right then.
QUIET = 10.0
ALIVE_LIMIT = 120.0
WORKER_LOG = worker_log_by_environment()
LINE_LIMIT = 96 * 1024 * 1024  # a result is bounded well below (events, breaks and output are)
MARKER = "GBLS_WORKER"  # in the environment of the worker and of everything the analyses start
SWEEP_ROUNDS = 250  # kill-and-look rounds, 20 ms apart: an orphaned fork bomb takes a while
TAMPERED = "the analysed code tampered with gbls's results: the worker's answer is not a well-formed result"


@dataclass
class _Pending:
    future: asyncio.Future[Result]
    path: str
    crowded: bool = False  # the worker died while others ran too: which one killed it is unknown


@dataclass(frozen=True)
class WorkerInfo:
    torch: str
    python: str
    executable: str
    sandbox: str


class Worker:
    def __init__(self, launch: Callable[[], Launch]) -> None:
        self._launch = launch
        self._process: asyncio.subprocess.Process | None = None
        self._pending: dict[str, _Pending] = {}
        self._ready: asyncio.Future[WorkerInfo] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None
        self._stderr: deque[str] = deque(maxlen=40)
        self._marker = ""
        self._hung: dict[int, str] = {}  # why gbls killed a worker itself, by its pid
        self._heard = 0.0  # when the worker last said anything (event loop time)
        self._lock = asyncio.Lock()
        # A request run again after a crowded death runs alone: no other request starts meanwhile.
        self._alone = asyncio.Lock()
        self._running = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.info: WorkerInfo | None = None
        self.note = ""
        # Replaced (a restart, settings that name another interpreter): what it says no longer matters.
        self.retired = False

    async def start(self) -> WorkerInfo:
        async with self._lock:
            if self._process is not None and self._process.returncode is None and self._ready is not None:
                return await self._ready
            launch = self._launch()
            self.note = launch.note
            self._marker = uuid.uuid4().hex
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *launch.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    env={**launch.environment, MARKER: self._marker},
                    start_new_session=True,
                    limit=LINE_LIMIT,
                )
            except OSError as error:
                raise WorkerError(f"cannot start the worker ({launch.command[0]}): {error}") from error
            self._ready = asyncio.get_running_loop().create_future()
            self._reader = asyncio.create_task(self._read(self._process, self._ready, self._marker))
            self._stderr_reader = asyncio.create_task(self._read_stderr(self._process))
            try:
                self.info = await asyncio.wait_for(asyncio.shield(self._ready), START_TIMEOUT)
            except asyncio.TimeoutError as error:
                await self.stop()
                raise WorkerError("the worker did not start in time (import torch took too long)") from error
            return self.info

    async def analyse(self, request: Request) -> Result:
        while self._alone.locked():  # a suspect is being run again on its own
            async with self._alone:
                pass
        result, crowded = await self._counted(request)
        if not crowded:
            return result
        async with self._alone:
            await self._idle.wait()
            result, _ = await self._counted(dataclasses.replace(request, id=self.new_id()))
        return result

    async def _counted(self, request: Request) -> tuple[Result, bool]:
        self._running += 1
        self._idle.clear()
        try:
            return await self._once(request)
        finally:
            self._running -= 1
            if not self._running:
                self._idle.set()

    async def _once(self, request: Request) -> tuple[Result, bool]:
        """The result, and whether the worker died with other requests running (then it is no verdict)."""
        await self.start()
        process, reader = self._process, self._reader
        if process is None or reader is None or reader.done():  # it died or was stopped since
            return self._worker_failure(request.path, process.returncode if process else None), False
        assert process.stdin is not None
        pending = _Pending(asyncio.get_running_loop().create_future(), request.path)
        self._pending[request.id] = pending
        deadline = request.settings.timeout + DEADLINE_MARGIN
        try:
            process.stdin.write((protocol.encode(AnalyseLine(request=request)) + "\n").encode())
            await process.stdin.drain()
            return await self._answer(process, pending, deadline), pending.crowded
        except asyncio.CancelledError:
            await self.cancel(request.id)
            raise
        except (BrokenPipeError, ConnectionResetError):
            # The reader answers it when it sees the worker end.
            return await asyncio.shield(pending.future), pending.crowded
        finally:
            self._pending.pop(request.id, None)

    async def _answer(
        self, process: asyncio.subprocess.Process, pending: _Pending, deadline: float
    ) -> Result:
        """The result by the deadline, or later from a worker still at work; else kill the worker."""
        loop = asyncio.get_running_loop()
        limit = loop.time() + deadline
        last = limit + ALIVE_LIMIT
        while True:
            try:
                return await asyncio.wait_for(asyncio.shield(pending.future), max(limit - loop.time(), 0))
            except asyncio.TimeoutError:
                now = loop.time()
                if now - self._heard >= QUIET or now >= last:
                    break
                limit = now + QUIET
        if not pending.future.done() and self._process is process:
            self._hung[process.pid] = (
                f"stopped answering (no result {deadline:g} s after the analysis began, and silent: was it "
                "stopped, e.g. with SIGSTOP, or its pipe garbled?) and was killed"
            )
            await self.stop()
        return await asyncio.shield(pending.future)

    async def cancel(self, request_id: str) -> None:
        process = self._process
        if process is None or process.returncode is not None or process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write((protocol.encode(CancelLine(id=request_id)) + "\n").encode())
            await process.stdin.drain()

    def new_id(self) -> str:
        """Unguessable, so that the analysed code cannot address a result to another request."""
        return uuid.uuid4().hex

    async def stop(self) -> None:
        process, self._process = self._process, None
        reader = self._reader
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        if reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await reader

    async def _read(
        self, process: asyncio.subprocess.Process, ready: asyncio.Future[WorkerInfo], marker: str
    ) -> None:
        assert process.stdout is not None
        scratch = ""  # the worker's scratch folder outside any sandbox: removed once it is gone
        while True:
            try:
                line = await process.stdout.readline()
            except (ValueError, asyncio.LimitOverrunError):
                continue
            if not line:
                break
            try:
                message = protocol.decode(line.decode("utf-8", "replace"))
            except ProtocolError as error:
                log.warning("gbls worker sent an unreadable line: %s", error)
                continue
            if self._process is process:
                self._heard = asyncio.get_running_loop().time()
            if isinstance(message, ReadyLine) and not ready.done():
                info = WorkerInfo(message.torch, message.python, message.executable, message.sandbox)
                scratch = message.scratch if message.sandbox == "none" else ""
                ready.set_result(info)
            elif isinstance(message, FatalLine) and not ready.done():
                ready.set_exception(WorkerError(message.message))
            elif isinstance(message, ResultLine) and message.id in self._pending:
                pending = self._pending[message.id]
                if not pending.future.done():
                    pending.future.set_result(self._result(message.result, pending.path))
        await process.wait()
        await _sweep(marker)
        if scratch:
            await asyncio.to_thread(shutil.rmtree, scratch, True)
        log.info("gbls worker ended (%s): %s", _ending(process.returncode), " | ".join(self._stderr))
        if not ready.done():
            tail = "\n".join(self._stderr).strip()
            ready.set_exception(
                WorkerError(f"the worker exited while starting: {tail or process.returncode}")
            )
        unanswered = [pending for pending in self._pending.values() if not pending.future.done()]
        hung = self._hung.pop(process.pid, "")
        for pending in unanswered:
            pending.crowded = len(unanswered) > 1
            pending.future.set_result(self._worker_failure(pending.path, process.returncode, hung))
        if self._process is process:
            self._process = None

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr.append(text)
            log.debug("worker: %s", text)
            if WORKER_LOG:  # asked for: the worker's decisions, beside the server's own stderr
                print(text, file=sys.stderr, flush=True)

    def _result(self, data: object, path: str) -> Result:
        """The result as sent, if it is a well-formed one for ``path``."""
        try:
            result = protocol.from_dict(Result, data)
        except ProtocolError as error:
            log.warning("gbls worker sent a malformed result: %s", error)
            return Result(path=path, status=protocol.ERROR, failure=Failure("tampered", TAMPERED))
        if result.path != path:
            return Result(path=path, status=protocol.ERROR, failure=Failure("tampered", TAMPERED))
        return result

    def _worker_failure(self, path: str, returncode: int | None, hung: str = "") -> Result:
        ending = hung or _ending(returncode)
        message = f"the gbls worker process {ending}; a fresh one starts with the next analysis"
        return Result(path=path, status=protocol.ERROR, failure=Failure("worker", message))


def _ending(returncode: int | None) -> str:
    """How the worker ended, from its exit status (bwrap reports a signal as 128 + its number)."""
    if returncode is None:
        return "stopped answering"
    number = -returncode if returncode < 0 else returncode - 128
    if number in signal.valid_signals():
        name = signal.Signals(number).name
        why = {"SIGKILL": ", e.g. by the out-of-memory killer", "SIGSEGV": ": a segmentation fault"}
        return f"was killed by {name}{why.get(name, '')}"
    return f"exited with code {returncode}"


async def _sweep(marker: str) -> None:
    """Kill what outlived the worker: without bwrap's PID namespace, escaped processes can."""
    needle = f"{MARKER}={marker}".encode()
    for _ in range(SWEEP_ROUNDS):
        found = [pid for pid in _pids() if needle in _environment(pid)]
        if not found:
            return
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.02)


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _environment(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return environ.read().split(b"\0")
    except OSError:
        return []
