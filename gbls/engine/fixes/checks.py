"""A compiled function whose leading checks raise (GB0088 Observed exception: Dynamo gives the frame up
where an exception leaves it; GB0034 and GB0170 where a helper's ``assert`` fails while it is
inlined): the checks run in Python, before the compiled code, as a user writes it.

``@torch.compile def checked_ratio(x, y)`` whose body starts with ``if y.shape != x.shape: raise
RuntimeError(...)`` loses its decorator and keeps the checks; the rest of its body becomes a compiled
function of its own, ``_checked_ratio_compiled(x, y)``, which it returns the call of. Its callers call
it by the name they did, and a failing check raises the same exception with the same message, now
from Python. Only where the checks come first in the body (``if COND: raise ...``, ``assert ...``,
or a call of a helper of the module whose body only checks so) and read the parameters' shapes,
dims, dtypes and devices (``x.shape``, ``x.dim()``, ``len(x)``, ``isinstance(x, ...)``, ``x is None``)
or a parameter annotated as a Python number, string or flag: what they read compiles into guards,
never into a graph, so no tensor operation leaves compiled code. A check that reads a tensor's data,
or one the function computed (``y = x + 1`` first), is not one.
"""

from __future__ import annotations

import ast
import copy

from ..model import BreakReport
from ..ranges import Span, line_text
from ..sources import Sources
from .edits import Edit, Fix
from .generators import compiled_by_decorator, forwarded
from .syntax import first_line, node_span

# What a check may read of a tensor parameter: what Dynamo guards on, never its data.
METADATA = {"shape", "ndim", "dtype", "device", "layout", "is_cuda", "requires_grad"}
METADATA_METHODS = {"dim", "size", "numel", "ndimension", "nelement", "is_floating_point", "is_complex"}
# What a check may call with a parameter itself.
INSPECTING = {"len", "isinstance"}
# The annotations of a parameter whose value is a Python one, which a guard reads.
PYTHON_VALUES = {"int", "float", "bool", "str"}
# What a check may not hold.
_NOT_A_CHECK = (ast.NamedExpr, ast.Yield, ast.YieldFrom, ast.Await, ast.Lambda)


def _docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


def _parents(node: ast.AST) -> dict[int, ast.AST]:
    return {id(child): parent for parent in ast.walk(node) for child in ast.iter_child_nodes(parent)}


def _reads_metadata_only(statement: ast.stmt, parameters: set[str], values: set[str]) -> bool:
    """Whether ``statement`` reads of ``parameters`` only what Dynamo guards on (``values``: those a
    Python value, read whole)."""
    parents = _parents(statement)
    for node in ast.walk(statement):
        if isinstance(node, _NOT_A_CHECK):
            return False
        if not (isinstance(node, ast.Name) and node.id in parameters) or node.id in values:
            continue
        if not isinstance(node.ctx, ast.Load):
            return False
        parent = parents.get(id(node))
        if isinstance(parent, ast.Attribute) and parent.attr in METADATA:
            continue
        if isinstance(parent, ast.Attribute) and parent.attr in METADATA_METHODS:
            called = parents.get(id(parent))
            if isinstance(called, ast.Call) and called.func is parent:
                continue
        if (
            isinstance(parent, ast.Call)
            and isinstance(parent.func, ast.Name)
            and parent.func.id in INSPECTING
        ):
            if parent.args[:1] == [node]:
                continue
        if isinstance(parent, ast.Compare) and len(parent.ops) == 1:
            other = parent.comparators[0] if parent.left is node else parent.left
            if isinstance(parent.ops[0], ast.Is | ast.IsNot) and isinstance(other, ast.Constant):
                continue
        return False
    return True


def _raising(statement: ast.stmt) -> bool:
    """``assert ...`` or ``if COND: raise ...`` (no ``else``)."""
    if isinstance(statement, ast.Assert):
        return True
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and len(statement.body) == 1
        and isinstance(statement.body[0], ast.Raise)
    )


def _parameters(definition: ast.FunctionDef) -> tuple[set[str], set[str]]:
    """The parameters' names, and those annotated as a Python value."""
    arguments = definition.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    values = {a.arg for a in every if isinstance(a.annotation, ast.Name) and a.annotation.id in PYTHON_VALUES}
    return {a.arg for a in every}, values


