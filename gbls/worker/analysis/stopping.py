"""Stopping the program where it is, as Ctrl-C would, once its time budget is spent.

A program runs to its end: only the timeout stops it early. Then gbls raises ``ProgramStopped``
in the program's own code (never inside Dynamo, a translation or the compiled call's own
bookkeeping, nor in gbls), so that the analysis goes on with what the program never reached.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable

import torch._dynamo

from .frames import WORKER_DIR

DYNAMO_DIR = os.path.dirname(torch._dynamo.__file__) + os.sep


class ProgramStopped(BaseException):
    """Raised in the analysed program's own code to end it at the timeout.

    A ``BaseException``, like ``KeyboardInterrupt``, so that ``except Exception`` does not swallow it.
    """

    def __init__(self, line: int | None) -> None:
        super().__init__(line)
        self.line = line


class Stopper:
    """Whether the program can be stopped where it is."""

    def __init__(self, translating: Callable[[], bool]) -> None:
        self.translating = translating  # whether Dynamo is translating a frame right now
        self.armed = False  # the program's own run: only it is stopped, never the uncalled targets' calls

    def can_stop(self, frame: types.FrameType | None) -> bool:
        """Whether the program can be stopped in ``frame`` (the innermost), as Ctrl-C would stop it:
        in its own run, and neither inside Dynamo nor in gbls."""
        where = frame.f_code.co_filename if frame is not None else DYNAMO_DIR
        return self.armed and not self.translating() and not where.startswith((DYNAMO_DIR, WORKER_DIR))
