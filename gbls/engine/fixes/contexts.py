"""A context manager Dynamo supports, entered in compiled code but made outside it (GB0142): torch's
hint for the break says so ("it may be the case that it was created outside the compiled region,
which Dynamo does not support"). ``inference = torch.no_grad()`` at module level, ``with
inference:`` in the compiled function → ``with torch.no_grad():``, made where it is entered.

The manager is made anew at each ``with`` from the same call of constants, so the code means what
it meant; which managers Dynamo supports made inside is for re-analysis to prove.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import node_span, root_source, torch_name


def _constant(node: ast.expr) -> bool:
    """A literal, or a dotted name (``torch.bfloat16``): the same value wherever it is evaluated."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Constant | ast.Name)


def _made_once(tree: ast.Module, name: str, torch: str) -> ast.Call | None:
    """The call of torch's that the module binds ``name`` to, once, at its top level, of constants."""
    stores = [
        n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
    ]
    bound = [
        statement
        for statement in tree.body
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == name
    ]
    if len(stores) != 1 or len(bound) != 1 or not isinstance(bound[0].value, ast.Call):
        return None
    call = bound[0].value
    function = call.func
    while isinstance(function, ast.Attribute):
        function = function.value
    if not (isinstance(function, ast.Name) and function.id == torch):
        return None
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    if not all(_constant(argument) for argument in arguments):
        return None
    return call


def made_where_entered(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``with inference:`` → ``with torch.no_grad():``, where the module made ``inference`` so."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    torch = torch_name(tree)
    if torch is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.With | ast.AsyncWith) or node.lineno != brk.root.span.line:
            continue
        for item in node.items:
            manager = item.context_expr
            call = _made_once(tree, manager.id, torch) if isinstance(manager, ast.Name) else None
            if call is None:
                continue
            made = ast.unparse(call)
            assert isinstance(manager, ast.Name)
            return Fix(
                f"Make the context manager where it is entered: `with {made}:` (Dynamo enters torch's "
                f"context managers made in compiled code, not `{manager.id}`, made outside it)",
                (Edit(brk.root.path, node_span(manager, lines), made),),
            )
    return None
