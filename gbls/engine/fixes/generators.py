"""A generator function compiled (GB0003: Dynamo cannot compile a generator's own frame), compiled
through a function that consumes it, as torch's hint says: "Call a generator from inside of a
non-generator Python function and compile that function instead."

``@torch.compile def produce(x): yield ...`` loses its decorator, and a compiled ``produce_list``
(the generator's parameters, ``return list(produce(x))``) is defined after it: Dynamo inlines the
generator into the consumer's graph. Each call of ``produce`` in the file becomes a call of
``produce_list``, which gives the same items as a list; only where every call is consumed whole (the
iterable of a ``for`` without ``break`` or ``return``, of a list, set or dict comprehension, the
argument of ``list()``, ``tuple()``, ``sum()``, ...), never where it is ``next()``ed, sent to, or may
stop early. Unsafe: the items are all made before the loop that uses them runs, not one per step;
where that shows (the loop's body changes what the generator reads, or prints between its items),
the proof refuses it.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import alone_on_its_lines, node_span

# Calls that take the whole of their first argument before they return.
CONSUMERS = ("list", "tuple", "set", "frozenset", "dict", "sorted", "sum", "min", "max")
# What, in a loop's body, stops the loop (and with it the generator) before its end.
_STOPPING = (ast.Break, ast.Return)


def _yields(definition: ast.FunctionDef) -> bool:
    """Whether ``definition`` is a generator function: a ``yield`` of its own (not a nested scope's)."""
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Yield | ast.YieldFrom):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return False


def compiled_by_decorator(
    tree: ast.Module, source: str, name: str, lines: list[str]
) -> tuple[ast.FunctionDef, str] | None:
    """The module's function ``name`` and its one decorator's text, when that decorator is a
    ``torch.compile`` (with or without options) on lines of its own, right above the ``def``."""
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name != name or len(node.decorator_list) != 1:
            continue
        (decorator,) = node.decorator_list
        called = decorator.func if isinstance(decorator, ast.Call) else decorator
        span = node_span(decorator, lines)
        written = "\n".join(lines[line - 1] for line in range(span.line, span.end_line + 1)).strip()
        if (
            ast.unparse(called).endswith("compile")
            and written == "@" + (ast.get_source_segment(source, decorator) or "")
            and node.lineno == span.end_line + 1
        ):
            return node, written
    return None


class Compiled(NamedTuple):
    """A module's function compiled by its decorator, as ``compiled_here`` finds it."""

    tree: ast.Module
    lines: list[str]
    definition: ast.FunctionDef
    decorator: str


def compiled_here(brk: BreakReport, here: str, sources: Sources) -> Compiled | None:
    """The module-level function of ``here`` that ``brk`` broke in, compiled by its decorator
    (``compiled_by_decorator``); None where it is not one."""
    tree, source = sources.tree(here), sources.text(here)
    if tree is None or source is None or "." in brk.function:
        return None
    lines = sources.lines(here)
    found = compiled_by_decorator(tree, source, brk.function, lines)
    return Compiled(tree, lines, *found) if found is not None else None


def _parents(tree: ast.Module) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _stops_early(loop: ast.For) -> bool:
    """Whether the loop's own body may leave it before its end (a nested loop's ``break`` does not)."""
    pending: list[ast.AST] = list(loop.body)
    while pending:
        node = pending.pop()
        if isinstance(node, _STOPPING):
            return True
        if isinstance(node, ast.For | ast.While | ast.AsyncFor):
            pending.extend(n for n in ast.walk(node) if isinstance(n, ast.Return))
            continue
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _consumed_whole(call: ast.Call, parents: dict[int, ast.AST]) -> bool:
    """Whether the generator ``call`` makes is iterated to its end where it is made."""
    parent = parents.get(id(call))
    if isinstance(parent, ast.For) and parent.iter is call and not parent.orelse:
        return not _stops_early(parent)
    if isinstance(parent, ast.comprehension) and parent.iter is call:
        # A generator expression is lazy: what consumes it may stop early.
        return isinstance(parents.get(id(parent)), ast.ListComp | ast.SetComp | ast.DictComp)
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id in CONSUMERS
        and parent.args[:1] == [call]
        and len(parent.args) == 1
    )


def _fresh(tree: ast.Module, wanted: str) -> str:
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    taken |= {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    taken |= {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    name, number = wanted, 2
    while name in taken:
        name, number = f"{wanted}_{number}", number + 1
    return name


def forwarded(arguments: ast.arguments) -> str | None:
    """The arguments a function with ``arguments`` passes on to another with the same parameters:
    each by its name, by position where it can be; None where a default is not a constant (the
    second function's copy of it would be another object)."""
    defaults = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
    if any(not isinstance(default, ast.Constant) for default in defaults):
        return None
    given = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if arguments.vararg is not None:
        given.append(f"*{arguments.vararg.arg}")
    given += [f"{a.arg}={a.arg}" for a in arguments.kwonlyargs]
    if arguments.kwarg is not None:
        given.append(f"**{arguments.kwarg.arg}")
    return ", ".join(given)


def consumed_by_a_compiled_function(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``@torch.compile def produce(x): yield ...`` → ``def produce(x): ...`` and ``@torch.compile def
    produce_list(x): return list(produce(x))``, called where ``produce`` was."""
    found = compiled_here(brk, here, sources)
    if found is None or not _yields(found.definition):
        return None
    tree, lines, definition, decorator = found
    passed = forwarded(definition.args)
    if passed is None or not alone_on_its_lines(definition, lines):
        return None
    parents = _parents(tree)
    uses = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == definition.name]
    calls = [parents.get(id(use)) for use in uses]
    sites = [
        call for call, use in zip(calls, uses, strict=True) if isinstance(call, ast.Call) and call.func is use
    ]
    if not sites or len(sites) != len(uses) or not all(_consumed_whole(site, parents) for site in sites):
        return None  # a call next()ed, sent to or stopped early, or the function passed on uncalled
    consumer = _fresh(tree, f"{definition.name}_list")
    first = node_span(definition.decorator_list[0], lines).line
    end = definition.end_lineno or definition.lineno
    signature = ast.unparse(definition.args)
    text = f"\n\n{decorator}\ndef {consumer}({signature}):\n    return list({definition.name}({passed}))\n"
    edits = [
        Edit(here, Span(first, 0, definition.lineno, 0), ""),
        Edit(here, Span(end + 1, 0, end + 1, 0), text),
        *(Edit(here, node_span(site.func, lines), consumer) for site in sites),
    ]
    where = "its call" if len(sites) == 1 else f"its {len(sites)} calls"
    return Fix(
        f"Compile `{consumer}`, a function that consumes the generator {definition.name} "
        f"(`list({definition.name}(...))`), as torch's hint says, and call it where {definition.name} "
        f"is called ({where} in the file): Dynamo inlines the generator; its items are all made before "
        "the code that uses them runs",
        tuple(edits),
        compiled_as=((definition.name, consumer),),
    )
