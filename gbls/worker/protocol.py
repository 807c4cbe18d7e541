"""The versioned JSON wire format between the gbls server and its worker.

Both sides import this module: the server as ``gbls.worker.protocol``, the worker as part of
its private package. It uses only the standard library and must stay importable on every
Python that torch supports, so no syntax newer than 3.9 is evaluated at run time.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

PROTOCOL_VERSION = 1

# Result.status values
OK = "ok"
ERROR = "error"
TIMEOUT = "timeout"
CANCELLED = "cancelled"

# Break.effect values: the graph splits at the break, or Dynamo gives up on the whole frame.
SPLIT = "split"
EAGER = "eager"


@dataclass(frozen=True)
class Frame:
    """One frame of a break's chain. Columns are UTF-8 byte offsets as CPython reports them."""

    path: str
    function: str
    line: int
    column: Optional[int] = None
    end_column: Optional[int] = None


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


@dataclass(frozen=True)
class Graph:
    """One FX graph Dynamo produced while running a compiled function."""

    function: str
    frame: str
    ops: int
    first_line: Optional[int] = None
    last_line: Optional[int] = None


@dataclass(frozen=True)
class Code:
    """A function Dynamo translated or inlined while running a compiled target."""

    path: str
    line: int  # its code object's first line: the first decorator's, if it has any
    name: str


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

    name: str
    qualname: str
    kind: str  # function | method | module
    line: int
    first_line: int
    in_main_block: bool = False


@dataclass(frozen=True)
class Settings:
    timeout: float = 20.0
    memory_mb: int = 4096
    run_main: bool = False
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
    output: str = ""
    torch: str = ""
    seconds: float = 0.0


def _build(cls: Any, data: Any) -> Any:
    """Rebuild a dataclass (and nested ones) from its JSON form, ignoring unknown keys."""
    if not dataclasses.is_dataclass(cls):
        return data
    kwargs = {}
    hints = {f.name: f for f in dataclasses.fields(cls)}
    for name, value in data.items():
        f = hints.get(name)
        if f is None:
            continue
        kwargs[name] = _convert(f.type, value)
    return cls(**kwargs)  # type: ignore[operator]


_NESTED = {
    "Code": Code,
    "Frame": Frame,
    "Break": Break,
    "Graph": Graph,
    "Function": Function,
    "Failure": Failure,
    "StaticTarget": StaticTarget,
    "Settings": Settings,
}


def _convert(annotation: Any, value: Any) -> Any:
    text = str(annotation)
    if value is None:
        return None
    for name, cls in _NESTED.items():
        if text in (name, f"Optional[{name}]"):
            return _build(cls, value)
        if text.startswith("Tuple[") and f"[{name}," in text:
            return tuple(_build(cls, item) for item in value)
    if text.startswith("Tuple["):
        return tuple(value)
    return value


def encode(kind: str, **fields: Any) -> str:
    """One protocol line: a message of the given kind, dataclass fields turned into JSON objects."""
    payload = {"v": PROTOCOL_VERSION, "type": kind}
    for name, value in fields.items():
        is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
        payload[name] = dataclasses.asdict(value) if is_instance else value
    return json.dumps(payload, separators=(",", ":"))


def decode(line: str) -> Dict[str, Any]:
    """Parse one protocol line, refusing a peer that speaks another version."""
    message = json.loads(line)
    version = message.get("v") if isinstance(message, dict) else None
    if version != PROTOCOL_VERSION:
        raise ValueError(f"gbls worker protocol version {version!r}, expected {PROTOCOL_VERSION}")
    return message  # type: ignore[no-any-return]


def from_dict(cls: Any, data: Dict[str, Any]) -> Any:
    return _build(cls, data)
