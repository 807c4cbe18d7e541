"""What a compiled loop iterates, made something Dynamo iterates in the graph.

- ``for w in weights.tolist()`` (GB0109: Dynamo reads no float tensor into Python floats) →
  ``for w in weights.unbind()``: the same elements, as 0-d tensors instead of floats, so the loop's
  arithmetic stays in the graph. Where the code needs a Python float (a branch on it, a print of
  it), re-analysis sees the difference and refuses it.
- A builtin iterator made outside the compiled function and passed in (``weighted(zip(w, x))``,
  GB0811: Dynamo cannot iterate an iterator it did not see made) → ``weighted(list(zip(w, x)))`` at
  each call of the file: the function iterates the same items, and the iterator was a temporary of
  the call, which nothing else could go on iterating. One the function made itself, before a
  graph break (its resume function did not see it made): ``m = list(map(...))`` where it is made,
  when the function binds it there only. One the module made (``SCALES = map(float, ...)``):
  ``SCALES = list(map(float, ...))`` where it is made, the same items; unsafe: the list gives them at
  every call, where the iterator gave them once.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..model import BreakReport
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import node_span, root_calls, root_source

# The builtins that make a one-pass iterator of their arguments.
ITERATORS = ("zip", "map", "filter", "enumerate", "reversed", "iter")


def _iterated(tree: ast.Module) -> list[ast.expr]:
    """What each loop and comprehension of ``tree`` iterates."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            found.append(node.iter)
    return found


def _inside(node: ast.expr, iterable: ast.expr) -> bool:
    """Whether ``node`` is ``iterable``, or an argument of the ``enumerate``/``zip``/``reversed`` it is."""
    if node is iterable:
        return True
    if isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name):
        if iterable.func.id in ("enumerate", "zip", "reversed"):
            return any(_inside(node, argument) for argument in iterable.args)
    return False


