"""What an analysis observes, as it happens: the events a child streams to the warm worker.

The child writes one JSON line per event the moment it sees it, so that a crash later loses
nothing already seen; the worker checks each line back into its dataclass (``decode``) and
``merge`` folds them into the result. The analysed code inherits the stream's descriptor, so each
line is signed with a key of this analysis (``sign``, ``unsigned``): a line it writes there is not
gbls's. Every event but ``Discard`` belongs to an input attempt
(``attempt``): a failed attempt's events are discarded, so a call that raised leaves no trace.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from .protocol import (
    CudaOnly,
    FailureKind,
    Feature,
    Frame,
    Guard,
    InputSource,
    Message,
    ProtocolError,
    Raises,
    ShapeDecision,
    ShapeReason,
    StanceName,
    TargetKind,
    from_dict,
    to_dict,
)

# Taken while the worker starts: the analysed code, which runs in the process that encodes, may replace it.
_dumps = json.dumps


@dataclass(frozen=True)
class Event:
    KIND: ClassVar[str] = ""
    attempt: int = 0


@dataclass(frozen=True)
class TargetEvent(Event):
    """``torch.compile`` was called on something: a compiled target, numbered in order."""

    KIND: ClassVar[str] = "target"
    target: int = 0
    name: str = ""
    qualname: str = ""
    path: str = ""
    line: int = 0
    kind: TargetKind = "function"
    fullgraph: bool = False
    call_path: str = ""
    call_line: int = 0
    reused: bool = False
    disabled: bool = False
    site: str = ""  # the StaticTarget it is, if the source shows it
    # The program's process it was compiled in, when not the analysed one: "rank 1", "process 4242".
    process: str = ""
    generator: bool = False  # a generator function (Python 3.10 never hands their frames to Dynamo)


@dataclass(frozen=True)
class SiteEvent(Event):
    """Another compile site compiled what ``target`` already is: it is that target too."""

    KIND: ClassVar[str] = "site"
    target: int = 0
    site: str = ""


@dataclass(frozen=True)
class ReachEvent(Event):
    """Dynamo translated or inlined ``code`` (path, first line, name) while running ``target``."""

    KIND: ClassVar[str] = "reach"
    target: int = 0
    code: tuple[str, int, str] = ("", 0, "")


@dataclass(frozen=True)
class CallEvent(Event):
    """The target's own code was entered: it is analysed, with these inputs."""

    KIND: ClassVar[str] = "call"
    target: int = 0
    inputs: str = ""
    source: InputSource = "module"
    called_at: Frame | None = None  # the program's own innermost frame that called it


@dataclass(frozen=True)
class InlinedEvent(Event):
    """Dynamo traced ``target``'s code inline, as part of the graph of ``into`` (another target)."""

    KIND: ClassVar[str] = "inlined"
    target: int = 0
    into: int = 0


@dataclass(frozen=True)
class GraphEvent(Event):
    KIND: ClassVar[str] = "graph"
    target: int = 0
    frame: str = ""
    ops: int = 0
    first_line: int | None = None
    compile_id: str = ""


@dataclass(frozen=True)
class BreakEvent(Event):
    """One graph break as Dynamo logged it, with the full chain from the compiled function."""

    KIND: ClassVar[str] = "break"
    target: int = 0
    compile_id: str = ""
    direct: bool = True  # in the target's own frame (or a resume function of it), not a re-entered callee
    skipped: bool = False  # Dynamo gave up on the frame it was translating
    logged: bool = True  # Dynamo logged it as a graph break (not only as a frame it could not translate)
    reason: str = ""  # what Dynamo said it did about it ("Skipping the function and falling back to eager")
    messages: tuple[Message, ...] = ()  # the root cause first, then any break raised while handling it
    chain: tuple[Frame, ...] = ()
    called_at: Frame | None = None  # the analysed file's innermost frame on the eager stack
    split: int = 0  # the frame of ``chain`` whose graph splits (deeper than 0: a callee's)
    # Dynamo resumed in an inlined callee (nested graph breaks); False where ``split`` names a callee
    # Dynamo translated as a frame of its own, after its caller's graph split at the call.
    nested: bool = False
    raises: Raises = ""  # error_on_graph_break was on: the program raises here
    process: str = ""  # the process of its target's, once ``merge`` folded the processes' targets


