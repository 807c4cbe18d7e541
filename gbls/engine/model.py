"""A file's analysis as the editor and the CLI show it: the worker's findings placed on the source.

One break type flows from the wire to every feature: ``BreakReport`` is the worker's ``Break``
as it arrived (``cause``) plus where it sits in the source, so hover, diagnostics, the CLI and
the fix catalogue all read the same object. Everything is in characters here (1-based lines,
0-based columns, end exclusive); the LSP layer converts to UTF-16 and the CLI to 1-based columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..worker.protocol import EAGER, Break, Code, Function, Graph
from .ranges import Span

STOPPED = (
    "gbls stopped the program here once it repeated itself: its compiled calls had nothing new to translate"
)

# What identifies a break across publications, for code actions on a diagnostic.
BreakKey = tuple[str, str, int, int]


@dataclass(frozen=True)
class Location:
    path: str
    function: str
    span: Span


@dataclass(frozen=True)
class BreakReport:
    cause: Break  # as the worker reported it
    span: Span  # where the analysed file's graph splits
    chain: tuple[Location, ...]  # the cause's chain on exact spans: chain[0] splits, chain[-1] is the cause
    reason: str  # the root cause as written, shortened: "print", "x.sum().item", "x.sum() > 0"
    # Where the analysed file called the compiled code, when its chain never enters the file (a
    # library model compiled here): the break sits on the compile call, this says who ran it.
    called_at: Location | None = None

    @property
    def function(self) -> str:
        return self.cause.function

    @property
    def gb_type(self) -> str:
        return self.cause.gb_type

    @property
    def gb_id(self) -> str | None:
        return self.cause.gb_id

    @property
    def url(self) -> str | None:
        return self.cause.url

    @property
    def effect(self) -> str:
        return self.cause.effect

    @property
    def count(self) -> int:
        return self.cause.count

    @property
    def code(self) -> str:
        return self.gb_id or "GB????"

    @property
    def key(self) -> BreakKey:
        return (self.function, self.gb_type, self.span.line, self.span.column)

    @property
    def via(self) -> tuple[str, ...]:
        return tuple(location.function for location in self.chain[1:])

    @property
    def root(self) -> Location:
        return self.chain[-1]

    @property
    def title(self) -> str:
        """``Failed to trace builtin operator (print)``"""
        return f"{self.gb_type} ({self.reason})" if self.reason else self.gb_type

    @property
    def eager(self) -> str:
        """What Dynamo gave up on, for an EAGER break: "runs entirely in eager mode", or the rest of it."""
        if self.effect != EAGER:
            return ""
        if self.cause.eager_from is not None:
            return f"runs in eager mode after line {self.cause.eager_from}"
        return "runs entirely in eager mode"

    @property
    def message(self) -> str:
        text = self.title
        if self.via:
            text += f" (via {' → '.join(self.via)})"
        if self.eager:
            reason = self.cause.eager_reason
            why = f": {reason.split(':')[0]}" if reason else ""
            text += f"; {self.function} {self.eager}{why}"
        return text


@dataclass(frozen=True)
class FunctionReport:
    target: Function  # as the worker reported it
    path: str
    line: int
    graphs: tuple[Graph, ...]
    breaks: int
    suppressed: int
    span: Span  # where its lens and hover anchor: the def name, or the compile call
    decorator: Span | None
    call: Span | None

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def qualname(self) -> str:
        return self.target.qualname

    @property
    def kind(self) -> str:
        return self.target.kind

    @property
    def analysed(self) -> bool:
        return self.target.analysed

    @property
    def reason(self) -> str:
        return self.target.reason

    @property
    def reached(self) -> tuple[Code, ...]:
        """The code its results depend on."""
        return self.target.reached

    @property
    def hover_spans(self) -> tuple[Span, ...]:
        return tuple(s for s in (self.span, self.decorator, self.call) if s is not None)

    @property
    def ops(self) -> int:
        return sum(graph.ops for graph in self.graphs)


@dataclass(frozen=True)
class FileReport:
    path: str
    status: str
    message: str
    failure_kind: str
    failure_span: Span | None
    functions: tuple[FunctionReport, ...]
    breaks: tuple[BreakReport, ...]
    suppressed: tuple[BreakReport, ...]
    output: str
    torch: str
    seconds: float
    notes: tuple[str, ...] = ()  # about the analysis itself: what gbls could not capture, and why
    stopped: Span | None = None  # where gbls stopped the program once it repeated itself

    def find(self, key: BreakKey) -> BreakReport | None:
        return next((brk for brk in self.breaks if brk.key == key), None)


def failure_report(path: str, kind: str, message: str) -> FileReport:
    """A file that could not be analysed at all (unreadable, no worker): one message on its first line."""
    return FileReport(
        path=path,
        status="error",
        message=message,
        failure_kind=kind,
        failure_span=Span(1, 0, 1, 0),
        functions=(),
        breaks=(),
        suppressed=(),
        output="",
        torch="",
        seconds=0.0,
    )
