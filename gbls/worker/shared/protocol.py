"""The versioned JSON wire format between the gbls server and its worker.

Both sides import this module: the server as ``gbls.worker.shared.protocol``, the worker as part
of its private package. It uses only the standard library (the worker runs in the user's
interpreter, Python 3.10 or newer).

Everything that crosses a process boundary is a frozen dataclass, checked field by field when it
is read back (``from_dict``): what arrives may have been written by the analysed code, so a
message that does not fit raises ``ProtocolError`` instead of crashing whoever reads it. Each line
between the server and the worker is one of ``LINE_KINDS``, by its ``type`` (``encode``, ``decode``).
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, Union

PROTOCOL_VERSION = 12

# The fixed values of the wire, each checked by ``from_dict`` like any other field.
# A program still running when the budget ends is cut, not failed: its result is "ok", with its ``Cut``.
Status = Literal["ok", "error", "cancelled"]
OK: Final = "ok"
ERROR: Final = "error"
CANCELLED: Final = "cancelled"

# The graph splits at the break, or Dynamo gives up on the whole frame.
Effect = Literal["split", "eager"]
SPLIT: Final = "split"
EAGER: Final = "eager"

# What makes a break raise in the user's program instead of splitting the graph: the compiled
# function's ``fullgraph=True``, or ``torch._dynamo.error_on_graph_break(True)`` around it; what
# makes a recompile limit raise instead of running eagerly: ``fullgraph=True``, or
# ``torch._dynamo.config.fail_on_recompile_limit_hit``.
Raises = Literal["", "fullgraph", "error_on_graph_break", "fail_on_recompile_limit_hit"]
# The classes torch gives its hints (``torch._dynamo.graph_break_hints``): what kind of break it is.
HintClass = Literal[
    "user_error", "dynamo_bug", "difficult", "fundamental", "supportable", "caused_by_earlier_break"
]
# What the user's torch offers as an escape hatch, for the fixes offered only where it is.
Feature = Literal[
    "nested_graph_breaks",  # torch._dynamo.config.nested_graph_breaks
    "print_hop",  # torch._higher_order_ops.print: a print traced into the graph
    "ignore_logging_functions",  # torch._dynamo.config.ignore_logging_functions
    "compiler_nonstrict_trace",  # torch.compiler.nonstrict_trace
    "dynamo_nonstrict_trace",  # torch._dynamo.nonstrict_trace
    "custom_op",  # torch.library.custom_op
    "disable_nested_graph_breaks",  # torch._dynamo.disable_nested_graph_breaks
    "check",  # torch._check: a condition the compiler may assume, checked when the code runs
    "recompile_limit_argument",  # torch.compile(recompile_limit=N): a limit for one compile call
    "isolate_recompiles",  # torch.compile(isolate_recompiles=True): a compile call's own compilations
    "dynamic_shapes_argument",  # torch.compile(dynamic_shapes=...): which sizes are dynamic, by spec
    "shapes_spec_argument",  # the same spec under its first name, torch.compile(shapes_spec=...)
    "mark_unbacked",  # torch._dynamo.mark_unbacked: a size dynamic without 0/1 specialization
    "mark_unbacked_bounds",  # mark_unbacked(..., min=, max=)
    "leaf_function",  # torch._dynamo.decorators.leaf_function: a function run eagerly inside the graph
    "reorderable_logger_methods",  # a logging.Logger method in reorderable_logging_functions
]
# How the program's ``torch.compiler.set_stance`` makes torch.compile behave (torch's own names).
StanceName = Literal[
    "default",
    "force_eager",
    "eager_on_recompile",
    "fail_on_recompile",
    "eager_then_compile",
    "aot_eager_then_compile",
    "other",
]
# What torch decided about a size: made it dynamic (automatic dynamic shapes: it changed between
# calls), or specialized it to a constant (the code needed its value, or it is 0 or 1).
ShapeDecision = Literal["dynamic", "specialized"]
# Why: it changed between calls (a size, or a number), its number of dimensions changed, the code
# needed its value, or it is 0 or 1 (torch specializes those, whatever it was told).
ShapeReason = Literal["changed", "rank_changed", "code", "zero_one"]

TargetKind = Literal["function", "method", "module"]
# Where the analysed code's CUDA goes: the CPU when CUDA cannot be used (auto), always (cpu), or the
# GPU, shown to the analysis, when torch can use it (cuda).
Device = Literal["auto", "cpu", "cuda"]
InputSource = Literal["", "module", "example", "synthesized"]
# What compiled graphs compute: their values where that is cheap, their outputs' metadata alone where
# it is not (auto: translate, don't compute), or every value (exact).
Values = Literal["auto", "exact"]
GuardKind = Literal[
    "value",
    "shape",
    "dtype",
    "requires_grad",
    "tensor",
    "type",
    "identity",
    "length",
    "global_state",
    "other",
]
FailureKind = Literal[
    "syntax",  # the file does not parse, or is not in its encoding
    "import",  # an ImportError
    "raised",  # any other exception of the program's
    "exit",  # sys.exit, os._exit, or the process exited before the analysis ended
    "stdin",  # read from the closed stdin
    "memory",  # past the memory limit, or killed by the kernel for memory
    "network",  # the sandbox cut the network it wanted
    "write",  # it wrote where the sandbox refuses
    "timeout",  # past the CPU-time limit (a program past the wall-clock budget is cut, not failed)
    "crashed",  # a fatal signal
    "processes",  # more processes than allowed
    "flood",  # more events, or a longer event line, than any analysis makes
    "cancelled",  # a newer request replaced it
    "worker",  # gbls's own worker failed
    "tampered",  # the analysed code replaced what gbls relies on, or forged events
    "truncated",  # gbls dropped events past its bounds
    "shadow",  # a workspace file shadows a module torch imports
    "disabled",  # Dynamo was switched off
]


class ProtocolError(ValueError):
    """A message that does not fit the protocol: another version, malformed, or forged."""


@dataclass(frozen=True)
class Frame:
    """One frame of a break's chain. Columns are UTF-8 byte offsets as CPython reports them."""

    path: str
    function: str
    line: int
    column: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Message:
    """One structured graph-break message, as Dynamo formats it."""

    gb_type: str
    context: str
    explanation: str
    hints: tuple[str, ...]
    gb_id: str | None = None
    url: str | None = None
    # What the user's torch or Python does not say about it, and what gbls filled in instead.
    gaps: tuple[str, ...] = ()
    # The classes of its hints, as torch classes them (2.9+; none in 2.6).
    classes: tuple[HintClass, ...] = ()


