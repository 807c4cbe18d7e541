"""An analysis as the editor and the CLI show it: the worker's findings placed on the source.

One break type flows from the wire to every feature: ``BreakReport`` is the worker's ``Break``
as it arrived (``cause``) plus where it sits in the source, so hover, diagnostics, the CLI and
the fix catalogue all read the same object. Every finding names the workspace file it belongs
to: a break its root cause's (the ``print`` in ``model.py``), with the place where the compiled
function's graph splits beside it; a recompilation the file of its guarded code; a compiled
function the file of its compile site. ``views`` gives each file what belongs to it.
Everything is in characters here (1-based lines, 0-based columns, end exclusive); the LSP layer
converts to UTF-16 and the CLI to 1-based columns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Literal

from ..worker.shared import protocol
from ..worker.shared.protocol import (
    EAGER,
    Break,
    Code,
    Cost,
    Elided,
    Feature,
    Function,
    Graph,
    Guard,
    Outcome,
    Recompile,
    Shape,
    Stance,
)
from ..worker.shared.workspace import library_of
from . import words
from .ranges import Span

# How each setting that makes a break (or a recompile limit) raise is written in the user's code.
RAISING_SETTINGS = {
    "fullgraph": "fullgraph=True",
    "error_on_graph_break": "error_on_graph_break(True)",
    "fail_on_recompile_limit_hit": "torch._dynamo.config.fail_on_recompile_limit_hit = True",
}

# Hint classes that say Dynamo could trace the code, or is wrong about it: PyTorch's to act on.
PYTORCH_CLASSES = ("dynamo_bug", "supportable", "difficult")

# What identifies a break across publications, for code actions on a diagnostic: its function,
# gb_type, the line and column of its root cause and of its split site (one cause, two call paths).
BreakKey = tuple[str, str, int, int, int, int]
# What identifies a recompilation report likewise: function, frame (a resume frame with the line it
# resumes after), line and column of its span, and what its failed check is about.
RecompileKey = tuple[str, str, int, int, str]

# A call of ``torch._dynamo.graph_break()``: its GB id, and its gb_type on torch without ids.
GRAPH_BREAK_CALL = "GB0025"
GRAPH_BREAK_TYPE = "Call to `torch._dynamo.graph_break()`"

RECOMPILE_CODE = "recompile"
# A recompilation that hit the recompile limit: its SARIF rule, its type in a baseline.
LIMIT_CODE = "recompile-limit"
RECOMPILATION_DOCS = "https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.recompilation.html"


@dataclass(frozen=True)
class Provenance:
    """Where a finding imported from a real run's trace or log comes from (``gbls import``)."""

    trace: str  # the trace or log as given
    date: str  # when the run last wrote it
    ranks: tuple[int, ...] = ()  # the ranks that recorded it; () for a run of one process
    of_ranks: int = 0  # how many ranks the run had
    compile_ids: tuple[str, ...] = ()
    # The source lines it is shown on, as they read when it was imported: (path, line, text). A
    # finding whose line no longer reads so is of another version of the file, and is not shown.
    code: tuple[tuple[str, int, str], ...] = ()

    @property
    def said(self) -> str:
        """``trace runs/exp1 (2026-12-02 01:09), rank 3 only (of 8)``"""
        text = f"trace {self.trace}" + (f" ({self.date})" if self.date else "")
        if self.of_ranks > 1 and 0 < len(self.ranks) < self.of_ranks:
            ranks = ", ".join(map(str, self.ranks))
            text += f", rank{'s' * (len(self.ranks) > 1)} {ranks} only (of {self.of_ranks})"
        elif self.of_ranks > 1:
            text += f", all {self.of_ranks} ranks"
        return text


def imported_from(provenance: Provenance | None) -> str:
    """`` (from trace runs/t0 (2026-12-02 01:09), rank 3 only (of 8))`` for an imported finding,
    "" for one analysed here: what its message ends with, wherever it is shown."""
    return f" (from {provenance.said})" if provenance is not None else ""


@dataclass(frozen=True)
class Location:
    path: str
    function: str
    span: Span


