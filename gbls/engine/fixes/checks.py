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

Checks last in the body, right before ``return NAME, ...``, run in Python after the compiled body,
which returns those names. A timer read (GB0007: Dynamo skips ``time.perf_counter``) is the same kind
of Python statement the compiled body need not run: ``start = time.perf_counter()`` first in the body
runs before the compiled body, ``elapsed = time.perf_counter() - start`` last after it, timing the
call of the compiled body as it timed the body (under compile, with its compilation either way), and
``return y, elapsed >= 0`` returns what the compiled body returns (``y``) first, then what the timers
read. Only a clock of ``time`` as the module imports it, arithmetic of those readings and numbers, at
the body's top level, and never where the compiled body reads a name a timer read binds.
"""

from __future__ import annotations

import ast
import copy
from typing import NamedTuple

from ..model import BreakReport
from ..ranges import Span, line_text
from ..sources import Sources
from .edits import Edit, Fix
from .generators import compiled_here, forwarded
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
# The clocks of ``time`` a timer reads: Dynamo skips them, and their value is a Python number.
CLOCKS = {
    "time",
    "time_ns",
    "perf_counter",
    "perf_counter_ns",
    "monotonic",
    "monotonic_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
}


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


def _clocks(tree: ast.Module) -> set[str]:
    """The clocks of ``time`` as the module imports them: ``time.perf_counter``, ``perf_counter``."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "time":
                    found |= {f"{alias.asname or 'time'}.{clock}" for clock in CLOCKS}
        elif isinstance(node, ast.ImportFrom) and node.module == "time" and not node.level:
            found |= {alias.asname or alias.name for alias in node.names if alias.name in CLOCKS}
    return found


def _of_clocks(node: ast.expr, clocks: set[str], timed: set[str]) -> bool:
    """Whether ``node`` reads only clocks (called with nothing), numbers and ``timed`` (the names timer
    reads bound): arithmetic and comparisons of Python numbers, never of a tensor's data."""
    if isinstance(node, ast.Call):
        return not node.args and not node.keywords and ast.unparse(node.func) in clocks
    if isinstance(node, ast.Name):
        return node.id in timed
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | bool)
    if isinstance(node, ast.BinOp):
        return _of_clocks(node.left, clocks, timed) and _of_clocks(node.right, clocks, timed)
    if isinstance(node, ast.UnaryOp):
        return _of_clocks(node.operand, clocks, timed)
    if isinstance(node, ast.Compare):
        return all(_of_clocks(n, clocks, timed) for n in (node.left, *node.comparators))
    return False


