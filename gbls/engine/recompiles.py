"""Recompilations placed on the source: grouped by frame and by what changed, on the guarded code.

A group is one frame of a compiled function that Dynamo compiled again because the same thing
changed between calls (the value of ``mode``, the shape of ``x``, the global ``ACT``). It sits
where Dynamo installed the check that failed first, when this torch says where (the innermost
frame in the workspace; narrowed to what the check is on when only the line is known); else on
the argument in the ``def`` line, when the check is on an argument; else on the function.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..worker.shared import directives
from ..worker.shared.protocol import Code, Feature, Frame, Guard, Recompile, Shape
from .discovery import arguments_of, definitions
from .fixes.syntax import node_span
from .model import RECOMPILE_CODE, FunctionReport, Location, RecompileReport, leading_guard, what_failed
from .ranges import Span, span_of, written
from .sources import parse

Text = Callable[[str], str]

WHAT = {
    "shape": "the shape of {}",
    "dtype": "the dtype of {}",
    "requires_grad": "whether {} requires grad",
    "tensor": "a property of the tensor {}",
    "type": "the type of {}",
    "length": "the length of {}",
}


def describe(guard: Guard | None) -> str:
    """What a failed check says changed between calls, in words, or "" when it says nothing."""
    if guard is None:
        return ""
    subject = f"`{guard.subject}`"
    if guard.origin is not None and guard.subject:
        at = guard.origin
        what = WHAT.get(guard.kind, "the value of {}") if guard.kind != "identity" else "the object {}"
        held = f"held across the graph break at line {at.line} of `{at.function}`"
        return f"{what.format(subject)}, {held}, changes between calls"
    if guard.kind == "value" and guard.subject:
        if guard.is_global:
            return f"the global {subject} changes between calls"
        if "." in guard.subject:
            return f"{subject} changes between calls"
        return f"the value of {subject} changes between calls"
    if guard.kind in WHAT and guard.subject:
        return WHAT[guard.kind].format(subject) + " changes between calls"
    if guard.kind == "identity" and guard.subject:
        return f"{subject} is a different object from call to call"
    if guard.kind == "global_state":
        return "torch's global state (grad mode, default dtype, ...) changes between calls"
    return ""


def what_changed(guard: Guard | None) -> str:
    """What a failed check says changed, short, for a sentence's end: "grad mode", "the shape of `x`",
    the value of `mode`; "" when the check says nothing."""
    if guard is None:
        return ""
    subject = f"`{guard.subject}`"
    if guard.kind == "global_state":
        state = guard.text.partition(":")[2].strip()
        return state.replace("_", " ") if state else "torch's global state"
    if guard.kind == "value" and guard.subject:
        if guard.is_global:
            return f"the global {subject}"
        return subject if "." in guard.subject else f"the value of {subject}"
    if guard.kind in WHAT and guard.subject:
        return WHAT[guard.kind].format(subject)
    if guard.kind == "identity" and guard.subject:
        return f"the object {subject}"
    return f"`{guard.text}`" if guard.text else ""


def recompile_reports(
    path: str,
    recompiles: tuple[Recompile, ...],
    functions: tuple[FunctionReport, ...],
    text: Text,
    own: Callable[[str], bool],
    shapes: tuple[Shape, ...] = (),
    features: tuple[Feature, ...] = (),
) -> tuple[RecompileReport, ...]:
    """``shapes``: torch's decisions about sizes; ``features``: what the analysing torch offers."""
    groups: dict[tuple[str, Code, int | None, bool, str], list[Recompile]] = {}
    for recompile in recompiles:
        key = (
            recompile.function,
            recompile.frame,
            recompile.resumes_at,
            recompile.direct,
            what_failed(recompile.guard),
        )
        groups.setdefault(key, []).append(recompile)
    by_name = {function.qualname: function for function in functions}
    reports = []
    for (function, frame, resumes_at, direct, _), members in groups.items():
        guard = leading_guard(tuple(members))
        where, span, guard_at = _place(
            path, frame, resumes_at, direct, guard, by_name.get(function), text, own
        )
        origin = guard.origin if guard else None
        ignored = directives.suppressions(text(where))
        ids = {recompile.compile_id for recompile in members}
        owner = by_name.get(function)
        raising = next((r for r in members if r.limit and r.raises and r.called_at is not None), None)
        raises_at = None
        if raising is not None and raising.called_at is not None:
            at = raising.called_at
            raises_at = Location(at.path, at.function, frame_span(at, text(at.path), ""))
        reports.append(
            RecompileReport(
                function=function,
                frame=frame,
                direct=direct,
                resumes_at=resumes_at,
                recompiles=tuple(members),
                path=where,
                span=span,
                guard_at=guard_at,
                why=describe(guard),
                suppressed=directives.is_suppressed(ignored, span.line, RECOMPILE_CODE.upper()),
                origin=Location(origin.path, origin.function, frame_span(origin, text(origin.path), ""))
                if origin
                else None,
                guarded=written(text(guard_at.path), guard_at.span) if guard_at else "",
                changed=what_changed(guard),
                costs=tuple(c for c in (owner.costs if owner else ()) if c.compile_id in ids),
                raises_at=raises_at,
                shapes=tuple(
                    shape
                    for shape in shapes
                    if guard is not None
                    and guard.kind == "shape"
                    and (shape.function, shape.subject) == (function, guard.subject)
                ),
                features=features,
            )
        )
    return tuple(sorted(reports, key=lambda r: (r.path, r.span.line, r.span.column, r.function)))