@dataclass(frozen=True)
class FrameEvent(Event):
    """Dynamo's own record (its compilation metrics) of one translation of a target's frame."""

    KIND: ClassVar[str] = "frame"
    target: int = 0
    compile_id: str = ""
    frame: str = ""  # the function, as the user wrote it
    own: bool = True  # the target's own code or a resume function of it, not a callee's
    resumes_at: int | None = None  # for a resume function: the line it resumes after
    guarded: bool = True  # Dynamo produced code for the frame; False: the frame runs eagerly
    failure: str = ""  # the first line of Dynamo's reason, when it gave up
    path: str = ""  # the frame's code: its file and first line
    line: int = 0
    recompile: bool = False  # Dynamo compiled it before, and every compiled version refused the call
    guard: Guard | None = None  # for a recompile, the check the newest compiled version failed
    dynamic: bool = False  # its graphs take symbolic sizes
    limit: str = ""  # the recompile limit that stopped its compilation, if one did
    limit_value: int = 0
    raises: Raises = ""  # the limit raises in the program (a config says so), not runs eagerly
    called_at: Frame | None = None  # the program's own innermost frame that made the call


@dataclass(frozen=True)
class CostEvent(Event):
    """Dynamo's own measure (its compilation metrics) of one translation of a target's frame."""

    KIND: ClassVar[str] = "cost"
    target: int = 0
    compile_id: str = ""
    frame: str = ""
    own: bool = True
    resumes_at: int | None = None
    seconds: float = 0.0
    backend_seconds: float = 0.0
    guards: int = 0
    shape_guards: int = 0
    ops: int = 0
    restarts: tuple[str, ...] = ()
    restart_seconds: float = 0.0


@dataclass(frozen=True)
class ShapeEvent(Event):
    """Torch decided about a size of an input of ``target``'s frame (``protocol.Shape``)."""

    KIND: ClassVar[str] = "shape"
    target: int = 0
    compile_id: str = ""
    decision: ShapeDecision = "dynamic"
    subject: str = ""
    dim: int | None = None
    value: str = ""
    reason: ShapeReason = "changed"
    rank: int = 0
    chain: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class StanceEvent(Event):
    """The program set torch.compile's stance, at this line of its own code."""

    KIND: ClassVar[str] = "stance"
    stance: StanceName = "default"
    path: str = ""
    line: int = 0


@dataclass(frozen=True)
class ElidedEvent(Event):
    """A graph of ``target`` was first called with its values elided: each call's outputs have the
    traced metadata, and nothing was computed (``work``: the element-operations one call costs)."""

    KIND: ClassVar[str] = "elided"
    target: int = 0
    frame: str = ""
    compile_id: str = ""
    work: int = 0


@dataclass(frozen=True)
class NoteEvent(Event):
    """Something the user should know about the analysis itself (a hook of gbls's that failed)."""

    KIND: ClassVar[str] = "note"
    text: str = ""


@dataclass(frozen=True)
class TorchEvent(Event):
    """What the analysing torch offers as escape hatches from breaks, found once the hooks are in."""

    KIND: ClassVar[str] = "torch"
    features: tuple[Feature, ...] = ()


@dataclass(frozen=True)
class VerdictEvent(Event):
    """Why a target the analysis tried to call was not analysed."""

    KIND: ClassVar[str] = "verdict"
    target: int = 0
    reason: str = ""


@dataclass(frozen=True)
class StaticEvent(Event):
    """A compile site of the source that never became a target, and why."""

    KIND: ClassVar[str] = "static"
    site: str = ""
    qualname: str = ""
    path: str = ""
    line: int = 0
    kind: TargetKind = "function"
    reason: str = ""


@dataclass(frozen=True)
class FailureEvent(Event):
    KIND: ClassVar[str] = "failure"
    kind: FailureKind = "raised"
    message: str = ""
    line: int | None = None
    column: int | None = None
    path: str = ""  # the file of ``line``, when it is not the analysed file (a run's other files)


@dataclass(frozen=True)
class DoneEvent(Event):
    KIND: ClassVar[str] = "done"


@dataclass(frozen=True)
class DiscardEvent(Event):
    """Forget every event of ``attempt``: its call raised."""

    KIND: ClassVar[str] = "discard"


