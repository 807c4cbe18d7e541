"""What the user's Dynamo settings make of a break, and what the installed torch offers against it,
found by feature detection (never by version number), as ``hookpoints`` finds the hook points.

- Where a break splits the graph: in the frame of the translator that handles it. Without nested
  graph breaks that is always the compiled frame (an inlined translator cannot compile a partial
  graph). With them (``torch._dynamo.config.nested_graph_breaks``, 2.9+; not below a callee under
  ``torch._dynamo.disable_nested_graph_breaks``) it is the innermost frame that can resume, and its
  callers' code around the break stays in the graphs. gbls reads no flag: it sees where Dynamo split.
- Whether the program raises at a break: ``torch._dynamo.error_on_graph_break(True)`` sets a global
  that each translator reads at every instruction (``_get_error_on_graph_break``) and the frame
  conversion reads when a frame fails. Those two readers are told it is off, so that the analysis
  goes on past the break as the program would without it; the user's setting, as their code set
  it, is read at each break (``fullgraph=True`` is the target's, popped by ``Capture.compile``).
- The class of each hint (``graph_break_hints``): whether the break is the user's, fundamental,
  something Dynamo could support, caused by an earlier break, a Dynamo bug.
- What ``fullgraph=True`` decides besides raising at a break: whether a frame whose graph is empty
  compiles (``hookpoints.wrap_returns``), kept for the target's frames: the compilations are the
  program's.
- The escape hatches this torch has, for the fixes offered only where they exist: and the knobs of
  ``torch.compile`` itself (a per-call ``recompile_limit``, ``isolate_recompiles``, a shapes spec),
  read from the signature of the real ``torch.compile``; whether a ``logging.Logger`` method may be
  reorderable, from the names the logger's tracing code reads.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo.convert_frame as convert_frame
import torch._dynamo.symbolic_convert as symbolic_convert

from ..shared.protocol import Feature, HintClass
from . import hookpoints, patches

# graph_break_hints's lists, by the name gbls gives their class.
HINT_CLASSES: tuple[tuple[str, HintClass], ...] = (
    ("USER_ERROR", "user_error"),
    ("DYNAMO_BUG", "dynamo_bug"),
    ("DIFFICULT", "difficult"),
    ("FUNDAMENTAL", "fundamental"),
    ("SUPPORTABLE", "supportable"),
    ("CAUSED_BY_EARLIER_GRAPH_BREAK", "caused_by_earlier_break"),
)


def split_depth(translator: Any) -> int:
    """How many inlined calls below the translated frame ``translator`` is: the frame whose graph
    the break it handles splits (0: the translated frame's own)."""
    depth = 0
    parent = getattr(translator, "parent", None)
    while parent is not None:
        depth += 1
        parent = getattr(parent, "parent", None)
    # Before 2.11 a translator logs a break in a loop, then drops its frame (SkipFrame): an inlined
    # one's caller splits instead (2.11+ raise before logging, and the caller logs).
    if depth and hookpoints.drops_loops_with_skip_frame() and translator.maybe_has_backedge():
        depth -= 1
    return depth


def never() -> bool:
    return False


def wrap_error_on_graph_break() -> Callable[[], bool]:
    """Let every break under ``error_on_graph_break(True)`` be a graph break; what says whether the
    user's program has the setting on now. A torch without the setting never has it on."""
    found = getattr(symbolic_convert, "_get_error_on_graph_break", None)
    if found is None:
        return never
    getter: Callable[[], bool] = found
    for module in (symbolic_convert, convert_frame):
        if getattr(module, "_get_error_on_graph_break", None) is getter:
            patches.replace(module, "_get_error_on_graph_break", never)
    return getter


def hint_classes(hints: tuple[str, ...]) -> tuple[HintClass, ...]:
    """The classes of ``hints``, as torch's ``graph_break_hints`` lists them; none before it had them."""
    try:
        import torch._dynamo.graph_break_hints as known
    except ImportError:
        return ()
    given = {hint.strip() for hint in hints}
    return tuple(
        name
        for attribute, name in HINT_CLASSES
        if any(hint.strip() in given for hint in getattr(known, attribute, ()))
    )


def _parameters(function: Any) -> set[str]:
    try:
        return set(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return set()


def _reorders_logger_methods() -> bool:
    """Whether Dynamo reads ``reorderable_logging_functions`` when the code calls a method of a
    ``logging.Logger`` (2.14+): before, a logger's method always breaks, whatever the config says."""
    try:
        from torch._dynamo.variables import misc
    except ImportError:
        return False
    method = getattr(getattr(misc, "LoggingLoggerVariable", None), "call_method", None)
    code = getattr(method, "__code__", None)
    return code is not None and "reorderable_logging_functions" in code.co_names


def features(compile: Callable[..., Any]) -> tuple[Feature, ...]:
    """The escape hatches from graph breaks and the knobs ``compile`` (the real ``torch.compile``)
    this torch has."""
    import torch._dynamo.decorators as decorators
    import torch._higher_order_ops as higher_order_ops

    dynamo = torch._dynamo
    options = _parameters(compile)
    unbacked = getattr(decorators, "mark_unbacked", None)
    found: list[tuple[Feature, bool]] = [
        ("nested_graph_breaks", hasattr(dynamo.config, "nested_graph_breaks")),
        ("print_hop", isinstance(getattr(higher_order_ops, "print", None), torch._ops.HigherOrderOperator)),
        ("ignore_logging_functions", hasattr(dynamo.config, "ignore_logging_functions")),
        ("compiler_nonstrict_trace", callable(getattr(torch.compiler, "nonstrict_trace", None))),
        ("dynamo_nonstrict_trace", callable(getattr(dynamo, "nonstrict_trace", None))),
        ("custom_op", callable(getattr(torch.library, "custom_op", None))),
        ("disable_nested_graph_breaks", callable(getattr(dynamo, "disable_nested_graph_breaks", None))),
        ("check", callable(getattr(torch, "_check", None))),
        ("recompile_limit_argument", "recompile_limit" in options),
        ("isolate_recompiles", "isolate_recompiles" in options),
        ("dynamic_shapes_argument", "dynamic_shapes" in options),
        ("shapes_spec_argument", "shapes_spec" in options),
        ("mark_unbacked", callable(unbacked)),
        ("mark_unbacked_bounds", {"min", "max"} <= _parameters(unbacked)),
        ("leaf_function", callable(getattr(decorators, "leaf_function", None))),
        ("reorderable_logger_methods", _reorders_logger_methods()),
    ]
    return tuple(feature for feature, present in found if present)
