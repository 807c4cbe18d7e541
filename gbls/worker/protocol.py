"""The versioned JSON wire format between the gbls server and its worker.

Both sides import this module: the server as ``gbls.worker.protocol``, the worker as part of
its private package. It uses only the standard library and must stay importable on every
Python that torch supports, so no syntax newer than 3.9 is evaluated at run time.

Everything that crosses a process boundary is a frozen dataclass, checked field by field when it
is read back (``from_dict``): what arrives may have been written by the analysed code, so a
message that does not fit raises ``ProtocolError`` instead of crashing whoever reads it.
"""

from __future__ import annotations

import dataclasses
import json
import typing
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple, Type, TypeVar, Union

PROTOCOL_VERSION = 5

# Result.status values
OK = "ok"
ERROR = "error"
TIMEOUT = "timeout"
CANCELLED = "cancelled"

# Break.effect values: the graph splits at the break, or Dynamo gives up on the whole frame.
SPLIT = "split"
EAGER = "eager"


class ProtocolError(ValueError):
    """A message that does not fit the protocol: another version, malformed, or forged."""


@dataclass(frozen=True)
class Frame:
    """One frame of a break's chain. Columns are UTF-8 byte offsets as CPython reports them."""

    path: str
    function: str
    line: int
    column: Optional[int] = None
    end_column: Optional[int] = None


@dataclass(frozen=True)
class Message:
    """One structured graph-break message, as Dynamo formats it."""

    gb_type: str
    context: str
    explanation: str
    hints: Tuple[str, ...]
    gb_id: Optional[str] = None
    url: Optional[str] = None
    # What the user's torch or Python does not say about it, and what gbls filled in instead.
    gaps: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Break:
    """One root cause of a graph break in one compiled function."""

    function: str
    gb_type: str
    gb_id: Optional[str]
    url: Optional[str]
    explanation: str
    hints: Tuple[str, ...]
    context: str
    chain: Tuple[Frame, ...]
    count: int = 1
    effect: str = SPLIT
    # For EAGER breaks: the break Dynamo raised when it gave up on the frame (e.g. "graph break in loop").
    eager_reason: str = ""
    # For EAGER breaks in a resume function: the line after which the function runs eagerly (else the
    # whole function does).
    eager_from: Optional[int] = None
    # What the user's torch or Python does not say about it (no GB id in its registry, no columns).
    gaps: Tuple[str, ...] = ()
    # Where the analysed file called the compiled code, when the chain never enters the file.
    called_at: Optional[Frame] = None


@dataclass(frozen=True)
class Graph:
    """One FX graph Dynamo produced while running a compiled function."""

    function: str
    frame: str
    ops: int
    first_line: Optional[int] = None


@dataclass(frozen=True)
class Code:
    """A function Dynamo translated or inlined while running a compiled target."""

    path: str
    line: int  # its code object's first line: the first decorator's, if it has any
    name: str


@dataclass(frozen=True)
class Guard:
    """A check of an earlier compilation that a new call failed, as Dynamo reported it."""

    text: str  # the check, locals and globals by their source names: "mode == 'a'"
    failed: str  # the compilation whose check it is: "0/0"
    # value | shape | dtype | requires_grad | tensor | type | identity | length | global_state | other
    kind: str = "other"
    subject: str = ""  # what it checks, as the source names it: "mode", "x", "self.scale", "ACT"
    is_global: bool = False  # the subject is a global of the function's module
    hint: str = ""  # Dynamo's own advice, when it gives one
    # Where Dynamo installed it, outermost frame first; empty when this torch does not say.
    chain: Tuple[Frame, ...] = ()


@dataclass(frozen=True)
class Recompile:
    """One recompilation: a call that none of a frame's compiled versions accepted."""

    function: str  # the compiled function's qualname
    frame: Code  # the frame compiled again: the function's own code, or a callee it re-entered
    direct: bool  # the function's own frame (or one of its resume functions), not a re-entered callee
    compile_id: str  # the new compilation's: "0/1"
    guard: Optional[Guard] = None  # the check the newest compiled version failed; None if this torch hides it
    dynamic: bool = False  # the new compilation traced symbolic shapes or sizes (automatic dynamic)
    # The recompile limit it ran into instead of compiling ("recompile_limit"; before torch 2.7
    # "cache_size_limit"), and its value; from then on the frame runs its compiled versions or eagerly.
    limit: str = ""
    limit_value: int = 0


@dataclass(frozen=True)
class Function:
    """A compiled function or module of the analysed file, and how it was run."""

    name: str
    qualname: str
    path: str
    line: int
    kind: str = "function"  # function | method | module
    analysed: bool = False
    reason: str = ""
    inputs: str = ""
    input_source: str = ""  # module | example | synthesized
    fullgraph: bool = False
    # Everything its results depend on in the source; empty when this torch cannot say.
    reached: Tuple[Code, ...] = ()
    # The ``StaticTarget.id`` of the compile site it is, or "" when the source shows none.
    site: str = ""
    # How many times Dynamo compiled it: 1, plus one per recompilation of its own frames that compiled.
    compilations: int = 0
    # The analysed file's line where torch.compile ran for it (0: elsewhere), for code outside the file.
    call_line: int = 0