def _helper(
    tree: ast.Module, call: ast.Call, parameters: set[str], values: set[str]
) -> ast.FunctionDef | None:
    """The module's undecorated function ``call`` calls, when its body only checks its parameters'
    metadata and each argument is a parameter of the caller (read as the caller reads it)."""
    if not isinstance(call.func, ast.Name) or call.keywords:
        return None
    if not all(isinstance(a, ast.Name) and a.id in parameters for a in call.args):
        return None
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == call.func.id]
    if len(found) != 1 or found[0].decorator_list:
        return None
    helper = found[0]
    arguments = helper.args
    if arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs or arguments.kwarg:
        return None
    if len(arguments.args) != len(call.args):
        return None
    own = {a.arg for a in arguments.args}
    # A parameter it is given a Python value for is read as one there too.
    given = {
        a.arg
        for a, passed in zip(arguments.args, call.args, strict=True)
        if isinstance(passed, ast.Name) and passed.id in values
    }
    body = [s for s in helper.body if not _docstring(s)]
    if not body or not all(_raising(s) and _reads_metadata_only(s, own, given) for s in body):
        return None
    return helper


def _leading_checks(tree: ast.Module, definition: ast.FunctionDef) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The checks the body starts with, and what of them (a statement, or a helper's ``def``) may hold
    the break."""
    parameters, values = _parameters(definition)
    checks: list[ast.stmt] = []
    holders: list[ast.stmt] = []
    for statement in definition.body:
        if _docstring(statement) and not checks and statement is definition.body[0]:
            continue
        if _raising(statement) and _reads_metadata_only(statement, parameters, values):
            checks.append(statement)
            holders.append(statement)
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            helper = _helper(tree, statement.value, parameters, values)
            if helper is not None:
                checks.append(statement)
                holders += [statement, helper]
                continue
        break
    return checks, holders


def _holds(holder: ast.stmt, line: int) -> bool:
    return holder.lineno <= line <= (holder.end_lineno or holder.lineno)


def checked_before_compiling(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """The compiled function's leading checks run in Python, its rest compiled as a function of its own."""
    tree, source = sources.tree(here), sources.text(here)
    if tree is None or source is None or "." in brk.function or brk.root.path != here:
        return None
    lines = sources.lines(here)
    found = compiled_by_decorator(tree, source, brk.function, lines)
    if found is None:
        return None
    definition, decorator = found
    passed = forwarded(definition.args)
    if passed is None or any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(definition)):
        return None
    checks, holders = _leading_checks(tree, definition)
    rest = definition.body[len(checks) + (1 if _docstring(definition.body[0]) else 0) :]
    if not checks or not rest or not any(_holds(h, brk.root.span.line) for h in holders):
        return None
    start, end = first_line(rest[0]), definition.end_lineno or definition.lineno
    if start <= (checks[-1].end_lineno or checks[-1].lineno) or start <= definition.lineno:
        return None  # the rest starts on a line a check (or the ``def``) holds
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }
    name, number = f"_{definition.name}_compiled", 2
    while name in taken:
        name, number = f"_{definition.name}_compiled_{number}", number + 1
    # The compiled rest needs no defaults: the function passes it every parameter.
    signature = copy.deepcopy(definition.args)
    signature.defaults = []
    signature.kw_defaults = [None] * len(signature.kwonlyargs)
    indent = line_text(lines, start)[: rest[0].col_offset]
    body = "\n".join(line_text(lines, line) for line in range(start, end + 1))
    text = f"{indent}return {name}({passed})\n\n\n{decorator}\ndef {name}({ast.unparse(signature)}):\n{body}"
    first = node_span(definition.decorator_list[0], lines).line
    edits = (
        Edit(here, Span(first, 0, definition.lineno, 0), ""),
        Edit(here, Span(start, 0, end, len(line_text(lines, end))), text),
    )
    count = "check" if len(checks) == 1 else f"{len(checks)} checks"
    return Fix(
        f"Run {definition.name}'s leading {count} in Python before the compiled code, which is the rest "
        f"of its body, compiled as `{name}`: the same exception where a check fails, raised before "
        "compiled code runs",
        edits,
        compiled_as=((definition.name, name),),
    )
