"""An input's view changed in place (``x.unsqueeze_(0)``, GB0148): Dynamo does not take an in-place
view of a graph input. ``x = x.unsqueeze(0)`` gives the function the same tensor, as a view made out
of place; the caller's tensor keeps the shape it had (the in-place call changed it), which the title
says: re-analysis refuses the fix where the program reads that shape afterwards and shows it.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import alone_on_its_lines, node_span, root_call_statement

# torch's in-place methods that change only a tensor's view (its shape, strides), not its data.
VIEW_METHODS = ("unsqueeze_", "squeeze_", "transpose_", "t_", "swapdims_", "swapaxes_")


def view_out_of_place(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``x.unsqueeze_(0)``, a statement of its own on a parameter of the function it is in →
    ``x = x.unsqueeze(0)``."""
    found = root_call_statement(brk, sources)
    if found is None:
        return None
    _, tree, statement = found
    call = statement.value
    assert isinstance(call, ast.Call)
    function = call.func
    if not (
        isinstance(function, ast.Attribute)
        and function.attr in VIEW_METHODS
        and isinstance(function.value, ast.Name)
    ):
        return None
    name = function.value.id
    holder = next(
        (
            node
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and any(child is statement for child in ast.walk(node))
        ),
        None,
    )
    if holder is None or name not in {a.arg for a in [*holder.args.args, *holder.args.kwonlyargs]}:
        return None  # a tensor the function made itself is not a graph input
    lines = sources.lines(brk.root.path)
    if not alone_on_its_lines(statement, lines):
        return None
    method = function.attr[:-1]
    arguments = ", ".join(ast.unparse(argument) for argument in [*call.args, *call.keywords])
    text = f"{name} = {name}.{method}({arguments})"
    return Fix(
        f"Make the view out of place, `{text}`: the function sees the same tensor; the caller's "
        f"`{name}` keeps the shape it had ({function.attr} changed it)",
        (Edit(brk.root.path, node_span(statement, lines), text),),
    )