@dataclass(frozen=True)
class Break:
    """One root cause of a graph break in one compiled function."""

    function: str
    gb_type: str
    gb_id: str | None
    url: str | None
    explanation: str
    hints: tuple[str, ...]
    context: str
    chain: tuple[Frame, ...]
    count: int = 1
    effect: Effect = SPLIT
    # For EAGER breaks: the break Dynamo raised when it gave up on the frame (e.g. "graph break in loop").
    eager_reason: str = ""
    # For EAGER breaks in a resume function: the line after which the function runs eagerly (else the
    # whole function does).
    eager_from: int | None = None
    # What the user's torch or Python does not say about it (no GB id in its registry, no columns).
    gaps: tuple[str, ...] = ()
    # Where the analysed file called the compiled code, when the chain never enters the file.
    called_at: Frame | None = None
    # The frame of ``chain`` whose graph splits: 0, the compiled function's own, unless the break is
    # in a callee whose own graph it splits: Dynamo resumed in the inlined callee (``nested``: nested
    # graph breaks, the callers' code around the break stays in the graphs), or the callee runs as a
    # frame of its own (its caller's graph split at the call, for an earlier break in it).
    split: int = 0
    nested: bool = False
    # Whether the user's program raises at it, and why ("": it does not).
    raises: Raises = ""
    # The classes of its hints, as torch classes them.
    classes: tuple[HintClass, ...] = ()
    # Every other chain that leads to the same root cause (a library function reached on two paths,
    # or from two lines of the compiled function): one cause, one break.
    paths: tuple[tuple[Frame, ...], ...] = ()
    # The program's processes it happened in, when other interpreters than the analysed one (each
    # rank of a spawned group) ran its function: "main process", "rank 0", "rank 1"; else empty.
    processes: tuple[str, ...] = ()
    # The compilations that hit it (its function's own, else the re-entered callees'), in order.
    compile_ids: tuple[str, ...] = ()
    # Every compiled function that reached it, ``function`` first: one root cause, however many
    # compiled functions traced their way to it (the others' chains are among ``paths``).
    functions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Graph:
    """One FX graph Dynamo produced while running a compiled function."""

    function: str
    frame: str
    ops: int
    first_line: int | None = None
    compile_id: str = ""  # the compilation that made it ("" when the trace does not say)


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
    kind: GuardKind = "other"
    subject: str = ""  # what it checks, as the source names it: "mode", "x", "self.scale", "ACT"
    is_global: bool = False  # the subject is a global of the function's module
    hint: str = ""  # Dynamo's own advice, when it gives one
    # Where Dynamo installed it, outermost frame first; empty when this torch does not say.
    chain: tuple[Frame, ...] = ()
    # Where the value it checks was computed, when Dynamo passed it across a graph break: the call the
    # function broke at (``subject`` is that call as written: ``np.random.rand()``).
    origin: Frame | None = None