@dataclass(frozen=True)
class StuckEvent(Event):
    """Where the child was when the timeout hit: a line of the file, and the function Dynamo traced."""

    KIND: ClassVar[str] = "stuck"
    line: int | None = None
    tracing: str = ""
    path: str = ""
    # gbls stopped the program there: the analysis goes on with the compiled code it never reached.
    stopped: bool = False
    script_line: int | None = None  # the analysed file's (a run's script's) innermost line then


@dataclass(frozen=True)
class ExitEvent(Event):
    KIND: ClassVar[str] = "exit"
    code: int = 0
    line: int | None = None
    path: str = ""


@dataclass(frozen=True)
class CudaOnlyEvent(Event):
    """A call of the analysed file that needs a GPU, which gbls did not run (CUDA mapped to the CPU)."""

    KIND: ClassVar[str] = "cuda_only"
    call: CudaOnly | None = None


@dataclass(frozen=True)
class ForkEvent(Event):
    KIND: ClassVar[str] = "fork"
    line: int | None = None
    path: str = ""


@dataclass(frozen=True)
class LibrariesEvent(Event):
    """The modules of installed libraries (site-packages) the analysis imported that the warm worker
    had not: the worker imports them once, so that the next analysis need not."""

    KIND: ClassVar[str] = "libraries"
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExecutedEvent(Event):
    """A workspace file the analysis executed: the analysed file, or a module it imported."""

    KIND: ClassVar[str] = "executed"
    path: str = ""


@dataclass(frozen=True)
class ReturnEvent(Event):
    """A call the program made of a compiled function returned this (``Returned``)."""

    KIND: ClassVar[str] = "return"
    function: str = ""
    call: int = 0
    value: tuple[str, ...] = ()


@dataclass(frozen=True)
class PrintedEvent(Event):
    """What the program wrote to ``sys.stdout``, once it ended; ``whole``: all of it, not its first
    characters only."""

    KIND: ClassVar[str] = "printed"
    text: str = ""
    whole: bool = True


KINDS: dict[str, type[Event]] = {
    cls.KIND: cls
    for cls in (
        TargetEvent,
        SiteEvent,
        ReachEvent,
        CallEvent,
        InlinedEvent,
        GraphEvent,
        BreakEvent,
        FrameEvent,
        CostEvent,
        ShapeEvent,
        StanceEvent,
        ElidedEvent,
        NoteEvent,
        TorchEvent,
        VerdictEvent,
        StaticEvent,
        FailureEvent,
        DoneEvent,
        DiscardEvent,
        StuckEvent,
        ExitEvent,
        ForkEvent,
        ExecutedEvent,
        LibrariesEvent,
        CudaOnlyEvent,
        ReturnEvent,
        PrintedEvent,
    )
}


def with_attempt(event: Event, attempt: int) -> Event:
    return replace(event, attempt=attempt)


# Taken before any user code runs: the analysed code may replace them.
_hmac = hmac.new
_sha256 = hashlib.sha256
_equal = hmac.compare_digest
TAG_LENGTH = 32  # hex digits of HMAC-SHA256 that open each signed line


def _tag(key: bytes, line: bytes) -> bytes:
    return _hmac(key, line, _sha256).hexdigest()[:TAG_LENGTH].encode()


def sign(key: bytes, encoded: bytes) -> bytes:
    """An encoded event as the child writes it: its tag under the analysis's key, a space, the line."""
    line = encoded.rstrip(b"\n")
    return _tag(key, line) + b" " + line + b"\n"


def unsigned(key: bytes, signed: bytes) -> bytes:
    """The event line of a signed line (no newline); ``ProtocolError`` if ``key`` did not sign it."""
    tag, _, line = signed.partition(b" ")
    if not _equal(tag, _tag(key, line)):
        raise ProtocolError("not signed by gbls")
    return line


def encode(event: Event) -> bytes:
    payload: dict[str, Any] = {"event": event.KIND}
    payload.update(to_dict(event))
    return (_dumps(payload, separators=(",", ":"), default=str) + "\n").encode()


def decode(line: bytes) -> Event:
    """One event line back as its dataclass; ``ProtocolError`` for anything else."""
    try:
        data = json.loads(line)
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from None
    cls = KINDS.get(str(data.get("event"))) if isinstance(data, dict) else None
    if cls is None:
        raise ProtocolError("not a gbls event")
    return from_dict(cls, data)