@dataclass(frozen=True)
class BreakReport:
    cause: Break  # as the worker reported it
    path: str  # the workspace file it belongs to: its root cause's, else where the workspace compiled it
    span: Span  # there: the root cause as written, its last frame in the workspace, or the compile call
    chain: tuple[Location, ...]  # the cause's chain on exact spans: chain[0] splits, chain[-1] is the cause
    reason: str  # the root cause as written, shortened: "print", "x.sum().item", "x.sum() > 0"
    # Where the compiled function's graph splits (the call in it that leads to the cause), when that
    # is another place than ``span``.
    split: Location | None = None
    # Where the workspace called the compiled code, when its chain never enters the workspace (a
    # library model compiled here): the break sits on the compile call, this says who ran it.
    called_at: Location | None = None
    # What the analysing torch offers as escape hatches (the result's), for the fixes that need one.
    features: tuple[Feature, ...] = ()
    paths: tuple[tuple[Location, ...], ...] = ()  # every other chain to the same root cause
    provenance: Provenance | None = None  # imported from a real run's trace, not analysed here
    call: str = ""  # the root cause as written ("np.random.rand()"), "" where Python gives no columns
    # The compilations it cost: those Dynamo restarted for it, and the translations of the code
    # after it (the resume functions at its split).
    costs: tuple[Cost, ...] = ()

    @property
    def seconds(self) -> float:
        """The translation it cost: the restarts it caused (a compilation's restart time shared among
        the breaks that restarted it) and the translation of the code after it."""
        total = 0.0
        for cost in self.costs:
            if cost.resumes_at is not None:
                total += cost.seconds
            elif self.cause.gb_type in cost.restarts:  # torch's text, as its metrics name the restart
                total += cost.restart_seconds / len(cost.restarts)
        return total

    @property
    def function(self) -> str:
        return self.cause.function

    @property
    def functions(self) -> tuple[str, ...]:
        """Every compiled function that reached it, ``function`` first."""
        return self.cause.functions or (self.cause.function,)

    @property
    def explanation(self) -> str:
        """Dynamo's explanation in the user's words (``words``): its function, not its resume
        function; the call the user wrote, not its ATen operator."""
        return words.said(self.cause.explanation, self.call)

    @property
    def context(self) -> str:
        return words.said(self.cause.context, self.call)

    @property
    def hints(self) -> tuple[str, ...]:
        return tuple(words.said(hint, self.call) for hint in self.cause.hints)

    @property
    def eager_reason(self) -> str:
        """For an EAGER break: the break Dynamo raised when it gave up on the frame, in user words."""
        return words.said(self.cause.eager_reason, self.call)

    @property
    def gb_type(self) -> str:
        """Dynamo's name for the kind of break; before torch 2.7 its one line of text, in user words."""
        return words.said(self.cause.gb_type, self.call)

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
        split = self.split.span if self.split is not None else self.span
        return (self.function, self.gb_type, self.span.line, self.span.column, split.line, split.column)

    @property
    def splits_at(self) -> Location:
        """Where the compiled function's graph splits: ``split``, or the break's own place."""
        return self.split or Location(self.path, self.function, self.span)

    @property
    def via(self) -> tuple[str, ...]:
        return tuple(location.function for location in self.chain[1:])

    @property
    def root(self) -> Location:
        return self.chain[-1]

    @property
    def split_frame(self) -> Location:
        """The chain's frame where the graph splits: the compiled function's, or the callee's for a
        nested graph break (in whatever file; ``split`` is the same place in the workspace)."""
        return self.chain[min(self.cause.split, len(self.chain) - 1)]

    @property
    def nested(self) -> str:
        """For a nested graph break: ``splits in log_stats, keeping the code of g → normalize in the
        graphs``; else ""."""
        if self.cause.split <= 0 or not self.cause.nested:
            return ""
        callers = " → ".join(location.function for location in self.chain[: self.cause.split])
        return f"splits in {self.split_frame.function}, keeping the code of {callers} in the graphs"

    @property
    def own_frame(self) -> str:
        """For a break in a callee that runs as a frame of its own (its caller's graph split at the
        call, for an earlier break in it): ``summarize runs as a frame of its own: this splits its
        graph``; else ""."""
        if self.cause.split <= 0 or self.cause.nested:
            return ""
        return f"{self.split_frame.function} runs as a frame of its own: this splits its graph"

    @property
    def split_graph(self) -> str:
        """The function whose graph the break splits: the compiled function's, or the callee's that
        runs as a frame of its own (``own_frame``)."""
        return self.split_frame.function if self.own_frame else self.function

    @property
    def raises(self) -> str:
        """``fullgraph=True: this break raises at run time``, or "" when the program goes on past it."""
        setting = RAISING_SETTINGS.get(self.cause.raises)
        return f"{setting}: this break raises at run time" if setting else ""

    @property
    def library(self) -> str:
        """The installed package the root cause is in (``transformers``, ``torch``), or ""."""
        return library_of(self.root.path)

    @property
    def owner(self) -> str:
        """Who can act on it: ``pytorch`` (its hints say Dynamo could trace the code or is wrong, or the
        cause is in torch, or torch asks for it), ``library`` (the cause is in an installed package:
        ``library``), or ``user``."""
        pytorch = any(kind in PYTORCH_CLASSES for kind in self.cause.classes) or self.library == "torch"
        if pytorch or self.torch_asks:  # a cause in torch, or a break torch's own code asks for
            return "pytorch"
        return "library" if self.library else "user"

    @property
    def torch_asks(self) -> str:
        """For a ``torch._dynamo.graph_break()`` that torch's own code calls (``torch.optim``'s step asks
        for one), not the user's: ``torch's own graph_break(), inside `opt.step()``` (the chain folds
        torch's frames, so its root is the user's call into torch); else ""."""
        asked = self.cause.gb_id == GRAPH_BREAK_CALL or self.cause.gb_type.startswith(GRAPH_BREAK_TYPE)
        written = self.call or self.reason
        if not asked or not written or "graph_break" in written:
            return ""
        return f"torch's own graph_break(), inside `{written}`"

    @property
    def who(self) -> str:
        """``your code``, ``the library transformers``, or ``PyTorch``."""
        return {"pytorch": "PyTorch", "library": f"the library {self.library}"}.get(self.owner, "your code")

    @property
    def cost(self) -> tuple[int, int, int]:
        """What it costs, to order a function's breaks by: the function's frame left to eager mode (all
        of it, then the rest after a line) above a split, then the translations it cost (restarts, and
        the code after it: counted, so that the order is the same from run to run, as times are not),
        then how many compilations it split."""
        eager = 0 if self.effect != EAGER else 1 if self.cause.eager_from is not None else 2
        return (eager, len(self.costs), self.count)

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
            reason = self.eager_reason
            why = f": {reason.split(':')[0]}" if reason else ""
            text += f"; {self.function} {self.eager}{why}"
        if self.nested:
            text += f"; nested graph break: {self.nested}"
        elif self.own_frame:
            text += f"; {self.own_frame}"
        if self.also:
            text += f"; {self.also}"
        if self.torch_asks:
            text += f"; {self.torch_asks}"
        return f"{self.raises}: {text}" if self.raises else text

    @property
    def also(self) -> str:
        """``also reached from second, third``: the other compiled functions of one root cause, or ""."""
        others = self.functions[1:]
        return f"also reached from {', '.join(others)}" if others else ""