def unbind_tolist(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``for w in weights.tolist()`` → ``for w in weights.unbind()``."""
    found = root_calls(brk, sources)
    if found is None:
        return None
    tree, lines, calls = found
    if not calls:
        return None
    call = calls[0]
    function = call.func
    if not (isinstance(function, ast.Attribute) and function.attr == "tolist") or call.args or call.keywords:
        return None
    if not any(_inside(call, iterable) for iterable in _iterated(tree)):
        return None  # a list used otherwise (indexed, returned) is not the tensor's elements
    tensor = ast.unparse(function.value)
    return Fix(
        f"Iterate the elements of `{tensor}` as 0-d tensors (`{tensor}.unbind()`), not as Python "
        "floats (`.tolist()`): the loop's arithmetic stays in the graph",
        (Edit(brk.root.path, node_span(call, lines), f"{tensor}.unbind()"),),
    )


def _compiled_definition(tree: ast.Module, brk: BreakReport) -> ast.FunctionDef | None:
    """The compiled function's ``def`` in ``tree``, holding the root cause."""
    name = brk.function.rsplit(".", 1)[-1]
    line = brk.root.span.line
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            if node.lineno <= line <= (node.end_lineno or node.lineno):
                return node
    return None


def _iterated_at(tree: ast.Module, brk: BreakReport, lines: list[str]) -> ast.expr | None:
    """What the loop or comprehension at the root cause iterates (the root cause may be it, or the
    iterable itself)."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr | ast.stmt) or node_span(node, lines) != brk.root.span:
            continue
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return node.generators[0].iter
        if isinstance(node, ast.For):
            return node.iter
        if isinstance(node, ast.Name):
            return node
    return None


# What iterates its argument (to its end): ``sum(m)``.
CONSUMERS = ("sum", "list", "tuple", "sorted", "min", "max", "any", "all", "set", "dict")


def _iterated_names(node: ast.AST) -> set[str]:
    """The names ``node`` iterates: a loop's or comprehension's iterable, a consumer's argument."""
    names = set()
    for child in ast.walk(node):
        iterables: list[ast.expr] = []
        if isinstance(child, ast.comprehension | ast.For):
            iterables.append(child.iter)
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and child.func.id in CONSUMERS:
            iterables += child.args[:1]
        names |= {iterable.id for iterable in iterables if isinstance(iterable, ast.Name)}
    return names


def _at_root(
    brk: BreakReport, sources: Sources
) -> tuple[list[str], ast.Module, ast.FunctionDef, ast.AST] | None:
    """The lines and tree of the root cause's file, the compiled function's ``def`` and the node the
    root cause is in it."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    definition = _compiled_definition(tree, brk)
    if definition is None:
        return None
    at = [
        n
        for n in ast.walk(definition)
        if isinstance(n, ast.expr | ast.stmt) and node_span(n, lines) == brk.root.span
    ]
    return (lines, tree, definition, at[0]) if at else None


def _listed(
    brk: BreakReport, lines: list[str], name: str, bindings: Sequence[ast.AST], statements: Sequence[ast.AST]
) -> Edit | None:
    """``list(...)`` around what binds ``name``, when ``bindings`` (every binding of it) are one, an
    assignment among ``statements`` of an iterator builtin's call."""
    made = [
        statement
        for statement in statements
        if isinstance(statement, ast.Assign)
        and [ast.unparse(target) for target in statement.targets] == [name]
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id in ITERATORS
    ]
    if len(bindings) != 1 or len(made) != 1:
        return None
    assert isinstance(made[0], ast.Assign)
    value = made[0].value
    return Edit(brk.root.path, node_span(value, lines), f"list({ast.unparse(value)})")


def listed_where_made(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``m = map(f, xs)`` then, past a graph break, ``sum(m)`` → ``m = list(map(f, xs))``."""
    found = _at_root(brk, sources)
    if found is None:
        return None
    lines, _, definition, at = found
    edits = []
    for name in sorted(_iterated_names(at)):
        bindings: list[ast.AST] = [
            n
            for n in ast.walk(definition)
            if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
        ]
        edit = _listed(brk, lines, name, bindings, list(ast.walk(definition)))
        if edit is not None:
            edits.append(edit)
    if not edits:
        return None
    return Fix(
        "Make the iterator a list where the function makes it (`list(...)`): Dynamo iterates a list "
        "it did not see made, after a graph break",
        tuple(edits),
    )


def listed_at_calls(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``weighted(zip(w, x))`` → ``weighted(list(zip(w, x)))`` where ``weighted`` iterates its parameter."""
    if brk.root.path != here:
        return None
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    definition = _compiled_definition(tree, brk)
    if definition is None:
        return None
    iterated = _iterated_at(tree, brk, lines)
    parameters = [argument.arg for argument in definition.args.args]
    if not isinstance(iterated, ast.Name) or iterated.id not in parameters or definition.args.posonlyargs:
        return None
    parameter = iterated.id
    position = parameters.index(parameter)
    edits = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == definition.name
        ):
            continue
        given = [keyword.value for keyword in node.keywords if keyword.arg == parameter]
        if position < len(node.args):
            given.append(node.args[position])
        iterator = given[0] if len(given) == 1 else None
        if (
            isinstance(iterator, ast.Call)
            and isinstance(iterator.func, ast.Name)
            and iterator.func.id in ITERATORS
        ):
            edits.append(Edit(brk.root.path, node_span(iterator, lines), f"list({ast.unparse(iterator)})"))
    if not edits:
        return None
    return Fix(
        f"Pass {definition.name} a list, not a one-pass iterator made outside it (`list(...)` at its "
        f"call{'s' if len(edits) > 1 else ''}): Dynamo iterates a list",
        tuple(edits),
    )


def listed_at_module(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``SCALES = map(float, ...)`` at module level, iterated by the compiled function →
    ``SCALES = list(map(float, ...))``: the same items. Unsafe: a list gives them at every call, where
    the iterator gave them once (re-analysis refuses it where the program calls the function again
    and sees the difference)."""
    found = _at_root(brk, sources)
    if found is None:
        return None
    lines, tree, _, at = found
    names = {at.id} if isinstance(at, ast.Name) else _iterated_names(at)
    if len(names) != 1:
        return None
    (name,) = names
    bindings = [
        n
        for n in ast.walk(tree)
        if (isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store))
        or (isinstance(n, ast.Global | ast.Nonlocal) and name in n.names)
        or (isinstance(n, ast.arg) and n.arg == name)
    ]
    edit = _listed(brk, lines, name, bindings, list(tree.body))
    if edit is None:
        return None
    return Fix(
        f"Make `{name}` a list where the module makes it (`list(...)`): Dynamo iterates a list made "
        "outside the function; the list gives its items at every call, where the iterator gave them once",
        (edit,),
    )
