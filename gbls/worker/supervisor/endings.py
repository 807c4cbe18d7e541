"""How an analysis ended, in words: every way a child can stop, said as the failure the user sees."""

from __future__ import annotations

import os
import re
import signal
from typing import TypeVar

from ..fork import limits
from ..shared.events import DoneEvent, Event, ExitEvent, FailureEvent, ForkEvent, StuckEvent
from ..shared.protocol import CANCELLED, Cut, Failure, Request
from ..shared.workspace import own_file

# Ended by the parent, besides protocol.CANCELLED.
BUDGET = "budget"  # the wall-clock budget (the timeout setting) ended: the program is cut there
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
    ended_by: str, status: int, events: list[Event], output: str, request: Request, events_limit: int
) -> Failure | None:
    """Why the child that analysed ``request`` stopped early, if it did.

    ``ended_by``: what the parent stopped it for ("" if it ended by itself); ``status``: its wait status.
    """
    settings = request.settings
    if ended_by == BUDGET:
        return None  # cut, not failed: ``cut`` says where
    if ended_by == CANCELLED:
        return Failure("cancelled", "analysis cancelled: a newer request replaced it")
    if ended_by == PROCESSES:
        fork = _last(events, ForkEvent)
        line = fork.line if fork else None
        where = f" (the first fork is at line {line})" if line else ""
        message = f"started more than {settings.max_processes} processes (a fork bomb?) and was stopped"
        return Failure("processes", message + where, line, path=_other(fork.path if fork else "", request))
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
    path, line = line_running(output, request)
    where = f" while running line {line}" if line else ""
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        if name == "SIGXCPU":
            cpu = limits.cpu_seconds(settings)
            message = f"used more than {cpu} s of CPU time and was stopped{where}"
            return Failure("timeout", message, line, path=path)
        message = CRASHES.get(name, f"was killed by {name}")
        return Failure("memory" if name == "SIGKILL" else "crashed", message + where, line, path=path)
    if not any(isinstance(event, DoneEvent) for event in events):
        exit_call = _last(events, ExitEvent)
        if exit_call is not None:
            message = f"the module called os._exit({exit_call.code}); the analysis stopped there"
            return Failure("exit", message, exit_call.line, path=_other(exit_call.path, request))
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else status
        message = f"the analysis process exited with code {code} before it finished"
        return Failure("exit", message, line, path=path)
    first = next((event for event in events if isinstance(event, FailureEvent)), None)
    if first is not None:
        return Failure(first.kind, first.message, first.line, first.column, _other(first.path, request))
    return None


def cut(ended_by: str, events: list[Event], output: str, request: Request) -> Cut | None:
    """Where the program was when the budget ended, if it did: the child's own report, else the
    stack faulthandler printed (the child was stuck in C and never answered)."""
    if ended_by != BUDGET:
        return None
    stuck = _last(events, StuckEvent)
    path, line = (_other(stuck.path, request), stuck.line) if stuck is not None else ("", None)
    if not line:
        path, line = line_running(output, request)
    tracing = stuck.tracing if stuck is not None else ""
    script_line = stuck.script_line if stuck is not None and path else None
    return Cut(
        seconds=request.settings.timeout, line=line, path=path, tracing=tracing, script_line=script_line
    )


def line_running(output: str, request: Request) -> tuple[str, int | None]:
    """The innermost line of the analysed file (of a run: of the workspace) in the last stack
    faulthandler printed, and its file when that is not the analysed one."""
    dump = output.rsplit("(most recent call first):", 1)
    if len(dump) < 2:
        return "", None
    own = own_file(request)
    for match in re.finditer(r'File "([^"]+)", line (\d+)', dump[1]):
        if own(match.group(1)):
            return _other(match.group(1), request), int(match.group(2))
    return "", None


def _other(path: str, request: Request) -> str:
    """``path`` where it is not the analysed file (for a run, a file beside its script); else ""."""
    return path if path and path != request.path else ""
