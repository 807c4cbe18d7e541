"""The server's side of the worker: start it warm, send requests, cancel them, survive its death.

Every call is a coroutine; nothing here blocks the event loop. If the worker process itself
dies (the analyses run in its children, so this is rare), every pending request gets an error
result naming what happened and the next request starts a fresh worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..worker import protocol
from ..worker.protocol import Failure, ProtocolError, Request, Result
from .errors import WorkerError
from .sandbox import Launch

log = logging.getLogger(__name__)

START_TIMEOUT = 180.0  # import torch on a cold disk can take a while
LINE_LIMIT = 256 * 1024 * 1024
MARKER = "GBLS_WORKER"  # in the environment of the worker and of everything the analyses start
SWEEP_ROUNDS = 50  # kill-and-look rounds, 20 ms apart
TAMPERED = "the analysed code tampered with gbls's results: the worker's answer is not a well-formed result"


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
        self._pending: dict[str, tuple[asyncio.Future[Result], str]] = {}
        self._ready: asyncio.Future[WorkerInfo] | None = None
        self._reader: asyncio.Task[None] | None = None
        self._stderr_reader: asyncio.Task[None] | None = None
        self._stderr: deque[str] = deque(maxlen=40)
        self._marker = ""
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.info: WorkerInfo | None = None
        self.note = ""

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
        await self.start()
        process, reader = self._process, self._reader
        if process is None or reader is None or reader.done():  # it died or was stopped since
            return self._worker_failure(request.path, process.returncode if process else None)
        assert process.stdin is not None
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = (future, request.path)
        try:
            process.stdin.write((protocol.encode("analyse", request=request) + "\n").encode())
            await process.stdin.drain()
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await self.cancel(request.id)
            raise
        except (BrokenPipeError, ConnectionResetError):
            return await asyncio.shield(future)  # the reader answers it when it sees the worker end
        finally:
            self._pending.pop(request.id, None)

    async def cancel(self, request_id: str) -> None:
        process = self._process
        if process is None or process.returncode is not None or process.stdin is None:
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            process.stdin.write((protocol.encode("cancel", id=request_id) + "\n").encode())
            await process.stdin.drain()

    def new_id(self) -> str:
        return str(next(self._ids))

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader

    async def _read(
        self, process: asyncio.subprocess.Process, ready: asyncio.Future[WorkerInfo], marker: str
    ) -> None:
        assert process.stdout is not None
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
            kind = message["type"]
            if kind == "ready":
                info = WorkerInfo(
                    message["torch"], message["python"], message["executable"], message["sandbox"]
                )
                if not ready.done():
                    ready.set_result(info)
            elif kind == "fatal" and not ready.done():
                ready.set_exception(WorkerError(message["message"]))
            elif kind == "result" and message.get("id") in self._pending:
                future, path = self._pending[message["id"]]
                if not future.done():
                    future.set_result(self._result(message.get("result"), path))
        await process.wait()
        await _sweep(marker)
        log.info("gbls worker ended (%s): %s", _ending(process.returncode), " | ".join(self._stderr))
        if not ready.done():
            tail = "\n".join(self._stderr).strip()
            ready.set_exception(
                WorkerError(f"the worker exited while starting: {tail or process.returncode}")
            )
        for future, path in list(self._pending.values()):
            if not future.done():
                future.set_result(self._worker_failure(path, process.returncode))
        if self._process is process:
            self._process = None

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            text = line.decode("utf-8", "replace").rstrip()
            self._stderr.append(text)
            log.debug("worker: %s", text)

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

    def _worker_failure(self, path: str, returncode: int | None) -> Result:
        message = f"the gbls worker process {_ending(returncode)}; a fresh one starts with the next analysis"
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
