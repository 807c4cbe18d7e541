"""A linear-algebra operator Dynamo cannot compile with dynamic output shapes captured (GB0037: no
meta kernel for them), rewritten with operators that have one.

``torch.linalg.lstsq(a, b).solution`` → ``torch.linalg.pinv(a) @ b``: the least-squares solution of
least norm, as lstsq's, from the pseudo-inverse, whose shapes the compiler knows. Unsafe: where ``a``
is rank-deficient or ill-conditioned the two cut its small singular values off differently, and
the proof holds it to the analysed run's results.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import node_span, root_calls


def lstsq_by_pinv(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch.linalg.lstsq(a, b).solution`` (no other arguments) → ``torch.linalg.pinv(a) @ b``."""
    found = root_calls(brk, sources)
    if found is None:
        return None
    tree, lines, calls = found
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr == "solution"):
            continue
        if node.value not in calls and node_span(node, lines) != brk.root.span:
            continue
        call = node.value
        assert isinstance(call, ast.Call)
        function = ast.unparse(call.func)
        if not function.endswith("linalg.lstsq") or len(call.args) != 2 or call.keywords:
            return None
        linalg = function.removesuffix(".lstsq")
        a, b = (ast.unparse(argument) for argument in call.args)
        text = f"{linalg}.pinv({a}) @ {b}"
        if isinstance(call.args[1], ast.BinOp | ast.BoolOp | ast.IfExp | ast.Lambda | ast.NamedExpr):
            text = f"{linalg}.pinv({a}) @ ({b})"
        return Fix(
            f"Solve with the pseudo-inverse, `{text}`: the same least-squares solution, in the graph "
            f"(where `{a}` is rank-deficient or ill-conditioned, small singular values are cut otherwise)",
            (Edit(brk.root.path, node_span(node, lines), text),),
        )
    return None
