"""The warm parent's record of one analysis's child: its pipes, its events, its deadline, its result."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

from ..shared import events, processes
from ..shared.events import (
    BreakEvent,
    CudaOnlyEvent,
    Event,
    ExecutedEvent,
    NoteEvent,
    PrintedEvent,
    ReturnEvent,
    StuckEvent,
    TorchEvent,
)
from ..shared.merge import live_events, merge
from ..shared.protocol import (
    CANCELLED,
    ERROR,
    OK,
    Failure,
    Frame,
    Outcome,
    ProtocolError,
    Request,
    Result,
    Returned,
    Status,
)
from . import endings

TAIL_BYTES = 16 * 1024
EVENTS_LIMIT = 64 * 1024 * 1024
EVENT_LINE_LIMIT = 1 << 20  # no real event comes near: a longer line is not gbls's
MAX_EVENTS = 100_000
MAX_CHAINS = 5_000  # distinct break chains merged: bounds the merge, however many events repeat them
MAX_BREAKS = 1_000  # root causes reported per file; a real file has a handful
DIGEST_LINES = 200  # event lines decoded per turn of the parent's loop: it serves every child meanwhile
# Seconds a timed-out analysis that could stop its program gets for the compiled code the program
# never reached (synthesized inputs), before it is killed: within the server's margin of 8 s.
AFTER_TIMEOUT = 5.0


class Output:
    """A child's stdout and stderr: the head up to a limit, then only a short tail."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, data: bytes) -> None:
        room = self.limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > TAIL_BYTES:
                self.dropped += len(self.tail) - TAIL_BYTES
                del self.tail[:-TAIL_BYTES]

    def text(self) -> str:
        middle = f"\n[gbls: {self.dropped} bytes of output dropped]\n" if self.dropped else ""
        return (
            bytes(self.head).decode("utf-8", "replace") + middle + bytes(self.tail).decode("utf-8", "replace")
        )


class Child:
    """The parent's record of one running analysis: its pipes, its events, its deadline."""

    def __init__(
        self, request: Request, pid: int, events_fd: int, key: bytes, output_fd: int, scratch: str
    ) -> None:
        self.request = request
        self.key = key
        self.pid = pid
        self.scratch = scratch
        self.streams = {events_fd: "events", output_fd: "output"}
        self.partial = b""
        self.event_bytes = 0
        # Lines not decoded yet: checking an event costs, and the parent serves every child meanwhile.
        self.pending: deque[bytes] = deque()
        self.received = 0
        # The last lines past MAX_EVENTS: how the analysis ended (done, failure, stuck) is among them.
        self.last: deque[bytes] = deque(maxlen=64)
        self.events: list[Event] = []
        self.chains: set[tuple[int, str, tuple[Frame, ...]]] = set()
        self.unreadable = 0  # event lines not signed by gbls, or no events: the analysed code wrote them
        self.dropped = 0  # events past MAX_EVENTS
        self.unmerged = 0  # break events past MAX_CHAINS distinct chains
        self.output = Output(request.settings.max_output)
        self.started = time.monotonic()
        self.deadline = self.started + request.settings.timeout
        self.ended_by = ""  # budget | cancelled | processes | flood | overlong
        self.kill_at: float | None = None
        self.status: int | None = None
        self.exited_at: float | None = None

    def feed(self, fd: int, data: bytes) -> None:
        if self.streams[fd] == "output":
            self.output.feed(data)
            return
        if self.ended_by in (endings.FLOOD, endings.OVERLONG):
            return
        self.event_bytes += len(data)
        if self.event_bytes > EVENTS_LIMIT:
            self.stop(endings.FLOOD)
            return
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        if len(self.partial) > EVENT_LINE_LIMIT or any(len(line) > EVENT_LINE_LIMIT for line in lines):
            self.partial = b""
            self.stop(endings.OVERLONG)
            return
        room = max(MAX_EVENTS - self.received, 0)
        self.pending.extend(lines[:room])
        self.received += min(room, len(lines))
        self.last.extend(lines[room:])
        self.dropped += max(len(lines) - room, 0)

    def digest(self, budget: int) -> None:
        """Decode up to ``budget`` of the lines received; lines that are no gbls event are counted."""
        for _ in range(min(budget, len(self.pending))):
            try:
                event = events.decode(events.unsigned(self.key, self.pending.popleft()))
            except ProtocolError:
                self.unreadable += 1
                continue
            if isinstance(event, StuckEvent) and event.stopped and self.ended_by == endings.BUDGET:
                self.kill_at = time.monotonic() + AFTER_TIMEOUT
            if isinstance(event, BreakEvent) and event.messages:
                chain = (event.target, event.messages[0].gb_type, event.chain)
                if chain not in self.chains and len(self.chains) >= MAX_CHAINS:
                    self.unmerged += 1
                    continue
                self.chains.add(chain)
            self.events.append(event)

    def stop(self, reason: str) -> None:
        if not self.ended_by and self.status is None:
            self.ended_by = reason
            processes.kill_group(self.pid)

    def result(self, torch_version: str) -> Result:
        self.pending.extend(self.last)
        self.digest(len(self.pending))
        truncated = []
        if self.dropped > len(self.last):
            truncated.append(
                f"{self.dropped - len(self.last)} events past the first {MAX_EVENTS} were dropped"
            )
        if self.unmerged:
            truncated.append(
                f"{self.unmerged} graph-break events past {MAX_CHAINS} distinct chains were dropped"
            )
        return result_of(
            self.request,
            self.events,
            ended_by=self.ended_by,
            status=self.status or 0,
            output=self.output.text(),
            torch_version=torch_version,
            seconds=round(time.monotonic() - self.started, 3),
            unreadable=self.unreadable,
            truncated=truncated,
        )


