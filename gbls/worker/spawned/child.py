"""gbls's capture in a Python interpreter the analysed program started, once the program imports
torch there (``site/sitecustomize.py`` brings it): ``torch.compile`` on the no-op backend, and every
compiled target, break and compilation reported to the analysis, as in the analysis itself.

The events are signed with the analysis's key, as its own, and written into a file of this
process's own in the analysis's folder for them, a whole line at a time: the analysis copies them
into its event stream (``analysis.children``). Its targets are numbered apart from the analysis's
and every other process's, and say which process they are in: its rank in the program's process
group, else its process id.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..analysis.capture import Capture
from ..shared import events
from ..shared.events import Event
from ..shared.protocol import StaticTarget, from_dict
from ..shared.workspace import in_workspace

# Target numbers per process: this process's are its id times this, apart from every other's.
NUMBERS = 1 << 20

# The real ones, taken before the program's code goes on: it may replace them.
_write = os.write
_getpid = os.getpid


def start(settings: dict[str, Any]) -> None:
    """Capture this interpreter's compilations for the analysis ``settings`` describe."""
    key = bytes.fromhex(settings["key"])
    me = _getpid()
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC
    fd = os.open(os.path.join(settings["events"], str(me)), flags, 0o600)

    def emit(event: Event) -> None:
        if _getpid() != me:  # a process this one forked has no file of its own
            return
        data = events.sign(key, events.encode(event))
        while data:
            data = data[_write(fd, data) :]

    path, roots = settings["path"], settings["roots"]
    sites = tuple(from_dict(StaticTarget, site) for site in settings["sites"])
    Capture(
        emit,
        path,
        sites=sites,
        own=lambda other: other == path or in_workspace(other, roots),
        first=me * NUMBERS,
        process=process,
        values=settings["values"],
    ).install()


def process() -> str:
    """This process as its program knows it: its rank in the process group, else its id."""
    distributed = sys.modules.get("torch.distributed")
    try:
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            return f"rank {distributed.get_rank()}"
    except Exception:  # a process group half set up: the environment, or the id, say it
        pass
    rank = os.environ.get("RANK", "")
    return f"rank {rank}" if rank.isdigit() else f"process {_getpid()}"