@dataclass(frozen=True)
class Failure:
    """Why an analysis stopped early, and where in the analysed file if known."""

    # syntax | import | raised | exit | stdin | memory | network | write | timeout | crashed | processes
    # | flood | cancelled | worker
    kind: str
    message: str
    line: Optional[int] = None
    column: Optional[int] = None


@dataclass(frozen=True)
class StaticTarget:
    """A compiled target the server found in the source, sent so that none is skipped silently."""

    id: str
    name: str
    qualname: str
    kind: str  # function | method | module
    line: int
    first_line: int
    in_main_block: bool = False  # runs only when the file runs as a script
    end_line: int = 0  # the compile call's last line
    scope: str = ""  # the function whose body holds the compile call; "" at module level


@dataclass(frozen=True)
class Settings:
    timeout: float = 20.0
    memory_mb: int = 4096
    run_main: bool = True
    max_processes: int = 64
    max_output: int = 64 * 1024


@dataclass(frozen=True)
class Request:
    id: str
    path: str
    source: str
    settings: Settings = field(default_factory=Settings)
    targets: Tuple[StaticTarget, ...] = ()
    workspace: str = ""
    # Targets (qualnames, in the analysed file) whose last results still hold: left eager, not translated.
    reuse: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Result:
    path: str
    status: str
    failure: Optional[Failure] = None
    functions: Tuple[Function, ...] = ()
    breaks: Tuple[Break, ...] = ()
    graphs: Tuple[Graph, ...] = ()
    recompiles: Tuple[Recompile, ...] = ()
    output: str = ""
    torch: str = ""
    seconds: float = 0.0
    notes: Tuple[str, ...] = ()  # about the analysis itself: what gbls could not capture, and why
    # The analysed file's line where gbls stopped the program once it repeated itself (0: it ran to its end).
    stopped_line: int = 0


T = TypeVar("T")
_hints: Dict[type, Dict[str, Any]] = {}
# By id of annotation (they live in _hints for good): its origin, its arguments, whether it is a
# dataclass. typing is slow to ask, and slow to hash its annotations.
_shapes: Dict[int, Tuple[Any, Tuple[Any, ...], bool]] = {}


def from_dict(cls: Type[T], data: Any) -> T:
    """Rebuild dataclass ``cls`` (and the ones nested in it) from its JSON form, checking every field.

    Unknown keys are ignored (a newer peer may add some); a missing required field or a value of
    the wrong type raises ``ProtocolError``.
    """
    if not isinstance(data, dict):
        raise ProtocolError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    hints = _hints.get(cls)
    if hints is None:
        fields = {item.name for item in dataclasses.fields(cls)}  # type: ignore[arg-type]
        hints = _hints[cls] = {
            name: kind for name, kind in typing.get_type_hints(cls).items() if name in fields
        }
    values = {}
    for name, annotation in hints.items():
        if name in data:
            values[name] = _checked(annotation, data[name], f"{cls.__name__}.{name}")
    try:
        return cls(**values)
    except TypeError as error:  # a required field is missing
        raise ProtocolError(f"{cls.__name__}: {error}") from None


def _checked(annotation: Any, value: Any, where: str) -> Any:
    shape = _shapes.get(id(annotation))
    if shape is None:
        shape = _shapes[id(annotation)] = (
            typing.get_origin(annotation),
            typing.get_args(annotation),
            dataclasses.is_dataclass(annotation),
        )
    origin, arguments, is_dataclass = shape
    if annotation is Any:
        return value
    if is_dataclass:
        return from_dict(annotation, value)
    if origin is Union:
        if value is None and type(None) in arguments:
            return None
        (inner,) = [argument for argument in arguments if argument is not type(None)]
        return _checked(inner, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return tuple(_checked(arguments[0], item, where) for item in value)
        if len(value) != len(arguments):
            raise ProtocolError(f"{where}: expected {len(arguments)} items, got {len(value)}")
        return tuple(_checked(kind, item, where) for kind, item in zip(arguments, value))
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is int and isinstance(value, bool):
        raise ProtocolError(f"{where}: expected int, got bool")
    if not isinstance(value, annotation):
        raise ProtocolError(f"{where}: expected {annotation.__name__}, got {type(value).__name__}")
    return value


def to_dict(value: Any) -> Dict[str, Any]:
    return dataclasses.asdict(value)


def encode(kind: str, **fields: Any) -> str:
    """One protocol line: a message of the given kind, dataclass fields turned into JSON objects."""
    payload = {"v": PROTOCOL_VERSION, "type": kind}
    for name, value in fields.items():
        is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
        payload[name] = to_dict(value) if is_instance else value
    return json.dumps(payload, separators=(",", ":"))


def decode(line: str) -> Dict[str, Any]:
    """Parse one protocol line, refusing a peer that speaks another version."""
    try:
        message = json.loads(line)
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from None
    version = message.get("v") if isinstance(message, dict) else None
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"gbls worker protocol version {version!r}, expected {PROTOCOL_VERSION}")
    if not isinstance(message.get("type"), str):
        raise ProtocolError("a message without a type")
    return message  # type: ignore[no-any-return]