def _timer(statement: ast.stmt, clocks: set[str], timed: set[str]) -> str | None:
    """The name ``statement`` binds where it reads a timer: ``NAME = CLOCK()``, or arithmetic of clocks
    read, numbers and ``timed``."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and _of_clocks(statement.value, clocks, timed)
        and any(isinstance(n, ast.Call) for n in ast.walk(statement.value))
    ):
        return None
    return statement.targets[0].id


def _python_statement(
    tree: ast.Module, statement: ast.stmt, readable: set[str], values: set[str], timed: set[str]
) -> list[ast.stmt] | None:
    """What of ``statement``, when the compiled body does not need it to run compiled, may hold the
    break: a check of ``readable``'s metadata (and a helper it calls), or a timer read (``timed``
    gains the name it binds)."""
    held = _check(tree, statement, readable, values)
    if held is not None:
        return held
    name = _timer(statement, _clocks(tree), timed)
    if name is None or name in readable:
        return None
    timed.add(name)
    return [statement]


def _leading_statements(
    tree: ast.Module, definition: ast.FunctionDef, timed: set[str]
) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """The Python statements the body starts with (checks, timer reads; ``timed`` gains the names these
    bind), and what of them (a statement, or a helper's ``def``) may hold the break."""
    parameters, values = _parameters(definition)
    statements: list[ast.stmt] = []
    holders: list[ast.stmt] = []
    for statement in definition.body:
        if _docstring(statement) and not statements and statement is definition.body[0]:
            continue
        held = _python_statement(tree, statement, parameters - timed, values, timed)
        if held is None:
            break
        statements.append(statement)
        holders += held
    return statements, holders


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


class Split(NamedTuple):
    """A compiled function's body: the Python statements it starts with, the body compiled, the Python
    statements after it (checks, timer reads) before its ``return``, what the compiled body returns
    for them (names), and, where the ``return`` also returns what they computed after the names, how
    many names it returns first (0: it returns what the function did)."""

    leading: list[ast.stmt]
    compiled: list[ast.stmt]
    trailing: list[ast.stmt]
    returned: list[str]
    returns_first: int
    holders: list[ast.stmt]


def _split(tree: ast.Module, definition: ast.FunctionDef) -> Split | None:
    """The body split around what it need not compile; None where nothing is so, or the compiled body
    reads a name a leading timer read binds."""
    timed: set[str] = set()
    leading, holders = _leading_statements(tree, definition, timed)
    body = definition.body[len(leading) + (1 if _docstring(definition.body[0]) else 0) :]
    if not body:
        return None
    trailing = _trailing_statements(tree, definition, body, set(timed))
    compiled = body[: len(body) - 1 - len(trailing[0])] if trailing is not None else body
    read = {n.id for s in compiled for n in ast.walk(s) if isinstance(n, ast.Name)}
    if read & timed:
        return None
    if trailing is None:
        return Split(leading, compiled, [], [], 0, holders) if leading else None
    statements, returned, first, held = trailing
    return Split(leading, compiled, statements, returned, first, holders + held)


def _trailing_statements(
    tree: ast.Module, definition: ast.FunctionDef, body: list[ast.stmt], timed: set[str]
) -> tuple[list[ast.stmt], list[str], int, list[ast.stmt]] | None:
    """The Python statements right before the body's ``return`` (checks of the metadata of what the
    compiled body returns and of the parameters it leaves bound as they were passed; timer reads),
    the names the compiled body returns, how many it returns first (where it returns more), and what
    of them may hold the break; the most statements so, the compiled body keeping its first. None
    where the ``return`` returns anything but those names and, after them, what timers read."""
    last = body[-1]
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    parameters, values = _parameters(definition)
    clocks = _clocks(tree)
    for index in range(1, len(body) - 1):
        before = body[:index]
        stored = _stored(before)
        if _returns_early(before):
            return None
        found, holders, now = [], [], set(timed)
        for statement in body[index:-1]:
            bound = set(now)
            elements = last.value.elts if isinstance(last.value, ast.Tuple) else [last.value]
            returned = [e.id for e in elements if isinstance(e, ast.Name) and e.id not in bound]
            readable = set(returned) | (parameters - stored)
            held = _python_statement(tree, statement, readable, values - stored, now)
            read = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            if held is None or read & (stored - readable - bound) or (now - bound) & stored:
                break
            found.append(statement)
            holders += held
        else:
            return _returning(last.value, found, holders, now, clocks)
    return None


def _returning(
    value: ast.expr, found: list[ast.stmt], holders: list[ast.stmt], timed: set[str], clocks: set[str]
) -> tuple[list[ast.stmt], list[str], int, list[ast.stmt]] | None:
    """What the compiled body returns before ``found``, where the ``return`` returns names (not
    ``timed``) and, after them, only what timers read (``timed``, numbers)."""
    elements = value.elts if isinstance(value, ast.Tuple) else [value]
    first = next((i for i, e in enumerate(elements) if not isinstance(e, ast.Name) or e.id in timed), None)
    names, others = elements[:first], elements[first:] if first is not None else []
    if not names or not all(_of_clocks(e, clocks, timed) for e in others):
        return None
    returned = [e.id for e in names if isinstance(e, ast.Name)]
    if len(set(returned)) != len(returned):
        return None
    return found, returned, len(returned) if others else 0, holders


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
    found = compiled_here(brk, here, sources) if brk.root.path == here else None
    if found is None:
        return None
    tree, lines, definition, decorator = found
    passed = forwarded(definition.args)
    if passed is None or any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(definition)):
        return None
    split = _split(tree, definition)
    line = brk.root.span.line
    if split is None or not any(_holds(h, line) for h in split.holders):
        return None
    return _around(definition, decorator, split, _compiled_name(tree, definition), passed, here, lines)


