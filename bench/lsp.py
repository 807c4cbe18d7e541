"""A minimal LSP client over stdio for timing: every message is stamped the moment it has arrived.

A reader thread parses ``Content-Length`` frames, takes ``time.perf_counter()`` as soon as a
message's body is read (before JSON decoding), answers the server's own requests at once
(``workspace/configuration`` with our settings, everything else with ``null``), and appends
``(arrival, message)`` to a list that the measuring thread waits on.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

Message = dict[str, Any]


class LspClient:
    def __init__(self, command: list[str], cwd: Path, settings: dict[str, Any], stderr: BinaryIO) -> None:
        self.settings = settings
        self.process = subprocess.Popen(
            command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
        )
        self.messages: list[tuple[float, Message]] = []
        self._condition = threading.Condition()
        self._write_lock = threading.Lock()
        self._ids = itertools.count(1)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- wire ---------------------------------------------------------------------------------

    def _send(self, message: Message) -> float:
        body = json.dumps(message).encode()
        frame = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
        assert self.process.stdin is not None
        with self._write_lock:
            sent = time.perf_counter()
            self.process.stdin.write(frame)
            self.process.stdin.flush()
        return sent

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    with self._condition:
                        self._condition.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            body = stream.read(length)
            arrived = time.perf_counter()
            message = json.loads(body)
            if "method" in message and "id" in message:
                self._answer(message)
            with self._condition:
                self.messages.append((arrived, message))
                self._condition.notify_all()

    def _answer(self, request: Message) -> None:
        result: Any = None
        if request["method"] == "workspace/configuration":
            result = [self.settings for _ in request["params"]["items"]]
        self._send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    # -- API ----------------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> float:
        """Send a notification; the time it was written."""
        return self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> tuple[int, float]:
        number = next(self._ids)
        return number, self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})

    def mark(self) -> int:
        """A position in the message list: wait for messages after it."""
        with self._condition:
            return len(self.messages)

    def wait(
        self, accept: Callable[[Message], bool], after: int, timeout: float = 120.0
    ) -> tuple[float, Message]:
        """The first message after position ``after`` that ``accept`` takes, and when it arrived."""
        deadline = time.monotonic() + timeout
        index = after
        with self._condition:
            while True:
                while index < len(self.messages):
                    arrived, message = self.messages[index]
                    index += 1
                    if accept(message):
                        return arrived, message
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None:
                    raise TimeoutError("the language server did not answer in time (or exited)")
                self._condition.wait(left)

    def seen(self, accept: Callable[[Message], bool], after: int) -> bool:
        """Whether a message ``accept`` takes has arrived after position ``after`` (does not wait)."""
        with self._condition:
            return any(accept(message) for _, message in self.messages[after:])

    def call(self, method: str, params: Any, timeout: float = 120.0) -> tuple[float, Any]:
        """A request's round trip in seconds (send to arrival), and its result."""
        after = self.mark()
        number, sent = self.request(method, params)
        arrived, message = self.wait(lambda m: m.get("id") == number and "method" not in m, after, timeout)
        return arrived - sent, message.get("result")

    def close(self) -> None:
        try:
            self.call("shutdown", None, timeout=20)
            self.notify("exit", None)
            self.process.wait(timeout=20)
        except (TimeoutError, OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def diagnostics_for(uri: str, version: int | None) -> Callable[[Message], bool]:
    """Accepts the ``publishDiagnostics`` of ``uri`` for ``version`` (any version if ``None``)."""

    def accept(message: Message) -> bool:
        if message.get("method") != "textDocument/publishDiagnostics":
            return False
        params = message["params"]
        return bool(params["uri"] == uri and (version is None or params.get("version") == version))

    return accept


def rss_kib(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak) of one process, in KiB; empty if it is gone."""
    found = {}
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    name, value = line.split(":")
                    found[name] = int(value.split()[0])
    except OSError:
        pass
    return found


def descendants(root: int) -> list[int]:
    """Every live process below ``root``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            children.setdefault(_parent(int(name)), []).append(int(name))
    found, todo = [], list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def command_line(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return [part.decode(errors="replace") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def worker_pid(server: int) -> int | None:
    """The warm worker (zygote): the Python running gbls/worker/__main__.py, not bwrap, not a child."""
    found = {}
    for pid in descendants(server):
        arguments = command_line(pid)
        if (
            len(arguments) >= 2
            and "bwrap" not in os.path.basename(arguments[0])
            and arguments[1].endswith(os.path.join("worker", "__main__.py"))
        ):
            found[pid] = _parent(pid)
    roots = [pid for pid, parent in found.items() if parent not in found]
    return min(roots) if roots else None


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0
