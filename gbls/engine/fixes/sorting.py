"""A sort on tensor keys (GB0207) as tensor operations: Dynamo compares no tensors in Python, and
sorts only on keys it knows as constants.

``torch.stack(sorted(xs, key=lambda x: x.norm()))`` →
``torch.stack(xs)[torch.stack([x.norm() for x in xs]).argsort(stable=True)]``: the same tensors in the
same order (``sorted`` is stable, and so is the argsort, ``reverse`` as ``descending`` too). Where
``sorted`` would compare NaN keys, or keys of one element but not zero dimensions, the two differ:
unsafe, and proven by re-analysis.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import node_span, root_calls, torch_name


def _key_lambda(call: ast.Call) -> tuple[ast.Lambda, bool] | None:
    """The ``key=`` lambda of one parameter and the constant ``reverse`` of ``sorted(name, ...)``."""
    options = {keyword.arg: keyword.value for keyword in call.keywords}
    key, reverse = options.pop("key", None), options.pop("reverse", ast.Constant(False))
    if options or not isinstance(key, ast.Lambda) or not isinstance(reverse, ast.Constant):
        return None
    parameters = key.args
    if len(parameters.args) != 1 or parameters.posonlyargs or parameters.vararg or parameters.kwonlyargs:
        return None
    if parameters.kwarg or parameters.defaults or not isinstance(reverse.value, bool):
        return None
    return key, reverse.value


def argsort_stack(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch.stack(sorted(xs, key=lambda x: ...))`` → the stack of ``xs`` indexed by the argsort of
    the stacked keys (``xs`` a name, read twice)."""
    found = root_calls(brk, sources)
    if found is None:
        return None
    tree, lines, calls = found
    torch = torch_name(tree)
    if torch is None or not calls:
        return None
    call: ast.Call = calls[0]
    if not (isinstance(call.func, ast.Name) and call.func.id == "sorted" and len(call.args) == 1):
        return None
    items, sorting = call.args[0], _key_lambda(call)
    stacks = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and node.args == [call] and not node.keywords
    ]
    if not isinstance(items, ast.Name) or sorting is None or len(stacks) != 1:
        return None
    stack = stacks[0]
    if ast.unparse(stack.func) != f"{torch}.stack":
        return None
    key, reverse = sorting
    name, keyed = key.args.args[0].arg, ast.unparse(key.body)
    descending = "descending=True, " if reverse else ""
    order = f"{torch}.stack([{keyed} for {name} in {items.id}]).argsort({descending}stable=True)"
    text = f"{torch}.stack({items.id})[{order}]"
    return Fix(
        "Sort with argsort on the stacked keys, in the graph (where a key is NaN, or one element of "
        "more than zero dimensions, the order or shape differs)",
        (Edit(brk.root.path, node_span(stack, lines), text),),
    )
