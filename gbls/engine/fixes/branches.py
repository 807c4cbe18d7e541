"""Fixes for a data-dependent branch (GB0170): ``torch.where`` and ``torch.cond`` rewrites.

From the simplest sure rewrite to a skeleton the user completes: ``if c: x = f(x)`` and
``a if c else b`` become ``torch.where``; an ``if``/``else`` that only assigns, or an early
``return``, becomes ``torch.cond``; any other ``if`` becomes a ``torch.cond`` skeleton with the
branches moved in (a snippet where the editor takes one).
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..ranges import Span, line_text
from ..sources import Sources
from .edits import Edit, Fix, Maker
from .syntax import body_of, branch_at, indent_of, node_span, root_source, torch_name


def where_rewrite(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``if c: x = f(x)`` → ``x = torch.where(c, f(x), x)``; ``a if c else b`` → ``torch.where(c, a, b)``."""
    found_root = root_source(brk, sources)
    if found_root is None:
        return None
    _, tree, lines = found_root
    name = torch_name(tree) or "torch"
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and node_span(node.test, lines) == brk.root.span:
            parts = ", ".join(ast.unparse(part) for part in (node.test, node.body, node.orelse))
            text = f"{name}.where({parts})"
            return Fix(
                "Rewrite the conditional expression with torch.where",
                (Edit(brk.root.path, node_span(node, lines), text),),
            )
        if isinstance(node, ast.If) and node_span(node.test, lines) == brk.root.span:
            target = _single_assignment(node.body)
            other = _single_assignment(node.orelse) if node.orelse else None
            if target is None or (node.orelse and (other is None or other[0] != target[0])):
                return None
            variable, value = target
            otherwise = other[1] if other else variable
            text = f"{variable} = {name}.where({ast.unparse(node.test)}, {value}, {otherwise})"
            span = node_span(node, lines)
            edit = Edit(
                brk.root.path,
                Span(span.line, span.column, span.end_line, len(line_text(lines, span.end_line))),
                text,
            )
            return Fix("Rewrite the branch with torch.where (both sides are computed)", (edit,))
    return None


