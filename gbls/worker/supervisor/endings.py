"""How an analysis ended, in words: every way a child can stop, said as the failure the user sees."""

from __future__ import annotations

import os
import re
import signal
from typing import TypeVar

from ..events import DoneEvent, Event, ExitEvent, FailureEvent, ForkEvent, StuckEvent
from ..fork import limits
from ..shared.protocol import CANCELLED, TIMEOUT, Failure, Settings

# Ended by the parent, besides protocol.TIMEOUT and protocol.CANCELLED.
PROCESSES = "processes"
FLOOD = "flood"
OVERLONG = "overlong"  # a line in the event stream no gbls event comes near

CRASHES = {
    "SIGSEGV": "crashed with a segmentation fault (SIGSEGV)",
    "SIGBUS": "crashed with a bus error (SIGBUS)",
    "SIGFPE": "crashed with a floating-point exception (SIGFPE)",
    "SIGILL": "crashed with an illegal instruction (SIGILL)",
    "SIGABRT": "aborted (SIGABRT), e.g. by a failed check in C++ code",
    "SIGKILL": "was killed (SIGKILL), most likely because the machine ran out of memory",
}

E = TypeVar("E", bound=Event)


def _last(events: list[Event], kind: type[E]) -> E | None:
    found = [event for event in events if isinstance(event, kind)]
    return found[-1] if found else None


def failure(
    ended_by: str,
    status: int,
    events: list[Event],
    output: str,
    path: str,
    settings: Settings,
    events_limit: int,
) -> Failure | None:
    """Why the child that analysed ``path`` stopped early, if it did.

    ``ended_by``: what the parent stopped it for ("" if it ended by itself); ``status``: its wait status.
    """
    if ended_by == TIMEOUT:
        return _timeout(events, output, path, settings)
    if ended_by == CANCELLED:
        return Failure("cancelled", "analysis cancelled: a newer request replaced it")
    if ended_by == PROCESSES:
        fork = _last(events, ForkEvent)
        line = fork.line if fork else None
        where = f" (the first fork is at line {line})" if line else ""
        message = f"started more than {settings.max_processes} processes (a fork bomb?) and was stopped"
        return Failure("processes", message + where, line)
    if ended_by == FLOOD:
        return Failure(
            "flood", f"produced more than {events_limit >> 20} MB of graph-break events and was stopped"
        )
    if ended_by == OVERLONG:
        return Failure(
            "flood",
            "wrote a line of more than 1 MB into gbls's event stream (no gbls event is that long) and was "
            "stopped",
        )
    line = line_running(output, path)
    where = f" while running line {line}" if line else ""
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        if name == "SIGXCPU":
            cpu = limits.cpu_seconds(settings)
            return Failure("timeout", f"used more than {cpu} s of CPU time and was stopped{where}", line)
        message = CRASHES.get(name, f"was killed by {name}")
        return Failure("memory" if name == "SIGKILL" else "crashed", message + where, line)
    if not any(isinstance(event, DoneEvent) for event in events):
        exit_call = _last(events, ExitEvent)
        if exit_call is not None:
            message = f"the module called os._exit({exit_call.code}); the analysis stopped there"
            return Failure("exit", message, exit_call.line)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        return Failure("exit", f"the analysis process exited with code {code} before it finished", line)
    first = next((event for event in events if isinstance(event, FailureEvent)), None)
    if first is not None:
        return Failure(first.kind, first.message, first.line, first.column)
    return None


def _timeout(events: list[Event], output: str, path: str, settings: Settings) -> Failure:
    seconds = f"timed out after {settings.timeout:g} s"
    stuck = _last(events, StuckEvent)
    if stuck is not None and stuck.line and stuck.tracing:
        message = f"{seconds} while Dynamo was tracing line {stuck.line} (in {stuck.tracing})"
        return Failure("timeout", message, stuck.line)
    # The child's own report, else the stack faulthandler printed (the child was stuck in C).
    line = stuck.line if stuck is not None else None
    line = line or line_running(output, path)
    return Failure("timeout", f"{seconds} while running line {line}" if line else seconds, line)


def line_running(output: str, path: str) -> int | None:
    """The analysed file's innermost line in the last stack faulthandler printed."""
    dump = output.rsplit("(most recent call first):", 1)
    if len(dump) < 2:
        return None
    for match in re.finditer(r'File "([^"]+)", line (\d+)', dump[1]):
        if match.group(1) == path:
            return int(match.group(2))
    return None
