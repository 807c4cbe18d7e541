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
- The escape hatches this torch has, for the fixes offered only where they exist.
"""

from __future__ import annotations

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


def features() -> tuple[Feature, ...]:
    """The escape hatches from graph breaks this torch has."""
    import torch._higher_order_ops as higher_order_ops

    dynamo = torch._dynamo
    found: list[tuple[Feature, bool]] = [
        ("nested_graph_breaks", hasattr(dynamo.config, "nested_graph_breaks")),
        ("print_hop", isinstance(getattr(higher_order_ops, "print", None), torch._ops.HigherOrderOperator)),
        ("ignore_logging_functions", hasattr(dynamo.config, "ignore_logging_functions")),
        ("compiler_nonstrict_trace", callable(getattr(torch.compiler, "nonstrict_trace", None))),
        ("dynamo_nonstrict_trace", callable(getattr(dynamo, "nonstrict_trace", None))),
        ("custom_op", callable(getattr(torch.library, "custom_op", None))),
        ("disable_nested_graph_breaks", callable(getattr(dynamo, "disable_nested_graph_breaks", None))),
        ("check", callable(getattr(torch, "_check", None))),
    ]
    return tuple(feature for feature, present in found if present)