def costliest_first(breaks: tuple[BreakReport, ...]) -> tuple[BreakReport, ...]:
    """Breaks in the order to fix them: the costliest first, then by line."""
    return tuple(
        sorted(
            breaks,
            key=lambda brk: (-brk.cost[0], -brk.cost[1], -brk.cost[2], brk.span.line, brk.span.column),
        )
    )


def leading_guard(recompiles: tuple[Recompile, ...]) -> Guard | None:
    """The first failed check that says where it is, else the first: what a report of them is about."""
    guards = [recompile.guard for recompile in recompiles if recompile.guard is not None]
    return next((guard for guard in guards if guard.chain), guards[0] if guards else None)


def what_failed(guard: Guard | None) -> str:
    """What a failed check is about, as recompilations are grouped: its kind and what it checks (or
    its text, when it names nothing); checks of different things are never one report."""
    return f"{guard.kind}: {guard.subject or guard.text}" if guard else ""


@dataclass(frozen=True)
class RecompileReport:
    """One frame of a compiled function compiled again for one guarded thing, placed on its guard.

    A single recompilation is no problem (automatic dynamic shapes make the new graph dynamic, a
    flag has two values): it is ``settled`` and only the function's summary tells of it.
    """

    function: str
    frame: Code  # the frame compiled again: the function's own code, or a callee it re-entered
    direct: bool
    recompiles: tuple[Recompile, ...]  # in order; the last may be the one a recompile limit refused
    path: str  # the workspace file of ``span``
    span: Span  # the guarded expression, else the argument, else the function
    guard_at: Location | None  # where Dynamo installed the first failed check, in whatever file
    why: str  # "the value of `mode` changes between calls", or "" when the check says nothing
    suppressed: bool = False
    provenance: Provenance | None = None  # imported from a real run's trace, not analysed here
    # A resume frame of the function: the line of the break it resumes after (its own compilations).
    resumes_at: int | None = None
    # Where the checked value was computed, when Dynamo passed it across a graph break (the call the
    # function broke at: ``np.random.rand()``).
    origin: Location | None = None
    guarded: str = ""  # the code at ``guard_at`` as written (``range(n)``), "" where unknown
    changed: str = ""  # what changed, short: "grad mode", "the shape of `x`"
    costs: tuple[Cost, ...] = ()  # what its recompilations cost, as Dynamo measured them
    # Where the program raises at the recompile limit (fullgraph=True, or the config says so): the
    # call that went past it, in whatever file.
    raises_at: Location | None = None
    # torch's decisions about the sizes of what its checks are on (a shape's), for the fixes.
    shapes: tuple[Shape, ...] = ()
    # What the analysing torch offers (the result's), for the fixes that need one.
    features: tuple[Feature, ...] = ()

    @property
    def seconds(self) -> float:
        return sum(cost.seconds for cost in self.costs)

    @property
    def raises(self) -> str:
        """``fullgraph=True`` (how the program says that the recompile limit raises), or ""."""
        limit = self.limit
        return RAISING_SETTINGS.get(limit.raises, "") if limit is not None else ""

    @property
    def guard(self) -> Guard | None:
        return leading_guard(self.recompiles)

    @property
    def count(self) -> int:
        return len(self.recompiles)

    @property
    def limit(self) -> Recompile | None:
        """The recompilation a recompile limit refused, if one did."""
        return next((recompile for recompile in self.recompiles if recompile.limit), None)

    @property
    def settled(self) -> bool:
        return self.count == 1 and self.limit is None

    @property
    def dynamic(self) -> bool:
        return any(recompile.dynamic for recompile in self.recompiles)

    @property
    def code(self) -> str:
        return RECOMPILE_CODE

    @property
    def url(self) -> str:
        return RECOMPILATION_DOCS

    @property
    def key(self) -> RecompileKey:
        return (self.function, self.frame_name, self.span.line, self.span.column, what_failed(self.guard))

    @property
    def frame_name(self) -> str:
        """``pick``, or ``staged after line 7`` for the resume frame after a break at line 7."""
        after = f" after line {self.resumes_at}" if self.resumes_at is not None else ""
        return f"{self.frame.name}{after}"

    @property
    def who(self) -> str:
        """```pick` ``, ```staged` after its break at line 7`` (a resume frame), or ```helper` (called
        from `g`)``: the frame, as its compiled function runs it."""
        after = f" after its break at line {self.resumes_at}" if self.resumes_at is not None else ""
        if self.direct:
            return f"`{self.function}`{after}"
        return f"`{self.frame.name}`{after} (called from `{self.function}`)"

    @property
    def failed(self) -> str:
        """``guard `mode == 'a'` failed (the value of `mode` changes between calls)``"""
        guard = self.guard
        if guard is None or not guard.text:
            return "Dynamo gave no reason"
        return f"guard `{guard.text}` failed" + (f" ({self.why})" if self.why else "")

    @property
    def message(self) -> str:
        times = "once" if self.count == 1 else f"{self.count} times"
        text = f"{self.who} recompiled {times}: {self.failed}"
        limit = self.limit
        if limit is not None and self.raises:
            text += (
                f"; it hit the recompile limit ({limit.limit_value}), and with {self.raises} the call "
                "past it raises instead of running eagerly"
            )
        elif limit is not None:
            text += (
                f"; it hit the recompile limit ({limit.limit_value}), so from then on `{self.frame.name}` "
                f"runs in eager mode whenever none of its compiled versions fits the call"
            )
        return text

    @property
    def raise_message(self) -> str:
        """What the diagnostic on the call that raises says."""
        limit = self.limit
        if limit is None or not self.raises:
            return ""
        # FailOnRecompileLimitHit, as torch 2.7 and later raise it (2.6: RecompileLimitExceeded).
        return (
            f"{self.raises}: this call raises at the recompile limit: {self.who} hit it ({limit.limit}, "
            f"{limit.limit_value}) at compilation {limit.compile_id}, and {self.failed}"
        )