def _place(
    path: str,
    frame: Code,
    resumes_at: int | None,
    direct: bool,
    guard: Guard | None,
    function: FunctionReport | None,
    text: Text,
    own: Callable[[str], bool],
) -> tuple[str, Span, Location | None]:
    """The workspace file and span a recompilation sits on, and where its guard was installed: for a
    resume frame with no such place, the line of the break it resumes after."""
    subject = guard.subject if guard else ""
    chain = [
        Location(f.path, f.function, frame_span(f, text(f.path), subject))
        for f in (guard.chain if guard else ())
    ]
    mine = [location for location in chain if own(location.path)]
    guard_at = chain[-1] if chain else None
    if mine:
        return mine[-1].path, mine[-1].span, guard_at
    source = text(frame.path) if own(frame.path) else ""
    if resumes_at is not None and source:
        return frame.path, span_of(source, resumes_at, None, None), guard_at
    definition = definitions(parse(source)).get((frame.name, frame.line)) if source else None
    if definition is not None:
        for argument in arguments_of(definition):
            if argument.arg == re.split(r"[.\[]", subject, maxsplit=1)[0] and "." not in subject:
                return (
                    frame.path,
                    _name_span(source, argument.lineno, argument.col_offset, argument.arg),
                    guard_at,
                )
        column = _name_column(source, definition)
        if (not direct or function is None) and column is not None:
            return frame.path, _name_span(source, definition.lineno, column, frame.name), guard_at
    if function is not None:
        return function.path, function.span, guard_at
    return path, Span(frame.line or 1, 0, frame.line or 1, 0), guard_at


def input_span(frame: Code, subject: str, source: str) -> Span | None:
    """Where the input ``subject`` of the frame's function is declared: its parameter in the ``def``."""
    definition = definitions(parse(source)).get((frame.name, frame.line))
    root = subject.split(".", 1)[0]
    for argument in arguments_of(definition) if definition is not None else ():
        if argument.arg == root:
            return _name_span(source, argument.lineno, argument.col_offset, root)
    return None


def frame_span(frame: Frame, source: str, subject: str) -> Span:
    """A guard's frame on the source: its instruction, else what it checks on its line, else the line."""
    if frame.column is not None:
        return span_of(source, frame.line, frame.column, frame.end_column)
    tree = parse(source)
    lines = source.splitlines()
    if tree is not None and subject:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Name | ast.Attribute)
                and node.lineno == frame.line
                and ast.unparse(node) == subject
            ):
                return node_span(node, lines)
    return span_of(source, frame.line, None, None)


def _name_column(source: str, definition: ast.FunctionDef | ast.AsyncFunctionDef) -> int | None:
    """The byte column of a def's name on its line, if it is written there."""
    text = source.splitlines()[definition.lineno - 1].encode("utf-8")
    found = text.find(b"def " + definition.name.encode("utf-8"))
    return found + len(b"def ") if found >= 0 else None


def _name_span(source: str, line: int, byte_column: int, name: str) -> Span:
    return span_of(source, line, byte_column, byte_column + len(name.encode("utf-8")))


def literal(guard: Guard) -> str:
    """What a value check compares with: "number", "string", "bool", or "" for anything else."""
    if guard.kind != "value":
        return ""
    _, _, value = guard.text.partition(" == ")
    value = value.strip()
    if value in ("True", "False"):
        return "bool"
    if value[:1] in ("'", '"'):
        return "string"
    try:
        float(value)
    except ValueError:
        return ""
    return "number"


LAST_RESORT = (
    "As a last resort, raise `torch._dynamo.config.{limit}`: every recompilation still costs a whole "
    "compilation, and the limit is there to stop that."
)
# Where torch.compile takes a limit of its own (2.12+): that compile call's, not every function's.
OWN_LIMIT = (
    "As a last resort, raise this compile call's own limit, `torch.compile(..., recompile_limit=N)`, "
    "not every function's: every recompilation still costs a whole compilation. With several compile "
    "calls of one function, `isolate_recompiles=True` gives each its own compilations and limit."
)


