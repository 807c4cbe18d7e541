"""An ``nn.Module`` whose ``__init__`` never calls ``nn.Module.__init__`` (GB0119): Dynamo refuses a
module with none of a module's state, as torch's hint says, and the fix is the call it asks for.

``super().__init__()`` first in that ``__init__`` keeps what the module computes: the assignments
after it set the same attributes (one that ``nn.Module.__setattr__`` would treat otherwise, a
parameter or a submodule, raised without it), and it adds the module's own state, which the class
shadows nowhere (no class attribute named ``training`` or private).
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import alone_on_its_lines, indent_of, node_span, torch_name

MODULE_BASES = ("Module", "nn.Module", "{torch}.nn.Module")


def _shadows_module_state(definition: ast.ClassDef) -> bool:
    """Whether the class body binds a name ``nn.Module.__init__`` sets on the instance."""
    for statement in definition.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else []
        if isinstance(statement, ast.AnnAssign | ast.AugAssign):
            targets = [statement.target]
        names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if any(name == "training" or name.startswith("_") for name in names):
            return True
    return False


def _uninitialised(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    """The ``__init__`` of the one module class ``name`` of ``tree``, when it calls no ``__init__``."""
    classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == name]
    if len(classes) != 1:
        return None
    definition = classes[0]
    bases = [base.format(torch=torch_name(tree) or "torch") for base in MODULE_BASES]
    if [ast.unparse(base) for base in definition.bases] not in [[base] for base in bases]:
        return None  # another base's __init__ could come first in the MRO
    if definition.keywords or _shadows_module_state(definition):
        return None
    inits = [n for n in definition.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"]
    if len(inits) != 1:
        return None
    calls = [node for node in ast.walk(inits[0]) if isinstance(node, ast.Call)]
    if any(isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" for call in calls):
        return None
    return inits[0]


def init_module(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``super().__init__()`` first in the ``__init__`` of the uninitialised module's class (torch
    names it in the break's context), in the root cause's file or the analysed one."""
    name = brk.cause.context.rsplit(".", 1)[-1]
    for path in dict.fromkeys((brk.root.path, here)):
        tree = sources.tree(path)
        init = _uninitialised(tree, name) if tree is not None else None
        if init is None:
            continue
        lines = sources.lines(path)
        body = init.body
        if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # after the docstring
        if not body or not alone_on_its_lines(body[0], lines):
            return None
        if len(body) == 1 and isinstance(body[0], ast.Pass):
            edit = Edit(path, node_span(body[0], lines), "super().__init__()")
        else:
            first = body[0].lineno
            edit = Edit(path, Span(first, 0, first, 0), f"{indent_of(lines, first)}super().__init__()\n")
        return Fix(f"Call nn.Module's __init__ in {name}.__init__ (super().__init__())", (edit,), safe=True)
    return None