@dataclass(frozen=True)
class FunctionReport:
    target: Function  # as the worker reported it
    path: str  # the workspace file of ``span``
    line: int
    graphs: tuple[Graph, ...]
    breaks: int
    suppressed: int
    span: Span  # where its lens and hover anchor: the def name, or the compile call
    decorator: Span | None
    call: Span | None
    elided: tuple[Elided, ...] = ()  # its graphs whose values the analysis did not compute
    # The branch its compile call is in, which the run did not take ("`if is_speculative:` (line 58)
    # was false"): not analysed, and no failure: another run takes that branch.
    untaken: str = ""
    # What each of its compilations cost (its own frames, their resume functions, the callees it
    # re-entered), as Dynamo measured them, in order.
    costs: tuple[Cost, ...] = ()

    @property
    def seconds(self) -> float:
        """Its whole translation, as Dynamo measured it."""
        return sum(cost.seconds for cost in self.costs)

    def computed(self, compile_id: str) -> bool:
        """Whether the graph of the compilation ``compile_id`` was computed (not elided)."""
        return all(e.compile_id != compile_id for e in self.elided)

    @property
    def code_path(self) -> str:
        """The file of its code, whose lines its graphs name (``path`` is where it is anchored)."""
        return self.target.path or self.path

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

    @property
    def compilations(self) -> int:
        """Of all its own frames: its code, and its rest after each break (each compiled apart)."""
        return self.target.compilations

    @property
    def recompiled(self) -> bool:
        """Whether one of its own frames compiled more than once: its rest after a break is a frame of
        its own, compiled apart, and no recompilation."""
        return self.compilations > max(1, sum(1 for frame in self.target.frames if frame.own))

    @property
    def not_computed(self) -> str:
        """How its values were elided, in words ("" if they were computed)."""
        if not self.elided:
            return ""
        work = max(e.work for e in self.elided)
        return (
            f"its compiled code was not computed: a call of it is about {work:.1e} operations, so the "
            "analysis gave its outputs the traced shapes, zeros inside (the values setting)"
        )


