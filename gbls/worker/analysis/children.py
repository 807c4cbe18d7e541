"""The events of the Python interpreters the program started (``spawned.child``), copied into the
analysis's own event stream: once the program has ended, and where a timeout stops it."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..shared import events
from ..shared.events import TargetEvent
from ..shared.protocol import ProtocolError

# Read of one process's file per copy: the worker stops a stream long before (64 MB).
READ_LIMIT = 64 << 20


class Children:
    """Each process's file of signed event lines, copied as it stands, a whole line at a time."""

    def __init__(self, folder: str, forward: Callable[[bytes], None], key: bytes) -> None:
        self.folder = folder
        self.forward = forward  # into the analysis's event stream, as they are: signed already
        self.key = key
        self.copied: dict[str, int] = {}  # bytes copied of each process's file
        self.sites: set[str] = set()  # the compile sites the processes compiled: analysed there

    def relay(self) -> None:
        """Copy the lines each process wrote since the last copy; a line it is writing waits."""
        try:
            names = sorted(os.listdir(self.folder))
        except OSError:
            return
        for name in names:
            start = self.copied.get(name, 0)
            try:
                with open(os.path.join(self.folder, name), "rb") as handle:
                    handle.seek(start)
                    data = handle.read(READ_LIMIT)
            except OSError:
                continue
            complete = data[: data.rfind(b"\n") + 1]
            if complete:
                self.copied[name] = start + len(complete)
                self.forward(complete)
                self._note_sites(complete)

    def _note_sites(self, lines: bytes) -> None:
        for line in lines.splitlines():
            try:
                event = events.decode(events.unsigned(self.key, line))
            except ProtocolError:
                continue  # not gbls's: the worker says so, from the stream
            if isinstance(event, TargetEvent) and event.site:
                self.sites.add(event.site)
