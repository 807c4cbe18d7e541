"""The steady-state stop: once a program repeats itself, what is left of it shows Dynamo nothing new.

A compiled callable entered for at least the third time, when nothing was translated since its
previous call, means the program is in its steady state (a training or sampling loop): gbls stops
it there, as Ctrl-C would, so that it is analysed in its first steps, not for hours.
"""

from __future__ import annotations

import os
import signal
import types
from collections.abc import Callable
from typing import Any

import torch._dynamo

from ..log import log
from ..shared.events import Event, StoppedEvent
from .frames import WORKER_DIR

DYNAMO_DIR = os.path.dirname(torch._dynamo.__file__) + os.sep
STEADY_CALLS = 2
STOP_RETRY = 0.001  # seconds between attempts to stop the program in its own code


class ProgramStopped(BaseException):
    """Raised in the analysed program's own code to end it once it runs only what Dynamo has seen.

    A ``BaseException``, like ``KeyboardInterrupt``, so that ``except Exception`` does not swallow it.
    """

    def __init__(self, line: int | None) -> None:
        super().__init__(line)
        self.line = line


class SteadyStop:
    """Counts the calls of each compiled callable and the translations between them."""

    def __init__(
        self, emit: Callable[[Event], None], own: Callable[[str], bool], translating: Callable[[], bool]
    ) -> None:
        self.emit = emit
        self.own = own  # the files whose lines say where the program is
        self.translating = translating  # whether Dynamo is translating a frame right now
        self.translated = 0  # frames Dynamo was asked to translate so far
        self.entries: dict[int, tuple[int, int]] = {}  # compiled callable → (calls, translated then)
        self.armed = False  # the program's own run: only it is stopped, never the uncalled targets' calls
        self.stopping = False

    def entered(self, callback: Any) -> None:
        """A compiled callable is called: stop the program if it repeats itself."""
        if self.translating():  # a call Dynamo makes while translating is not the program's
            return
        calls, translated = self.entries.get(id(callback), (0, -1))
        self.entries[id(callback)] = (calls + 1, self.translated)
        steady = calls >= STEADY_CALLS and translated == self.translated
        if not (self.armed and steady) or self.stopping:
            return
        try:
            signal.signal(signal.SIGALRM, self._stop_here)
        except ValueError:  # not the main thread: only the main thread can be stopped
            return
        self.stopping = True
        signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)

    def _stop_here(self, signum: int, frame: types.FrameType | None) -> None:
        """Raise ``ProgramStopped`` where the program is, as Ctrl-C would, but never inside Dynamo
        (a translation, or the compiled call's own bookkeeping) nor in gbls."""
        if not self.stopping:
            return
        if not self.can_stop(frame):
            signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)
            return
        self.stopping = False
        self.armed = False
        path, line = "", None
        while frame is not None and line is None:
            if self.own(frame.f_code.co_filename):
                path, line = frame.f_code.co_filename, frame.f_lineno
            frame = frame.f_back
        log(f"the program repeats itself: stopped at line {line} of {path}")
        self.emit(StoppedEvent(line=line, path=path))
        raise ProgramStopped(line)

    def can_stop(self, frame: types.FrameType | None) -> bool:
        """Whether the program can be stopped in ``frame`` (the innermost), as Ctrl-C would stop it:
        in its own run, and neither inside Dynamo (a translation, or the compiled call's own
        bookkeeping) nor in gbls."""
        where = frame.f_code.co_filename if frame is not None else DYNAMO_DIR
        return self.armed and not self.translating() and not where.startswith((DYNAMO_DIR, WORKER_DIR))

    def disarm(self) -> None:
        """The program's own run is over: what runs next (uncalled targets) runs to its end."""
        self.armed = self.stopping = False
        signal.setitimer(signal.ITIMER_REAL, 0)