@dataclass(frozen=True)
class ShapeReport:
    """A decision torch made about an input's size, on the line that decided it: the code that needed
    the size's value (``range(x.shape[0])``), else the input in its function's ``def``."""

    shape: Shape
    path: str
    span: Span
    code: str = ""  # the code that decided it, short: "range(x.shape[0])"; "" when the inputs did

    @property
    def what(self) -> str:
        """``dim 0 of `x` ``, or ```n` `` for a number."""
        shape = self.shape
        return f"dim {shape.dim} of `{shape.subject}`" if shape.dim is not None else f"`{shape.subject}`"

    @property
    def message(self) -> str:
        shape = self.shape
        at = f"compilation {shape.compile_id}"
        if shape.decision == "dynamic":
            if shape.reason == "rank_changed":
                return f"{self.what} made dynamic at {at}: its number of dimensions changed between calls"
            change = f" ({shape.value})" if shape.value else ""
            return (
                f"{self.what} made dynamic at {at}: it changed between calls{change}, so automatic dynamic "
                "shapes compiled it as a symbol"
            )
        if shape.reason == "zero_one":
            return (
                f"{self.what} specialized to {shape.value} at {at}: torch specializes sizes 0 and 1, so a "
                "size that is dynamic elsewhere compiles apart when it is 1"
            )
        by = f" by `{self.code}`" if self.code else " by the code"
        return (
            f"{self.what} specialized to {shape.value} at {at}{by}: the code needs its value, so each "
            "new value compiles again"
        )