def _around(
    definition: ast.FunctionDef,
    decorator: str,
    split: Split,
    name: str,
    passed: str,
    here: str,
    lines: list[str],
) -> Fix | None:
    compiled = split.compiled
    start, end = first_line(compiled[0]), definition.end_lineno or definition.lineno
    last = compiled[-1].end_lineno or compiled[-1].lineno
    if start <= definition.lineno or any(start <= (s.end_lineno or s.lineno) for s in split.leading):
        return None  # the compiled body starts on a line a leading statement (or the ``def``) holds
    if split.trailing and first_line(split.trailing[0]) <= last:
        return None  # a trailing statement starts on a line the compiled body holds
    indent = line_text(lines, start)[: compiled[0].col_offset]
    signature = _compiled_signature(definition)
    if split.trailing:
        names = ", ".join(split.returned)
        body = "\n".join(line_text(lines, line) for line in range(start, last + 1))
        tail = "\n".join(line_text(lines, line) for line in range(last + 1, end + 1))
        text = (
            f"{indent}{names} = {name}({passed})\n{tail}\n\n\n{decorator}\n"
            f"def {name}({signature}):\n{body}\n{indent}return {names}"
        )
    else:
        body = "\n".join(line_text(lines, line) for line in range(start, end + 1))
        text = f"{indent}return {name}({passed})\n\n\n{decorator}\ndef {name}({signature}):\n{body}"
    checked = [s for s in split.trailing if s not in _timers(split.trailing)]
    return Fix(
        _title(definition.name, split, name),
        (
            _undecorated(definition, here, lines),
            Edit(here, Span(start, 0, end, len(line_text(lines, end))), text),
        ),
        compiled_as=((definition.name, name),),
        checked_after=(name,) if checked else (),
        returns_first=split.returns_first,
    )


def _timers(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Those of a split's Python ``statements`` that read a timer: what is not a check (nor a call of
    a helper that checks)."""
    return [s for s in statements if isinstance(s, ast.Assign)]


def _title(function: str, split: Split, name: str) -> str:
    timers = _timers(split.leading) + _timers(split.trailing)
    if timers:
        returning = f" and returning `{', '.join(split.returned)}`" if split.trailing else ""
        checks = len(split.leading) + len(split.trailing) - len(timers)
        body = "its body between them" if split.leading and split.trailing else "the rest of its body"
        body = body if split.leading else "the body before them"
        also = "" if not checks else (" and its check" if checks == 1 else f" and its {checks} checks")
        return (
            f"Read {function}'s timers{also} in Python around the compiled code, which is {body}, "
            f"compiled as `{name}`{returning}: they time the call of `{name}` as they timed the "
            "body it compiles (under compile, its compilation either way)"
        )
    if not split.trailing:
        count = "check" if len(split.leading) == 1 else f"{len(split.leading)} checks"
        return (
            f"Run {function}'s leading {count} in Python before the compiled code, which is the rest "
            f"of its body, compiled as `{name}`: the same exception where a check fails, raised before "
            "compiled code runs"
        )
    returning = f"compiled as `{name}` and returning `{', '.join(split.returned)}`"
    if split.leading:
        return (
            f"Run {function}'s leading and trailing checks in Python around the compiled code, which is "
            f"the rest of its body, {returning}: the same exception where a check fails, raised before "
            "or after compiled code runs"
        )
    count = "check" if len(split.trailing) == 1 else f"{len(split.trailing)} checks"
    return (
        f"Run {function}'s trailing {count} in Python after the compiled code, which is the body "
        f"before them, {returning}: the same exception where a check fails, raised once compiled code "
        "has run"
    )


def _undecorated(definition: ast.FunctionDef, here: str, lines: list[str]) -> Edit:
    """The function's decorators taken off: it runs in Python, and calls what is compiled."""
    first = node_span(definition.decorator_list[0], lines).line
    return Edit(here, Span(first, 0, definition.lineno, 0), "")