def result_of(
    request: Request,
    events: list[Event],
    ended_by: str,
    status: int,
    output: str,
    torch_version: str,
    seconds: float,
    unreadable: int = 0,
    truncated: list[str] | None = None,
) -> Result:
    """The result of an analysis from its events and how its process ended.

    ``ended_by``: what the parent stopped it for ("" if it ended by itself); ``status``: its wait
    status; ``unreadable``: event lines that were not gbls's; ``truncated``: what was dropped.
    """
    cut = endings.cut(ended_by, events, output, request)
    merged = merge(events, request, cut=cut is not None)
    breaks = merged.breaks
    truncated = list(truncated or ())
    if len(breaks) > MAX_BREAKS:
        truncated.append(f"only the first {MAX_BREAKS} of {len(breaks)} graph breaks are shown")
        breaks = breaks[:MAX_BREAKS]
    failure = endings.failure(ended_by, status, events, output, request, EVENTS_LIMIT)
    if failure is None and unreadable:
        failure = Failure(
            "tampered",
            f"the analysed code tampered with gbls's results (it wrote {unreadable} "
            f"line{'s' if unreadable != 1 else ''} into gbls's event stream); what gbls "
            "captured is shown, but may be incomplete",
        )
    if truncated:
        note = "gbls output truncated: " + "; ".join(truncated)
        failure = (
            Failure("truncated", note)
            if failure is None
            else Failure(failure.kind, f"{failure.message} ({note})", failure.line, failure.column)
        )
    result_status: Status
    if ended_by == CANCELLED:
        result_status = CANCELLED
    elif failure is not None:
        result_status = ERROR
    else:
        result_status = OK
    return replace(
        merged,
        status=result_status,
        failure=failure,
        breaks=breaks,
        output=output,
        torch=torch_version,
        seconds=seconds,
        notes=tuple(dict.fromkeys(event.text for event in events if isinstance(event, NoteEvent))),
        executed=tuple(dict.fromkeys(e.path for e in events if isinstance(e, ExecutedEvent))),
        cuda_only=tuple(  # in the source's order, whatever order the program reached them in
            sorted(
                dict.fromkeys(e.call for e in events if isinstance(e, CudaOnlyEvent) and e.call is not None),
                key=lambda call: (call.line, call.column),
            )
        ),
        features=next((e.features for e in events if isinstance(e, TorchEvent)), ()),
        cut=cut,
        outcome=outcome_of(events),
    )


def outcome_of(events: list[Event]) -> Outcome:
    """What the program returned and printed, as its events say; not recorded when it ended before it
    said what it printed (a crash, its own os._exit, a timeout)."""
    printed = next((e for e in events if isinstance(e, PrintedEvent)), None)
    returns = tuple(
        Returned(e.function, e.call, e.value) for e in live_events(events) if isinstance(e, ReturnEvent)
    )
    if printed is None:
        return Outcome(returns=returns)
    return Outcome(returns=returns, printed=printed.text, whole=printed.whole, recorded=True)