# What each stance makes of torch.compile, and so of what an analysis of the code after it sees.
STANCES = {
    "force_eager": "from here on torch.compile compiles nothing: compiled functions run eagerly, and "
    "no break or recompilation of theirs is seen",
    "eager_on_recompile": "from here on a call that none of a function's compiled versions fits runs "
    "eagerly instead of recompiling: no recompilation is made, nor seen",
    "fail_on_recompile": "from here on a call that would recompile raises RuntimeError instead",
    "eager_then_compile": "from here on a compiled function's first call runs eagerly, and it compiles "
    "from its second call on",
    "aot_eager_then_compile": "from here on a compiled function's first call runs with aot_eager, and "
    "it compiles from its second call on",
    "default": "torch.compile is back to its default stance here",
    "other": "a stance gbls does not know",
}


@dataclass(frozen=True)
class StanceReport:
    """The program set torch.compile's stance here (``torch.compiler.set_stance``)."""

    stance: Stance
    span: Span

    @property
    def message(self) -> str:
        return f'torch.compiler.set_stance("{self.stance.stance}"): {STANCES[self.stance.stance]}'


@dataclass(frozen=True)
class CudaOnlyReport:
    """A call that needs a GPU, which gbls did not run because CUDA was mapped to the CPU."""

    call: str  # "torch.cuda.synchronize()", "torch.cuda.Event(...)"
    span: Span
    skipped: bool  # a statement of its own, left out; else a placeholder stood in for its value

    @property
    def message(self) -> str:
        done = (
            "gbls left it out"
            if self.skipped
            else "gbls did not run it, and a placeholder stood in for its value"
        )
        return f"not checkable here: `{self.call}` needs a GPU, and CUDA was mapped to the CPU: {done}"


@dataclass(frozen=True)
class CutReport:
    """Where the program was when the budget ended: gbls stopped it there, and every frame Dynamo had
    translated until then is reported. A program that runs on (a training loop of 600 000 steps) is
    cut, never failed."""

    seconds: float
    path: str  # the file of ``span``: the innermost of the workspace's on the program's stack
    span: Span | None
    script: str  # the analysed file, or the run's script
    script_span: Span | None  # the script's own line on that stack, when ``path`` is another file
    tracing: str = ""  # the function Dynamo was translating then, if it was

    def span_in(self, path: str) -> Span | None:
        """Where the cut shows in the file ``path``: on its line there, or on the script's own line."""
        if path == self.path:
            return self.span
        return self.script_span if path == self.script else None

    @property
    def where(self) -> str:
        """``train.py:288``, or ``model.py:120 (from train.py:301)``."""
        text = f"{os.path.basename(self.path)}:{self.span.line}" if self.span is not None else ""
        if self.script_span is not None and self.path != self.script:
            outer = f"{os.path.basename(self.script)}:{self.script_span.line}"
            text = f"{text} (from {outer})" if text else outer
        return text

    @property
    def message(self) -> str:
        """What the program was doing when gbls cut it, said as the note it is, not a failure."""
        where = f" at {self.where}" if self.where else ""
        if self.tracing:
            return (
                f"cut after {self.seconds:g} s{where}, while Dynamo was still translating `{self.tracing}`: "
                "its translation took the rest of the budget (the timeout setting); what Dynamo "
                "translated until then is reported"
            )
        return (
            f"cut after {self.seconds:g} s{where}: the program was still running, as a training loop "
            "does, and gbls stopped it at the end of its budget (the timeout setting); what Dynamo "
            "translated until then is reported"
        )