@dataclass(frozen=True)
class Recompile:
    """One recompilation: a call that none of a frame's compiled versions accepted."""

    function: str  # the compiled function's qualname
    frame: Code  # the frame compiled again: the function's own code, or a callee it re-entered
    direct: bool  # the function's own frame (or one of its resume functions), not a re-entered callee
    compile_id: str  # the new compilation's: "0/1"
    guard: Guard | None = None  # the check the newest compiled version failed; None if this torch hides it
    dynamic: bool = False  # the new compilation traced symbolic shapes or sizes (automatic dynamic)
    # The recompile limit it ran into instead of compiling ("recompile_limit"; before torch 2.7
    # "cache_size_limit"), and its value; from then on the frame runs its compiled versions or eagerly.
    limit: str = ""
    limit_value: int = 0
    # A resume frame of ``frame``'s function: the line of the break it resumes after. Dynamo compiles
    # the rest of a function after a break as a frame of its own, with compilations of its own.
    resumes_at: int | None = None
    # What the limit does in the program: it raises (``FailOnRecompileLimitHit``) instead of running
    # the frame eagerly, and why; "" when it does not, or no limit was hit.
    raises: Raises = ""
    called_at: Frame | None = None  # the program's own innermost frame that made the call


@dataclass(frozen=True)
class Compiled:
    """One frame Dynamo translated in a compiled function's calls, and each of its compilations."""

    frame: str  # the function it runs, as the user wrote it
    path: str
    line: int  # its code's first line; a resume frame's function's
    # A resume frame: the line of the break it resumes after (the rest of its function, compiled apart).
    resumes_at: int | None = None
    own: bool = True  # the function's own frame or a resume frame of it; False: a callee it re-entered
    # Dynamo's compile id of each time it translated the frame, in order: "3/0", "3/1", ...
    compile_ids: tuple[str, ...] = ()
    refused: int = 0  # how many of them a recompile limit stopped before they compiled

    @property
    def compilations(self) -> int:
        return len(self.compile_ids) - self.refused


@dataclass(frozen=True)
class Cost:
    """What one compilation (a compile id) cost, as Dynamo measured it in the run: its translation
    (``seconds``, the backend's part included: Inductor's in a real run, next to nothing in an
    analysis), the guards its compiled code checks on every call, its graphs and their ops, and the
    restarts of its translation (each one translates the frame again from its start)."""

    function: str  # the compiled function's qualname
    frame: str  # the frame it translated, as the user wrote it
    compile_id: str
    own: bool = True  # the function's own frame (or a resume function of it), not a re-entered callee
    resumes_at: int | None = None  # for a resume function: the line it resumes after
    seconds: float = 0.0
    backend_seconds: float = 0.0
    guards: int = 0
    shape_guards: int = 0  # of the guards, those on symbolic sizes
    graphs: int = 0
    ops: int = 0
    # Why Dynamo restarted the translation: the gb_type of each break it restarted for, as ``Break``'s.
    restarts: tuple[str, ...] = ()
    restart_seconds: float = 0.0  # spent before the restarts: translation thrown away


