"""A bound method of an object the compiled function made, returned (GB0092 Reconstruction failure):
Dynamo cannot rebuild, after the graph, the method of an object that exists only in its tracing; one
of an object made once before the function, which Dynamo reads as a global, it returns as it is.

``return x + 1, Scaler().apply`` in ``@torch.compile def make(x)`` becomes ``return x + 1,
_scaler.apply``, with ``_scaler = Scaler()`` made once, right before ``make``. Every call then shares
one object where each made its own: only where that cannot show, the class being the module's own,
made with no arguments, and keeping no state (no ``__init__`` that does anything, no method that
assigns an attribute, no ``__slots__``, ``__new__``, class decorator, base or metaclass). What the
program does with the methods is left to the proof.
"""

from __future__ import annotations

import ast
import re

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .generators import compiled_here
from .syntax import node_span

# What a stateless class may not define: each makes or keeps state beyond its methods.
_STATEFUL = {"__slots__", "__new__", "__setattr__", "__init_subclass__", "__class_getitem__"}


def _made_here(statement: ast.stmt, line: int) -> list[tuple[ast.Attribute, str]]:
    """The ``Name().method`` of ``statement`` on ``line``: a bound method of an object made with no
    arguments, and the class's name."""
    found = []
    for node in ast.walk(statement):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
            and not node.value.args
            and not node.value.keywords
            and node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            found.append((node, node.value.func.id))
    return found


def _does_nothing(definition: ast.FunctionDef) -> bool:
    """A body of a docstring, ``pass`` or ``...`` only."""
    return all(
        isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
        for s in definition.body
    )


def _keeps_no_state(cls: ast.ClassDef) -> bool:
    """Whether instances of ``cls`` are all alike for ever: it assigns no attribute anywhere, and
    defines nothing that could make one instance differ from another."""
    if cls.bases or cls.keywords or cls.decorator_list:
        return False
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef):
            if statement.name in _STATEFUL or (statement.name == "__init__" and not _does_nothing(statement)):
                return False
        elif any(isinstance(n, ast.Name) and n.id in _STATEFUL for n in ast.walk(statement)):
            return False
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            return False  # self.x = ..., cls.x = ..., Scaler.x += ...
        if isinstance(node, ast.Global | ast.Nonlocal | ast.AsyncFunctionDef):
            return False
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("setattr", "delattr")
        ):
            return False
        if isinstance(node, ast.FunctionDef) and any(
            ast.unparse(d).endswith((".setter", ".deleter")) or ast.unparse(d) == "property"
            for d in node.decorator_list
        ):
            return False
    return True


def made_once(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``Scaler().apply`` returned by the compiled function → ``_scaler.apply``, ``_scaler = Scaler()``
    made once before it, where ``Scaler`` keeps no state."""
    found = compiled_here(brk, here, sources) if brk.root.path == here else None
    if found is None:
        return None
    tree, lines, definition, _ = found
    line = brk.root.span.line
    returns = [
        s
        for s in ast.walk(definition)
        if isinstance(s, ast.Return) and s.lineno <= line <= (s.end_lineno or s.lineno)
    ]
    made = [m for s in returns for m in _made_here(s, line)]
    if len(made) != 1:
        return None
    method, name = made[0]
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    binds = [
        n
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load))
        or (isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and n.name == name)
        or (isinstance(n, ast.alias) and (n.asname or n.name) == name)
    ]
    # The module's own class, bound once, before the function.
    if len(classes) != 1 or binds != classes or classes[0].lineno > definition.lineno:
        return None
    if not _keeps_no_state(classes[0]):
        return None
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }
    shared = "_" + re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().lstrip("_")
    number = 2
    while shared in taken:
        shared, number = f"{shared.rstrip('_0123456789')}_{number}", number + 1
    first = node_span(definition.decorator_list[0], lines).line
    edits = (
        Edit(here, Span(first, 0, first, 0), f"{shared} = {name}()\n\n\n"),
        Edit(here, node_span(method.value, lines), shared),
    )
    return Fix(
        f"Return the `{method.attr}` of one {name} made once, before `{definition.name}`, shared by every "
        f"call: {name} keeps no state",
        edits,
    )