# Why a report failed: the worker's word (``protocol.FailureKind``), or the engine's own: "io" (the
# file could not be read), "internal" (gbls itself failed); "" when it did not fail.
FailureKind = Literal[protocol.FailureKind, "io", "internal", ""]


@dataclass(frozen=True)
class FileReport:
    path: str
    status: protocol.Status
    message: str
    failure_kind: FailureKind
    failure_span: Span | None
    functions: tuple[FunctionReport, ...]
    breaks: tuple[BreakReport, ...]
    suppressed: tuple[BreakReport, ...]
    output: str
    torch: str
    seconds: float
    notes: tuple[str, ...] = ()  # about the analysis itself: what gbls could not capture, and why
    recompiles: tuple[RecompileReport, ...] = ()  # suppressed ones too, each says so
    # The file of ``failure_span``, when not ``path`` (a run fails in any file).
    failure_path: str = ""
    # Breaks that belong to another place (their root cause) but split a compiled function's graph
    # in this file: a file's view shows them there too.
    splits: tuple[BreakReport, ...] = ()
    # The breaks of this file's compiled functions that belong to other files: its summaries count them.
    elsewhere: tuple[BreakReport, ...] = ()
    # The workspace files the analysis executed: an edit of any of them can change its results.
    executed: tuple[str, ...] = ()
    origin: str = ""  # the analysis this came from: "" for the file's own, else the run's name
    # Dynamo translated code of this file (a compiled function, or code one of them called): its
    # findings are real, even when there are none. A file only executed eagerly is not analysed.
    translated: bool = True
    cuda_only: tuple[CudaOnlyReport, ...] = ()  # calls not run, CUDA being mapped to the CPU
    cut: CutReport | None = None  # the program was still running when the budget ended
    elided: tuple[Elided, ...] = ()  # the analysis's graphs whose values it did not compute
    # The files whose analyses (a run's: its script) found what a view of another file shows.
    reached_from: tuple[str, ...] = ()
    # What the program returned from its compiled calls and printed: what a fix must keep.
    outcome: Outcome = field(default_factory=Outcome)
    shapes: tuple[ShapeReport, ...] = ()  # torch's decisions about the inputs' sizes, in this file
    stances: tuple[StanceReport, ...] = ()  # the program's set_stance calls in this file, but default

    def find(self, key: BreakKey) -> BreakReport | None:
        return next((brk for brk in self.breaks + self.splits if brk.key == key), None)

    def breaks_of(self, qualname: str) -> tuple[BreakReport, ...]:
        """Every break of the compiled function ``qualname``, wherever it belongs."""
        return tuple(b for b in self.breaks + self.elsewhere if qualname in b.functions)

    def find_recompile(self, key: RecompileKey) -> RecompileReport | None:
        return next((found for found in self.recompiles if found.key == key), None)

    @property
    def problems(self) -> tuple[RecompileReport, ...]:
        """The recompilations worth a diagnostic: more than one, or a limit hit, and not suppressed."""
        return tuple(r for r in self.recompiles if not r.settled and not r.suppressed)

    def recompiles_of(self, qualname: str) -> tuple[RecompileReport, ...]:
        return tuple(r for r in self.recompiles if r.function == qualname)

    def shapes_of(self, qualname: str) -> tuple[ShapeReport, ...]:
        return tuple(found for found in self.shapes if found.shape.function == qualname)


@dataclass(frozen=True)
class FileView(FileReport):
    """One file's view of the analyses that reached it (``views``): ``path`` is that file, and the
    findings are those that belong to it, the breaks that split a graph in it and its compiled
    functions' breaks in other files; the analysis's own fields (output, torch, seconds, executed,
    origin) are its analysis's. What the editor shows and ``gbls check`` prints, file by file."""


def failure_report(path: str, kind: FailureKind, message: str) -> FileReport:
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