# What gives a Python value, not a tensor, whatever it is called on: a torch.cond branch may not return it.
_SCALAR_METHODS = {"item", "tolist", "numpy", "dim", "numel", "nelement", "size", "stride", "element_size"}
_SCALAR_ATTRIBUTES = {"shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "layout"}
_SCALAR_BUILTINS = {"int", "float", "bool", "complex", "len", "str", "list", "tuple", "dict", "range", "repr"}


def may_be_tensor(value: ast.expr) -> bool:
    """Whether ``value`` can be a tensor: not a constant, nor built only of what gives Python values
    (``x.item() + 1`` is a float). What can be one is then proven by re-analysis of the rewrite."""
    if isinstance(value, ast.Constant | ast.JoinedStr | ast.List | ast.Dict | ast.Set | ast.Compare):
        return False
    if isinstance(value, ast.BoolOp | ast.ListComp | ast.DictComp | ast.SetComp | ast.GeneratorExp):
        return False
    if isinstance(value, ast.Tuple):
        return bool(value.elts) and all(may_be_tensor(element) for element in value.elts)
    if isinstance(value, ast.BinOp):
        return may_be_tensor(value.left) or may_be_tensor(value.right)
    if isinstance(value, ast.UnaryOp):
        return not isinstance(value.op, ast.Not) and may_be_tensor(value.operand)
    if isinstance(value, ast.Attribute):
        return value.attr not in _SCALAR_ATTRIBUTES and may_be_tensor(value.value)
    if isinstance(value, ast.Subscript):
        return may_be_tensor(value.value)
    if isinstance(value, ast.Call):
        function = value.func
        if isinstance(function, ast.Name):
            return function.id not in _SCALAR_BUILTINS
        if isinstance(function, ast.Attribute):
            return function.attr not in _SCALAR_METHODS and (
                isinstance(function.value, ast.Name) or may_be_tensor(function.value)
            )
        return True
    return isinstance(value, ast.Name | ast.IfExp | ast.Starred) or not isinstance(value, ast.expr)


def _single_assignment(body: list[ast.stmt]) -> tuple[str, str] | None:
    if len(body) != 1 or not isinstance(body[0], ast.Assign):
        return None
    statement = body[0]
    if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    return statement.targets[0].id, ast.unparse(statement.value)


def _returned(outputs: list[str], assigned: set[str]) -> str:
    """What a branch returns: what it set, and a copy of what it left alone (a torch.cond branch
    may not return its input itself)."""
    return ", ".join(name if name in assigned else f"{name}.clone()" for name in outputs)


def _assigned(body: list[ast.stmt]) -> set[str]:
    return {
        n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


def _defined_before(tree: ast.Module, statement: ast.stmt) -> set[str]:
    """Names the enclosing function binds (parameters, assignments) before ``statement``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and statement in list(ast.walk(node)):
            names = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Name)
                    and isinstance(inner.ctx, ast.Store)
                    and inner.lineno < statement.lineno
                ):
                    names.add(inner.id)
            return names
    return set()


def cond_rewrite(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """An ``if`` that only assigns becomes ``torch.cond``, one function per branch returning what it sets."""
    found = branch_at(brk, sources)
    if found is None:
        return None
    tree, lines, statement = found
    if _single_assignment(statement.body) and not statement.orelse:
        return None  # torch.where says it more simply
    branches = [statement.body, statement.orelse]
    if not all(isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign) for body in branches for s in body):
        return None
    assigned = [s for body in branches for s in body if isinstance(s, ast.Assign | ast.AnnAssign)]
    if not all(s.value is not None and may_be_tensor(s.value) for s in assigned):
        return None  # a branch sets a Python value: torch.cond returns only tensors
    outputs = sorted(_assigned(statement.body) | _assigned(statement.orelse))
    before = _defined_before(tree, statement)
    # A value set by one branch only must exist already, for the other branch to return it.
    both = _assigned(statement.body) & _assigned(statement.orelse)
    if not outputs or any(name not in before and name not in both for name in outputs):
        return None
    # The branches become functions: what they read and reassign is passed in, as torch.cond operands.
    operands = [name for name in outputs if name in before]
    name = torch_name(tree) or "torch"
    indent = indent_of(lines, statement.lineno)
    parameters, results = ", ".join(operands), ", ".join(outputs)
    text = []
    for label, body in (("true", statement.body), ("false", statement.orelse)):
        text.append(f"{indent}def _{label}_branch({parameters}):")
        text += [f"{indent}    {ast.unparse(s)}" for s in body]
        text.append(f"{indent}    return {_returned(outputs, _assigned(body))}")
    packed = f"({parameters},)" if len(operands) == 1 else f"({parameters})"
    condition = ast.unparse(statement.test)
    text.append(f"{indent}{results} = {name}.cond({condition}, _true_branch, _false_branch, {packed})")
    span = node_span(statement, lines)
    end = Span(span.line, 0, span.end_line, len(line_text(lines, span.end_line)))
    return Fix(
        "Rewrite the branch with torch.cond (both branches must return tensors of the same shape)",
        (Edit(brk.root.path, end, "\n".join(text)),),
    )


def _loaded_before(tree: ast.Module, statement: ast.stmt, nodes: list[ast.AST]) -> list[str]:
    """The names ``nodes`` read that the enclosing function binds before ``statement``: the operands."""
    before = _defined_before(tree, statement)
    read = {
        n.id
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return sorted(read & before)


def return_rewrite(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``if c: return a`` then ``return b`` (or ``else: return b``) → ``return torch.cond(c, ...)``."""
    found = branch_at(brk, sources)
    if found is None:
        return None
    tree, lines, statement = found
    body = body_of(tree, statement)
    last: ast.stmt
    if statement.orelse:
        otherwise, last = statement.orelse, statement
    else:
        following = body[body.index(statement) + 1 : body.index(statement) + 2]
        otherwise, last = following, following[0] if following else statement
    returns = [statement.body, otherwise]
    if not all(len(b) == 1 and isinstance(b[0], ast.Return) and b[0].value is not None for b in returns):
        return None
    values = [b[0].value for b in returns]  # type: ignore[attr-defined]
    if not all(may_be_tensor(value) for value in values):
        return None  # a branch returns a Python value: torch.cond returns only tensors
    operands = _loaded_before(tree, statement, values)
    if not operands:
        return None
    name = torch_name(tree) or "torch"
    indent = indent_of(lines, statement.lineno)
    parameters = ", ".join(operands)
    text = []
    for label, value in (("true", values[0]), ("false", values[1])):
        text += [f"{indent}def _{label}_branch({parameters}):", f"{indent}    return {ast.unparse(value)}"]
    packed = f"({parameters},)" if len(operands) == 1 else f"({parameters})"
    text.append(
        f"{indent}return {name}.cond({ast.unparse(statement.test)}, _true_branch, _false_branch, {packed})"
    )
    end = node_span(last, lines)
    span = Span(statement.lineno, 0, end.end_line, len(line_text(lines, end.end_line)))
    return Fix(
        "Rewrite the early return with torch.cond (both branches must return tensors of the same shape)",
        (Edit(brk.root.path, span, "\n".join(text)),),
    )


def _snippet_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


def cond_skeleton(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """Any other data-dependent ``if``: a ``torch.cond`` skeleton, the branches moved in, to complete."""
    if any(rewrite(brk, here, sources) for rewrite in (where_rewrite, cond_rewrite, return_rewrite)):
        return None  # a complete rewrite is on offer
    found = branch_at(brk, sources)
    if found is None:
        return None
    tree, lines, statement = found
    if any(isinstance(n, ast.Return) for s in [*statement.body, *statement.orelse] for n in ast.walk(s)):
        return None  # a return moved into a branch function returns from it: no longer the code's meaning
    operands = ", ".join(_loaded_before(tree, statement, [*statement.body, *statement.orelse])) or "x"
    # A first guess at the outputs: what the branches set that lives on after them (not a loop variable).
    true_sets, false_sets = _assigned(statement.body), _assigned(statement.orelse)
    living = (true_sets | false_sets) & (_defined_before(tree, statement) | (true_sets & false_sets))
    outputs = ", ".join(sorted(living)) or operands
    indent = indent_of(lines, statement.lineno)
    name = torch_name(tree) or "torch"
    text = []
    for label, body in (("true", statement.body), ("false", statement.orelse)):
        text.append(f"{indent}def _{label}_branch(${{1:{operands}}}):")
        for node in body:
            text += [f"{indent}    {_snippet_escape(line)}" for line in ast.unparse(node).splitlines()]
        returned = _returned(sorted(living), _assigned(body)) if living else operands
        text.append(f"{indent}    return ${{{3 if label == 'true' else 4}:{returned}}}")
    condition = _snippet_escape(ast.unparse(statement.test))
    call = f"{name}.cond({condition}, _true_branch, _false_branch, (${{1:{operands}}},))"
    text.append(f"{indent}${{2:{outputs}}} = {call}")
    span = node_span(statement, lines)
    edit = Edit(
        brk.root.path,
        Span(span.line, 0, span.end_line, len(line_text(lines, span.end_line))),
        "\n".join(text),
        snippet=True,
    )
    return Fix("Turn the branch into a torch.cond skeleton to complete (operands, outputs)", (edit,))


REWRITES: tuple[Maker, ...] = (where_rewrite, cond_rewrite, return_rewrite, cond_skeleton)