@dataclass(frozen=True)
class Shape:
    """A decision torch made about a size of a compiled function's input, in one compilation."""

    function: str
    compile_id: str
    decision: ShapeDecision
    subject: str  # the input, as the source names it: "x", "self.n"
    dim: int | None  # the dimension of a tensor; None for a number (an int argument)
    value: str  # specialized: the constant; dynamic: the sizes it had, "4 → 6"
    reason: ShapeReason
    rank: int = 0  # the tensor's number of dimensions, when torch said (0: not known)
    # Where the code decided it (a specialization's ``range(n)``, ``int(n)``, ``if n == 4``), outermost
    # frame first; empty when torch does not say, or the inputs decided (a size that changed).
    chain: tuple[Frame, ...] = ()


@dataclass(frozen=True)
class Stance:
    """The program called ``torch.compiler.set_stance`` (or left a ``with`` of it) there."""

    stance: StanceName
    path: str
    line: int


@dataclass(frozen=True)
class Function:
    """A compiled function or module of the analysed file, and how it was run."""

    name: str
    qualname: str
    path: str
    line: int
    kind: TargetKind = "function"
    analysed: bool = False
    reason: str = ""
    inputs: str = ""
    input_source: InputSource = ""
    fullgraph: bool = False
    # Everything its results depend on in the source; empty when this torch cannot say.
    reached: tuple[Code, ...] = ()
    # The ``StaticTarget.id`` of the compile site it is, or "" when the source shows none.
    site: str = ""
    # How many times Dynamo compiled its own frames (its code, and each resume frame of it after a
    # break), as torch counts them: each frame's first compilation and recompilations, none a recompile
    # limit stopped. ``frames`` has each frame's, and the callees it re-entered.
    compilations: int = 0
    # Where torch.compile ran for it (0: nowhere the analysis could see), for code outside the file.
    call_line: int = 0
    call_path: str = ""
    # The compiled function whose graphs hold its code, when it only ever ran traced inline in that
    # one's (a compiled module called inside a compiled step): analysed, as part of that function.
    inlined: str = ""
    # The program's processes that compiled it, when others than the analysed one did (as Break's).
    processes: tuple[str, ...] = ()
    # Where the program's own code first called it (a library's own compiled function).
    called_at: Frame | None = None
    # Each frame Dynamo translated in its calls, with its compile ids: its own, its resume frames, then
    # the callees it re-entered from their eager parts.
    frames: tuple[Compiled, ...] = ()


@dataclass(frozen=True)
class Failure:
    """Why an analysis stopped early, and where if known: in the analysed file, or in ``path``."""

    kind: FailureKind
    message: str
    line: int | None = None
    column: int | None = None
    path: str = ""  # a run's failure in another workspace file than its entry


@dataclass(frozen=True)
class Cut:
    """Where the program was when the budget ended: gbls stopped it there, as Ctrl-C would."""

    seconds: float  # the budget it ran for
    line: int | None = None  # in the analysed file, or in ``path``
    path: str = ""  # the file of ``line``, when it is not the analysed file (a run's other files)
    tracing: str = ""  # the function Dynamo was translating then, if it was
    script_line: int | None = None  # the analysed file's own innermost line then, when ``path`` is another


@dataclass(frozen=True)
class Elided:
    """A compiled graph whose calls returned outputs of the right metadata, zeros inside, instead of
    computing: one call of it would have computed ``work`` element-operations."""

    function: str  # the compiled function's qualname
    frame: str  # the frame the graph is of, as the user wrote it
    compile_id: str
    work: int


