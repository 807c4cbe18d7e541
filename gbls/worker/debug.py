"""The analysis in the calling process, for debugging gbls: no fork, no sandbox, no limits.

``gbls check --in-process FILE`` runs it: the same analysis the forked child runs
(``analysis.run``), its events shown as they happen, folded into the same result the warm
parent sends (``supervisor.record.result_of``), so that a breakpoint (pdb, debugpy) in the
capture code stops. The analysed program runs in this process, with everything that implies:
it can change this interpreter's state, and nothing stops it after a timeout.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable

import torch

from .analysis.run import analyse
from .shared import events
from .shared.events import Event
from .shared.protocol import Request, Result
from .supervisor.record import result_of


def torch_version() -> str:
    return torch.__version__.split("+")[0]


class InProcess:
    """In the warm worker's place for ``gbls check --in-process``: each event shown on stderr."""

    def new_id(self) -> str:
        return "in-process"

    async def analyse(self, request: Request) -> Result:
        return analyse_here(request, show)


def show(event: Event) -> None:
    print(f"gbls event: {events.encode(event).decode().rstrip()}", file=sys.stderr)


def analyse_here(request: Request, show: Callable[[Event], None] | None = None) -> Result:
    """Analyse ``request`` here; ``show`` sees each event as the analysis emits it.

    The program's own output (and pdb's) goes to stderr, so that stdout stays the caller's.
    """
    events: list[Event] = []

    def emit(event: Event) -> None:
        events.append(event)
        if show is not None:
            show(event)

    started = time.monotonic()
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    saved_argv, saved_path, saved_cwd = list(sys.argv), list(sys.path), os.getcwd()
    saved_main = sys.modules["__main__"]
    try:
        if request.cwd:  # where the forked child would run it (without a layer: writes are real here)
            os.chdir(request.cwd)
        analyse(request, emit, offline=False, startup=frozenset(sys.modules))
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
        sys.argv[:], sys.path[:] = saved_argv, saved_path
        os.chdir(saved_cwd)
        sys.modules["__main__"] = saved_main
    return result_of(
        request,
        events,
        ended_by="",
        status=0,
        output="",
        torch_version=torch_version(),
        seconds=round(time.monotonic() - started, 3),
    )