def remedies(found: RecompileReport) -> list[str]:
    """The documented remedies for what changed between calls, the most specific first."""
    guard = found.guard
    kind = guard.kind if guard else ""
    subject = f"`{guard.subject}`" if guard and guard.subject else "it"
    found_literal = literal(guard) if guard else ""
    tips: list[str] = []
    if kind == "shape":
        tips += [
            "Compile with `dynamic=True`, or mark the dimension that varies as dynamic before the call: "
            f"`torch._dynamo.mark_dynamic({_input(guard)}, 0)`.",
            "A size that is 0 or 1 on some calls (a batch of 1) compiles apart even once it is dynamic: "
            f"`torch._dynamo.decorators.mark_unbacked({_input(guard)}, 0)` keeps it one symbol, as does "
            "a shapes spec in the compile call where `torch.compile` takes one (`dynamic_shapes=`).",
            "With `dynamic=False` every new size compiles again; without `dynamic`, a size is dynamic after "
            "its first change (automatic dynamic shapes), but a branch on a size still compiles once per "
            "outcome.",
        ]
    elif guard is not None and guard.origin is not None and kind == "value" and "(" in guard.subject:
        at = guard.origin
        tips += [
            f"{subject} gives `{at.function}` a Python number at its graph break on line {at.line}, and "
            f"the rest of `{at.function}` is compiled for that value: compute it as a tensor instead, with "
            "the torch function that does the same; a tensor's value stays in the graph, unguarded.",
            f"Or remove the graph break at line {at.line}: traced, the value stays inside the graph.",
        ]
    elif kind == "value" and guard is not None and guard.is_global:
        tips += [
            f"Do not change the global {subject} between calls: make it a constant, or pass it as an "
            "argument (a tensor, if it is a number).",
        ]
    elif kind == "value" and guard is not None and "." in guard.subject:
        tips += [
            f"Keep {subject} in a tensor (a buffer), whose value Dynamo does not guard.",
            "For integer attributes of an `nn.Module`: set "
            "`torch._dynamo.config.allow_unspec_int_on_nn_module = True`, so that they are dynamic.",
        ]
    elif found_literal == "number" and _loops(found.guarded):
        tips += [
            f"{subject} sets how many times `{found.guarded}` loops: Dynamo unrolls the loop, so the graph "
            f"is specialized on the value of {subject}; a tensor would not help (`range()` needs an int).",
            "Compile the loop's body instead, and loop in Python around it: one compilation for every "
            f"{subject}.",
            f"Or, when {subject} takes only a few values, keep them few: each compiles once.",
        ]
    elif found_literal == "number" and _branches(found.guarded):
        tips += [
            f"{subject} decides a branch (`{found.guarded}`): the graph is specialized on it, a new value "
            "compiles again where the branch can go another way.",
            "Decide in Python, before the call, and pass the compiled function the outcome (a bool: at most "
            "two compilations); or compute both sides with `torch.where`.",
        ]
    elif found_literal == "number":
        tips += [
            f"Pass {subject} as a tensor (`torch.tensor(...)`): Dynamo guards a tensor's shape and dtype, "
            "not its value.",
            "A number that is only used as a size is dynamic after its first change (automatic dynamic "
            "shapes) unless `dynamic=False`.",
        ]
    elif found_literal in ("string", "bool") or kind == "identity":
        tips += [
            f"Move the switch on {subject} out of the compiled function: decide in Python, and pass the "
            "compiled function the outcome (a bool has two values, so at most two compilations).",
            f"Or make {subject} a constant that does not change between calls.",
        ]
    elif kind in ("dtype", "requires_grad", "tensor", "type"):
        tips += [f"Call it with {subject} of one kind every time (convert it before the call)."]
    elif kind == "global_state":
        tips += [
            "Call it in one grad mode (with or without `torch.no_grad()`), or compile one function per mode."
        ]
    limit = found.limit
    if (
        limit is not None
        and limit.limit == "recompile_limit"
        and "recompile_limit_argument" in found.features
    ):
        tips.append(OWN_LIMIT)
    elif limit is not None:
        tips.append(LAST_RESORT.format(limit=limit.limit))
    return tips


def _input(guard: Guard | None) -> str:
    """What ``mark_dynamic`` marks: the checked input by its name, else an input ``x``."""
    subject = guard.subject if guard else ""
    return subject if subject.replace(".", "").replace("_", "").isalnum() else "x"


def _loops(guarded: str) -> bool:
    """Whether the guarded code is a ``range()`` (the check is on what it loops over)."""
    return guarded.startswith("range(")


def _branches(guarded: str) -> bool:
    """Whether the guarded code is a comparison (a branch's condition: ``n > 3``)."""
    tree = parse(guarded)
    body = tree.body if tree is not None else []
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Compare)