@dataclass(frozen=True)
class CudaOnly:
    """A call of the analysed file that needs a GPU, not run because CUDA was mapped to the CPU.

    Columns are UTF-8 byte offsets, as the syntax tree gives them.
    """

    call: str  # "torch.cuda.synchronize()", "torch.cuda.Event(...)"
    line: int
    column: int
    end_column: int  # on its last line
    skipped: bool  # a statement of its own, left out; else a placeholder stood in for its value


CALLS_RECORDED = 8  # the calls of each compiled function whose results are recorded: its first ones


@dataclass(frozen=True)
class Returned:
    """What a call the program made of a compiled function returned: its structure, types and shapes
    as words, its numbers as numbers (a float's repr), for comparison with another run's."""

    function: str  # the compiled function's qualified name (a module's class)
    call: int  # which of its calls, from 0
    value: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """What the analysed program did, for the proofs of fixes: what its calls of compiled functions
    returned (their first ones) and what it printed."""

    returns: tuple[Returned, ...] = ()
    printed: str = ""  # what it wrote to sys.stdout: its first 64 KiB
    whole: bool = True  # ``printed`` is all it wrote
    recorded: bool = False  # the analysis recorded it (it did not end before, nor in a way that lost it)


@dataclass(frozen=True)
class StaticTarget:
    """A compiled target the server found in the source, sent so that none is skipped silently."""

    id: str
    name: str
    qualname: str
    kind: TargetKind
    line: int
    first_line: int
    in_main_block: bool = False  # runs only when the file runs as a script
    end_line: int = 0  # the compile call's last line
    scope: str = ""  # the function whose body holds the compile call; "" at module level
    generic: bool = False  # it compiles what its enclosing function is given (a decorator's call)


@dataclass(frozen=True)
class Settings:
    timeout: float = 20.0
    memory_mb: int = 4096
    run_main: bool = True
    device: Device = "auto"
    values: Values = "auto"
    max_processes: int = 64
    max_output: int = 64 * 1024


@dataclass(frozen=True)
class Run:
    """A project started as its users start it: ``python SCRIPT ARGS`` or ``python -m MODULE ARGS``,
    in a working directory, with extra environment variables."""

    name: str
    script: str = ""  # an absolute path; or
    module: str = ""  # a module name, found as ``python -m`` finds it (the working directory first)
    args: tuple[str, ...] = ()
    cwd: str = ""  # absolute
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Request:
    id: str
    path: str  # the analysed file; for a run, its script (or the module's file, if the server found it)
    source: str  # the analysed file's text (an unsaved buffer is fine); a run reads every file from disk
    settings: Settings = field(default_factory=Settings)
    targets: tuple[StaticTarget, ...] = ()
    workspace: str = ""
    # Targets (qualnames, in the analysed file) whose last results still hold: left eager, not translated.
    reuse: tuple[str, ...] = ()
    run: Run | None = None
    # A file's analysis runs it from here, as ``python FILE`` started in this folder would ("": in a
    # scratch directory of its own), writes going to a throwaway layer; as ``python -m module`` from
    # here, when ``module`` is given (a module of a package that imports its own package).
    cwd: str = ""
    module: str = ""


@dataclass(frozen=True)
class Result:
    path: str
    status: Status
    failure: Failure | None = None
    functions: tuple[Function, ...] = ()
    breaks: tuple[Break, ...] = ()
    graphs: tuple[Graph, ...] = ()
    recompiles: tuple[Recompile, ...] = ()
    output: str = ""
    torch: str = ""
    seconds: float = 0.0
    notes: tuple[str, ...] = ()  # about the analysis itself: what gbls could not capture, and why
    # The workspace files the analysis executed (the analysed file, the modules it imported from the
    # workspace): an edit of any of them can change the result.
    executed: tuple[str, ...] = ()
    # CUDA-only calls of the analysed file that gbls did not run, CUDA being mapped to the CPU.
    cuda_only: tuple[CudaOnly, ...] = ()
    # What the analysing torch offers as escape hatches, for the fixes that need them.
    features: tuple[Feature, ...] = ()
    cut: Cut | None = None  # the program was still running when the budget ended
    elided: tuple[Elided, ...] = ()  # the graphs whose values were not computed
    outcome: Outcome = field(default_factory=Outcome)
    costs: tuple[Cost, ...] = ()  # what each compilation cost, as Dynamo measured it
    shapes: tuple[Shape, ...] = ()  # torch's decisions about the inputs' sizes
    stances: tuple[Stance, ...] = ()  # the program's set_stance calls, in order


