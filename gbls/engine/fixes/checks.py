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


def _check(
    tree: ast.Module, statement: ast.stmt, readable: set[str], values: set[str]
) -> list[ast.stmt] | None:
    """What of ``statement``, when it is a check of ``readable``'s metadata (``values``: those read
    whole, as Python values), may hold the break: itself, and a helper's ``def`` it calls."""
    if _raising(statement) and _reads_metadata_only(statement, readable, values):
        return [statement]
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        helper = _helper(tree, statement.value, readable, values)
        if helper is not None:
            return [statement, helper]
    return None


def _leading_checks(tree: ast.Module, definition: ast.FunctionDef) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The checks the body starts with, and what of them (a statement, or a helper's ``def``) may hold
    the break."""
    parameters, values = _parameters(definition)
    checks: list[ast.stmt] = []
    holders: list[ast.stmt] = []
    for statement in definition.body:
        if _docstring(statement) and not checks and statement is definition.body[0]:
            continue
        held = _check(tree, statement, parameters, values)
        if held is None:
            break
        checks.append(statement)
        holders += held
    return checks, holders


def _stored(statements: list[ast.stmt]) -> set[str]:
    """The names ``statements`` bind or delete (in any function they define too: a conservative
    reading)."""
    found: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                found.add(node.id)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found.add(node.name)
            elif isinstance(node, ast.alias):
                found.add((node.asname or node.name).partition(".")[0])
    return found


def _returned_names(statement: ast.stmt) -> list[str] | None:
    """The names ``return NAME`` or ``return NAME, NAME...`` returns; None for any other statement."""
    if not isinstance(statement, ast.Return) or statement.value is None:
        return None
    value = statement.value
    elements = value.elts if isinstance(value, ast.Tuple) else [value]
    if not elements or not all(isinstance(e, ast.Name) for e in elements):
        return None
    return [e.id for e in elements if isinstance(e, ast.Name)]


def _returns_early(statements: list[ast.stmt]) -> bool:
    """Whether ``statements`` may return (a ``return`` outside any function they define)."""
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return False


def _trailing_checks(
    tree: ast.Module, definition: ast.FunctionDef
) -> tuple[list[ast.stmt], list[ast.stmt], list[ast.stmt]]:
    """The body before its trailing checks, the checks (right before ``return NAME, ...``, reading
    only the metadata of the names it returns and of the parameters the body before leaves bound as
    they were passed), and what of them may hold the break; no checks where the body has none so."""
    body = definition.body[1:] if _docstring(definition.body[0]) else definition.body
    returned = _returned_names(body[-1]) if body else None
    if returned is None:
        return [], [], []
    parameters, values = _parameters(definition)
    checks: list[ast.stmt] = []
    holders: list[ast.stmt] = []
    for index in range(len(body) - 2, 0, -1):
        before = body[:index]
        stored = _stored(before)
        readable = set(returned) | (parameters - stored)
        held = _check(tree, body[index], readable, values - stored)
        # The check reads no other local of the body before: none it does not return.
        read = {n.id for n in ast.walk(body[index]) if isinstance(n, ast.Name)}
        if held is None or read & (stored - readable) or _returns_early(before):
            break
        checks.insert(0, body[index])
        holders[:0] = held
    if not checks:
        return [], [], []
    return body[: len(body) - 1 - len(checks)], checks, holders


def _holds(holder: ast.stmt, line: int) -> bool:
    return holder.lineno <= line <= (holder.end_lineno or holder.lineno)


def _compiled_name(tree: ast.Module, definition: ast.FunctionDef) -> str:
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)
    }
    name, number = f"_{definition.name}_compiled", 2
    while name in taken:
        name, number = f"_{definition.name}_compiled_{number}", number + 1
    return name


def _compiled_signature(definition: ast.FunctionDef) -> str:
    """The compiled part's parameters: the function's, without defaults, since it passes every one."""
    signature = copy.deepcopy(definition.args)
    signature.defaults = []
    signature.kw_defaults = [None] * len(signature.kwonlyargs)
    return ast.unparse(signature)


def checked_before_compiling(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """The compiled function's leading checks run in Python, its rest compiled as a function of its own;
    or its trailing checks, after the body before them, compiled as a function of its own."""
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
    name = _compiled_name(tree, definition)
    line = brk.root.span.line
    checks, holders = _leading_checks(tree, definition)
    rest = definition.body[len(checks) + (1 if _docstring(definition.body[0]) else 0) :]
    if checks and rest and any(_holds(h, line) for h in holders):
        return _leading(definition, decorator, checks, rest, name, passed, here, lines)
    before, checks, holders = _trailing_checks(tree, definition)
    if before and any(_holds(h, line) for h in holders):
        return _trailing(definition, decorator, before, checks, name, passed, here, lines)
    return None


def _leading(
    definition: ast.FunctionDef,
    decorator: str,
    checks: list[ast.stmt],
    rest: list[ast.stmt],
    name: str,
    passed: str,
    here: str,
    lines: list[str],
) -> Fix | None:
    start, end = first_line(rest[0]), definition.end_lineno or definition.lineno
    if start <= (checks[-1].end_lineno or checks[-1].lineno) or start <= definition.lineno:
        return None  # the rest starts on a line a check (or the ``def``) holds
    indent = line_text(lines, start)[: rest[0].col_offset]
    body = "\n".join(line_text(lines, line) for line in range(start, end + 1))
    signature = _compiled_signature(definition)
    text = f"{indent}return {name}({passed})\n\n\n{decorator}\ndef {name}({signature}):\n{body}"
    count = "check" if len(checks) == 1 else f"{len(checks)} checks"
    return Fix(
        f"Run {definition.name}'s leading {count} in Python before the compiled code, which is the rest "
        f"of its body, compiled as `{name}`: the same exception where a check fails, raised before "
        "compiled code runs",
        (
            _undecorated(definition, here, lines),
            Edit(here, Span(start, 0, end, len(line_text(lines, end))), text),
        ),
        compiled_as=((definition.name, name),),
    )


def _trailing(
    definition: ast.FunctionDef,
    decorator: str,
    before: list[ast.stmt],
    checks: list[ast.stmt],
    name: str,
    passed: str,
    here: str,
    lines: list[str],
) -> Fix | None:
    start, end = first_line(before[0]), definition.end_lineno or definition.lineno
    last = before[-1].end_lineno or before[-1].lineno
    if first_line(checks[0]) <= last or start <= definition.lineno:
        return None  # a check starts on a line the body before it (or the ``def``) holds
    returned = definition.body[-1]
    assert isinstance(returned, ast.Return) and returned.value is not None
    names = ", ".join(_returned_names(returned) or ())
    indent = line_text(lines, start)[: before[0].col_offset]
    body = "\n".join(line_text(lines, line) for line in range(start, last + 1))
    tail = "\n".join(line_text(lines, line) for line in range(last + 1, end + 1))
    text = (
        f"{indent}{names} = {name}({passed})\n{tail}\n\n\n{decorator}\n"
        f"def {name}({_compiled_signature(definition)}):\n{body}\n{indent}return {names}"
    )
    count = "check" if len(checks) == 1 else f"{len(checks)} checks"
    return Fix(
        f"Run {definition.name}'s trailing {count} in Python after the compiled code, which is the body "
        f"before them, compiled as `{name}` and returning `{names}`: the same exception where a check "
        "fails, raised once compiled code has run",
        (
            _undecorated(definition, here, lines),
            Edit(here, Span(start, 0, end, len(line_text(lines, end))), text),
        ),
        compiled_as=((definition.name, name),),
        checked_after=(name,),
    )


def _undecorated(definition: ast.FunctionDef, here: str, lines: list[str]) -> Edit:
    """The function's decorators taken off: it runs in Python, and calls what is compiled."""
    first = node_span(definition.decorator_list[0], lines).line
    return Edit(here, Span(first, 0, definition.lineno, 0), "")
