"""Fixes that move code out of the compiled function's frame, for breaks nothing smaller removes.

- An expression Dynamo cannot trace (a call into a skipped builtin, a data-dependent condition, a
  call into a library that breaks, a loop's iterable it cannot iterate) goes into a module-level
  function of its own that runs eagerly (``torch.compiler.disable``): the break becomes one clean
  skip, where that function is called.
- A class defined inside the compiled function (Dynamo cannot trace ``__build_class__``) is defined
  once, at module level, when its body needs nothing of the function.

Both change where code runs (or how often a class is made), so neither is safe; each is offered
only where re-analysis proves it.
"""

from __future__ import annotations

import ast
import builtins
import textwrap

from ..model import BreakReport, Location
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import first_line, node_span, torch_name

# What a moved expression may not hold: it would mean something else in a function of its own.
_UNMOVABLE = (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr, ast.Starred)


def _workspace_frame(brk: BreakReport) -> Location:
    """The innermost frame of the chain in the break's own (workspace) file: where it can be acted on;
    else (a library compiled frame by frame, whose chain never enters the file) the break's place
    there, in whichever function holds it."""
    own = [loc for loc in brk.chain if loc.path == brk.path]
    return own[-1] if own else Location(brk.path, "", brk.span)


def _enclosing(tree: ast.Module, location: Location) -> tuple[ast.stmt, ast.FunctionDef] | None:
    """The top-level statement (a def, or a class holding it) and the function that holds
    ``location``: a function of the module or a method of one of its classes, not a nested one."""
    line = location.span.line
    for top in tree.body:
        if not top.lineno <= line <= (top.end_lineno or top.lineno):
            continue
        candidates = [top] if isinstance(top, ast.FunctionDef) else []
        if isinstance(top, ast.ClassDef):
            candidates = [node for node in top.body if isinstance(node, ast.FunctionDef)]
        for function in candidates:
            named = location.function in ("", function.name)
            if named and function.lineno <= line <= (function.end_lineno or 0):
                return top, function
    return None


def _statement_at(function: ast.FunctionDef, span: Span, lines: list[str]) -> ast.stmt | None:
    """The innermost statement of ``function``'s body that starts on ``span``'s line and holds it
    (``y = x.item(); print(y)`` is two statements)."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.stmt) and node is not function and node.lineno == span.line:
            at = node_span(node, lines)
            if at.column <= span.column and (at.end_line, at.end_column) >= (span.end_line, span.end_column):
                found.append(node)
    return found[-1] if found else None


def _moved_expression(statement: ast.stmt) -> ast.expr | None:
    """The expression of ``statement`` that can run in a function of its own: a condition, a loop's
    iterable, an assigned, returned or standing value."""
    if isinstance(statement, ast.If | ast.While):
        return statement.test
    if isinstance(statement, ast.For):
        return statement.iter
    if isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Return | ast.Expr):
        return statement.value
    return None


def _locals_of(function: ast.FunctionDef) -> set[str]:
    """The names local to ``function``: its parameters and whatever its body binds."""
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs] if a is not None}
    names |= {a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node is not function:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


def _free_names(node: ast.AST, local: set[str]) -> list[str] | None:
    """The names ``node`` reads of the function's locals, in order, but those it binds itself (a
    comprehension's variables); None when it cannot be moved."""
    inside = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local = local - inside
    names: list[str] = []
    for child in ast.walk(node):
        if isinstance(child, _UNMOVABLE) or (isinstance(child, ast.Name) and child.id == "super"):
            return None
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id in local:
            if child.id not in names:
                names.append(child.id)
    return names


def _unused_name(tree: ast.Module, wanted: str) -> str:
    taken = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    taken |= {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    taken |= set(dir(builtins))
    name, number = wanted, 2
    while name in taken:
        name, number = f"{wanted}_{number}", number + 1
    return name


def expression_eagerly(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``noise = random.random()`` → ``noise = _noise_eagerly()``, with ``_noise_eagerly`` a
    module-level function under ``@torch.compiler.disable`` that returns the expression, the
    function's locals it reads as its parameters."""
    location = _workspace_frame(brk)
    tree = sources.tree(brk.path)
    if tree is None:
        return None
    torch = torch_name(tree)
    enclosing = _enclosing(tree, location)
    if torch is None or enclosing is None:
        return None
    top, function = enclosing
    lines = sources.lines(brk.path)
    statement = _statement_at(function, location.span, lines)
    expression = _moved_expression(statement) if statement is not None else None
    if expression is None or any(isinstance(node, ast.Lambda) for node in ast.walk(expression)):
        return None
    if isinstance(expression, ast.Call) and ast.unparse(expression.func).endswith("graph_break"):
        return None  # an explicit break is the user's: in a function of its own it still breaks
    parameters = _free_names(expression, _locals_of(function))
    if parameters is None:
        return None
    assert statement is not None
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        stem = target.id if isinstance(target, ast.Name) else function.name
    else:
        stem = function.name
    helper = _unused_name(tree, f"_{stem.lstrip('_')}_eagerly")
    code = ast.unparse(expression)
    if isinstance(statement, ast.If | ast.While):
        code = f"bool({code})"  # a Python truth value: the compiled code branches on no tensor
    elif isinstance(statement, ast.For):
        code = f"list({code})"  # iterated whole, eagerly: the compiled loop goes over a plain list
    signature = ", ".join(parameters)
    definition = f"@{torch}.compiler.disable\ndef {helper}({signature}):\n    return {code}\n\n\n"
    first = first_line(top)
    edits = (
        Edit(brk.path, Span(first, 0, first, 0), definition),
        Edit(brk.path, node_span(expression, lines), f"{helper}({signature})"),
    )
    shown = code if len(code) <= 40 else code[:37] + "..."
    return Fix(
        f"Stop compiling `{shown}`: run it eagerly in a function of its own under @torch.compiler.disable "
        "(a workaround: the graph still splits, at its call)",
        edits,
        proof="skip",
    )


def class_to_module(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """A class defined in the compiled function, whose body reads none of the function's locals,
    defined once before the function instead (Dynamo cannot trace a class statement)."""
    location = _workspace_frame(brk)
    tree = sources.tree(brk.path)
    if tree is None:
        return None
    enclosing = _enclosing(tree, location)
    if enclosing is None:
        return None
    top, function = enclosing
    lines = sources.lines(brk.path)
    statement = _statement_at(function, location.span, lines)
    if not isinstance(statement, ast.ClassDef) or statement not in function.body:
        return None
    if _free_names(statement, _locals_of(function) - {statement.name}) != []:
        return None
    module_names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    module_names |= {
        t.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for t in node.targets
        if isinstance(t, ast.Name)
    }
    if statement.name in module_names:
        return None
    start, end = first_line(statement), statement.end_lineno or statement.lineno
    text = textwrap.dedent("\n".join(lines[start - 1 : end])) + "\n"
    if text.startswith((" ", "\t")):
        return None  # not one block of one indentation
    first = first_line(top)
    # The blank lines after it go too: the function's body goes on where the class was.
    following = function.body[function.body.index(statement) + 1 :]
    stop = first_line(following[0]) if following else end + 1
    edits = (
        Edit(brk.path, Span(first, 0, first, 0), text + "\n\n"),
        Edit(brk.path, Span(start, 0, stop, 0), ""),
    )
    return Fix(
        f"Define class {statement.name} once, before {function.name} (Dynamo cannot trace a class "
        "statement; the class is no longer made anew at each call)",
        edits,
    )