@dataclass(frozen=True, kw_only=True)
class ReadyLine:
    """The worker imported torch and takes requests: what it runs with."""

    type: Literal["ready"] = "ready"
    torch: str
    python: str
    executable: str
    sandbox: str
    # The folder of the analyses' scratch directories, which the server removes once the worker is
    # gone (a killed worker cannot); under bwrap it is in the sandbox's own /tmp, gone with it.
    scratch: str


@dataclass(frozen=True, kw_only=True)
class FatalLine:
    """The worker cannot start (torch does not import), and exits."""

    type: Literal["fatal"] = "fatal"
    message: str


@dataclass(frozen=True, kw_only=True)
class AliveLine:
    """The worker is at work on an analysis, sent every second: the server tells busy from hung."""

    type: Literal["alive"] = "alive"


@dataclass(frozen=True, kw_only=True)
class AnalyseLine:
    """Analyse ``request``, in a child of the worker's own."""

    type: Literal["analyse"] = "analyse"
    request: Request


@dataclass(frozen=True, kw_only=True)
class CancelLine:
    """Stop the analysis of request ``id``: a newer request replaced it."""

    type: Literal["cancel"] = "cancel"
    id: str


@dataclass(frozen=True, kw_only=True)
class ResultLine:
    """The answer to request ``id``, once its analysis ended."""

    type: Literal["result"] = "result"
    id: str
    # A ``Result``, checked by the server apart from the line: a malformed one still answers its
    # request (as tampered with) instead of leaving it to its deadline.
    result: object


Line = ReadyLine | FatalLine | AliveLine | AnalyseLine | CancelLine | ResultLine
_LINES: tuple[type[Line], ...] = (ReadyLine, FatalLine, AliveLine, AnalyseLine, CancelLine, ResultLine)
LINE_KINDS: dict[str, type[Line]] = {cls.type: cls for cls in _LINES}


T = TypeVar("T")
_hints: dict[type, dict[str, Any]] = {}
# By id of annotation (they live in _hints for good): its origin, its arguments, whether it is a
# dataclass. typing is slow to ask, and slow to hash its annotations.
_shapes: dict[int, tuple[Any, tuple[Any, ...], bool]] = {}


def from_dict(cls: type[T], data: Any) -> T:
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
    if origin is Literal:
        if value not in arguments or not isinstance(value, str):
            raise ProtocolError(f"{where}: {value!r} is none of {', '.join(map(repr, arguments))}")
        return value
    if origin is Union or origin is types.UnionType:
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
        return tuple(_checked(kind, item, where) for kind, item in zip(arguments, value, strict=False))
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation is int and isinstance(value, bool):
        raise ProtocolError(f"{where}: expected int, got bool")
    if not isinstance(value, annotation):
        raise ProtocolError(f"{where}: expected {annotation.__name__}, got {type(value).__name__}")
    return value


def to_dict(value: Any) -> dict[str, Any]:
    return dataclasses.asdict(value)


def encode(line: Line) -> str:
    """One protocol line, without its newline: ``{"v":PROTOCOL_VERSION,"type":"cancel","id":"..."}``."""
    return json.dumps({"v": PROTOCOL_VERSION, **to_dict(line)}, separators=(",", ":"))


def decode(text: str) -> Line:
    """One protocol line back as its dataclass, refusing a peer that speaks another version."""
    try:
        message = json.loads(text)
    except ValueError as error:
        raise ProtocolError(f"not JSON: {error}") from None
    version = message.get("v") if isinstance(message, dict) else None
    if version != PROTOCOL_VERSION:
        raise ProtocolError(f"gbls worker protocol version {version!r}, expected {PROTOCOL_VERSION}")
    kind = message.get("type")
    cls = LINE_KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"a message of no known type: {kind!r}")
    return from_dict(cls, message)
