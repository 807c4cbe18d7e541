"""A call Dynamo cannot trace in the compiled function's own body (a function it skips, such as
Python's RNG or a timer, GB0007, or NumPy's Python it would inline, GB0008; ``next`` of a generator
made outside, GB4347; a C extension's function), made where the function is called and passed in.

``noise = random.gauss(0.0, 0.01)`` in ``jitter(x, scale)`` becomes a parameter, ``jitter(x, scale,
noise)``, and each call of ``jitter`` in the file passes ``random.gauss(0.0, 0.01)``: the call runs
once per call of the function, as it did, right before its body instead of inside it, and the graph
no longer splits there. Only where that is all that changes: the call reads none of the function's
locals but its parameters (which each call gives as a constant or a name, read again for it), runs
exactly once in its body (in no branch, loop, or expression that may skip it), and the
file calls the function only by its name with its parameters given by position. Unsafe: what the
body did before the call now comes after it (a timer started at the top of the body measures
nothing more; one read after the body's work measures otherwise), and the proof holds it to the
analysed run's results and output.
"""

from __future__ import annotations

import ast
import copy

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .moves import _free_names, _locals_of
from .syntax import node_span, nodes_at, remove_statement, root_source

# What may skip a part of an expression, or run it more than once.
_CONDITIONAL = (ast.BoolOp, ast.IfExp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
# What may end a body before a later statement runs.
_LEAVING = (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom, ast.Try, ast.With, ast.Break, ast.Continue)


def _compiled_definition(tree: ast.Module, brk: BreakReport) -> ast.FunctionDef | None:
    """The module's function the break is in, compiled by a ``torch.compile`` decorator and holding
    the root cause in its own body."""
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef) or node.name != brk.function:
            continue
        decorators = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        if len(decorators) == 1 and decorators[0].endswith("compile"):
            return node
    return None


def _holder(definition: ast.FunctionDef, call: ast.Call) -> ast.stmt | None:
    """The statement of the function's own body that holds ``call``, when it runs it exactly once:
    through no branch or loop, and after no statement that may leave the body first."""
    for statement in definition.body:
        nodes = list(ast.walk(statement))
        if call not in nodes:
            if any(isinstance(node, _LEAVING) for node in nodes):
                return None
            continue
        if not isinstance(statement, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Expr | ast.Return):
            return None
        if any(isinstance(node, _CONDITIONAL) and call in ast.walk(node) for node in nodes):
            return None
        return statement
    return None


def _fresh(definition: ast.FunctionDef, wanted: str) -> str:
    taken = {node.id for node in ast.walk(definition) if isinstance(node, ast.Name)} | _locals_of(definition)
    name, number = wanted, 2
    while name in taken:
        name, number = f"{wanted}_{number}", number + 1
    return name


def _after(node: ast.AST, lines: list[str]) -> Span:
    end = node_span(node, lines)
    return Span(end.end_line, end.end_column, end.end_line, end.end_column)


class _Given(ast.NodeTransformer):
    def __init__(self, arguments: dict[str, ast.expr]) -> None:
        self.arguments = arguments

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return self.arguments.get(node.id, node) if isinstance(node.ctx, ast.Load) else node


def _with_arguments(call: ast.Call, arguments: dict[str, ast.expr]) -> str:
    """``call`` as a call of the function would make it: each parameter it reads, the argument given."""
    return ast.unparse(_Given(arguments).visit(copy.deepcopy(call)))


def passed_in(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """The root cause's call made at each call of the compiled function in the file and passed in."""
    found = root_source(brk, sources)
    if found is None or brk.root.path != here or brk.root.function != brk.function:
        return None
    source, tree, lines = found
    calls = nodes_at(tree, brk.root.span, lines, ast.Call)
    definition = _compiled_definition(tree, brk)
    if not calls or definition is None:
        return None
    call = calls[0]
    arguments = definition.args
    parameters = arguments.args
    if arguments.posonlyargs or arguments.vararg or arguments.kwonlyargs or arguments.kwarg:
        return None
    read = _free_names(call, _locals_of(definition))
    names = [parameter.arg for parameter in parameters]
    rebound = {n.id for n in ast.walk(definition) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if (
        arguments.defaults
        or not parameters
        or read is None
        or any(n not in names or n in rebound for n in read)
    ):
        return None  # it reads a local the function computes, or a parameter it changes
    statement = _holder(definition, call)
    if statement is None or (isinstance(statement, ast.Expr) and statement.value is call):
        return None  # a call for its effect alone (a warning) has no value to pass in
    # Every use of the function's name in the file is a call that gives each parameter by position.
    shadowed = {
        id(node)
        for scope in ast.walk(tree)
        if isinstance(scope, ast.FunctionDef) and definition.name in _locals_of(scope)
        for node in ast.walk(scope)
    }
    uses = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Name) and n.id == definition.name and id(n) not in shadowed
    ]
    sites = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == definition.name
    ]
    if not sites or len(sites) != len(uses):
        return None
    if any(site.keywords or len(site.args) != len(parameters) for site in sites):
        return None
    if any(isinstance(argument, ast.Starred) for site in sites for argument in site.args):
        return None
    # A parameter it reads is the argument each call gives, read twice there: a constant or a name.
    given = [dict(zip(names, site.args, strict=True)) for site in sites]
    if any(not isinstance(arguments_of[n], ast.Constant | ast.Name) for arguments_of in given for n in read):
        return None
    text = ast.get_source_segment(source, call) or ast.unparse(call)
    texts = [_with_arguments(call, arguments_of) if read else text for arguments_of in given]
    bound = (
        statement.targets[0].id
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.value is call
        else None
    )
    read_before = bound is not None and any(
        isinstance(n, ast.Name) and n.id == bound and isinstance(n.ctx, ast.Load)
        for s in definition.body[: definition.body.index(statement)]
        for n in ast.walk(s)
    )
    edits: list[Edit] = []
    if bound is not None and not read_before:
        name = bound
        removed = remove_statement(brk.root.path, source, tree, statement)
        if removed is None:
            return None
        edits.append(removed)
    else:
        function = call.func
        stem = function.attr if isinstance(function, ast.Attribute) else ast.unparse(function)
        name = _fresh(definition, stem.strip("_") or "value")
        edits.append(Edit(brk.root.path, node_span(call, lines), name))
    edits.append(Edit(brk.root.path, _after(parameters[-1], lines), f", {name}"))
    edits += [
        Edit(brk.root.path, _after(site.args[-1], lines), f", {made}")
        for site, made in zip(sites, texts, strict=True)
    ]
    where = "its call" if len(sites) == 1 else f"each of its {len(sites)} calls"
    return Fix(
        f"Call `{text}` where {definition.name} is called ({where} in the file) and pass it in as "
        f"`{name}`: Dynamo does not trace it; it runs once per call, before the body, not inside it",
        tuple(edits),
    )
