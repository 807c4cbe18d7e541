"""Reading and editing Python source through its syntax tree: the shapes fixes look for."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from ...worker.shared.lines import split_lines
from ...worker.shared.workspace import installed
from ..model import BreakReport, Location
from ..ranges import Span, byte_to_char, line_text
from ..sources import Sources, parse
from .edits import Edit

# The methods of a ``logging.Logger`` that log a line.
LOGGER_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "log"}
# ``x.add_(1)``: torch's in-place methods end with one underscore (``__len__`` is no such method).
IN_PLACE = re.compile(r"[A-Za-z]\w*[^_]_")


def node_span(node: ast.AST, lines: list[str]) -> Span:
    """An AST node's span in characters (AST columns are UTF-8 bytes)."""
    line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return Span(
        line,
        byte_to_char(line_text(lines, line), node.col_offset),  # type: ignore[attr-defined]
        end_line,
        byte_to_char(line_text(lines, end_line), node.end_col_offset or 0),  # type: ignore[attr-defined]
    )


def nodes_at(tree: ast.Module, span: Span, lines: list[str], kind: type) -> list[Any]:
    return [node for node in ast.walk(tree) if isinstance(node, kind) and node_span(node, lines) == span]


def body_of(tree: ast.Module, statement: ast.stmt) -> list[ast.stmt]:
    """The statement list that holds ``statement``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if isinstance(body, list) and statement in body:
                return body
    return []


def alone_on_its_lines(statement: ast.stmt, lines: list[str]) -> bool:
    span = node_span(statement, lines)
    before = line_text(lines, span.line)[: span.column]
    after = line_text(lines, span.end_line)[span.end_column :].strip()
    return not before.strip() and (not after or after.startswith("#"))


def first_line(statement: ast.stmt) -> int:
    """The line a statement starts on: its first decorator's, if it has any."""
    decorators: list[ast.expr] = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])


def indent_of(lines: list[str], line: int) -> str:
    text = line_text(lines, line)
    return text[: len(text) - len(text.lstrip())]


def remove_statement(path: str, source: str, tree: ast.Module, statement: ast.stmt) -> Edit | None:
    """Delete a statement's lines; a body left empty keeps a ``pass``."""
    lines = split_lines(source)
    if not alone_on_its_lines(statement, lines):
        return None
    span = node_span(statement, lines)
    if len(body_of(tree, statement)) == 1:
        return Edit(
            path, Span(span.line, span.column, span.end_line, len(line_text(lines, span.end_line))), "pass"
        )
    return Edit(path, Span(span.line, 0, span.end_line + 1, 0), "")


def own_nodes(definition: ast.FunctionDef) -> Iterator[ast.AST]:
    """The nodes of ``definition``'s body, not those of a function or class defined in it."""
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            pending.extend(ast.iter_child_nodes(node))


def _base(node: ast.expr) -> str | None:
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changed_in_place(definition: ast.FunctionDef, names: set[str]) -> bool:
    """Whether ``definition``'s body visibly changes what one of ``names`` holds in place: ``x[0] = v``,
    ``x.w = v``, ``x += v`` (in place for a tensor), ``x.add_(1)``."""
    for node in own_nodes(definition):
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        changed = [
            t
            for t in targets
            if isinstance(t, ast.Subscript | ast.Attribute) or isinstance(node, ast.AugAssign)
        ]
        if any(_base(t) in names for t in changed):
            return True
        call = node.func if isinstance(node, ast.Call) else None
        if isinstance(call, ast.Attribute) and IN_PLACE.fullmatch(call.attr) and _base(call.value) in names:
            return True
    return False


def torch_name(tree: ast.Module) -> str | None:
    """The name bound to the torch module: ``import torch`` → ``torch``, ``import torch as T`` → ``T``."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                    return alias.asname or "torch"
    return None


def imports(tree: ast.Module | None, module: str) -> bool:
    """Whether ``tree`` binds ``module`` by its own name at its top level (``import warnings``)."""
    return tree is not None and any(
        isinstance(node, ast.Import) and any(a.name == module and a.asname is None for a in node.names)
        for node in tree.body
    )


def after_imports(tree: ast.Module) -> int:
    """The 1-based line just after the imports at the top of the module (and its docstring)."""
    line = 1
    for index, node in enumerate(tree.body):
        docstring = index == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if isinstance(node, ast.Import | ast.ImportFrom) or docstring:
            line = (node.end_lineno or node.lineno) + 1
        else:
            break
    return line


def insert_after_imports(path: str, source: str, statement: str) -> Edit | None:
    """Insert ``statement`` (using ``{torch}`` for the module's torch name) once, after the imports."""
    tree = parse(source)
    if tree is None:
        return None
    name = torch_name(tree)
    text = statement.format(torch=name or "torch") + "\n"
    if name is None:
        text = "import torch\n" + text
    line = after_imports(tree)
    return Edit(path, Span(line, 0, line, 0), text)


# -- the fixes --------------------------------------------------------------------------------------


def root_source(brk: BreakReport, sources: Sources) -> tuple[str, ast.Module, list[str]] | None:
    """The text, tree and lines of the file holding the root cause, if it parses."""
    source, tree = sources.text(brk.root.path), sources.tree(brk.root.path)
    if source is None or tree is None:
        return None
    return source, tree, sources.lines(brk.root.path)


def branch_at(brk: BreakReport, sources: Sources) -> tuple[ast.Module, list[str], ast.If] | None:
    """The tree and lines of the root cause's file, and the ``if`` whose condition is the root cause."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node_span(node.test, lines) == brk.root.span:
            return tree, lines, node
    return None


def root_calls(brk: BreakReport, sources: Sources) -> tuple[ast.Module, list[str], list[ast.Call]] | None:
    """The tree and lines of the root cause's file, and the calls the root cause is (none where the
    source has none there), if it parses."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    return tree, lines, nodes_at(tree, brk.root.span, lines, ast.Call)


def root_call_statement(brk: BreakReport, sources: Sources) -> tuple[str, ast.Module, ast.Expr] | None:
    """The root cause when it is a call standing as a statement of its own, e.g. ``print(x)``."""
    found = root_source(brk, sources)
    if found is None:
        return None
    source, tree, lines = found
    for statement in nodes_at(tree, brk.root.span, lines, ast.Expr):  # an Expr spans its value
        if isinstance(statement.value, ast.Call):
            return source, tree, statement
    return None


def enclosing_callee(brk: BreakReport, sources: Sources) -> tuple[Location, ast.FunctionDef, str] | None:
    """The smallest function of the user's around the root cause that the compiled function calls
    (not the compiled function itself), with the name the module binds torch to."""
    callees = [loc for loc in brk.chain[1:] if not installed(loc.path)]
    if not callees:
        return None
    location = callees[-1]
    tree = sources.tree(location.path)
    if tree is None:
        return None
    enclosing = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and node.name == location.function
        and node.lineno <= location.span.line <= (node.end_lineno or node.lineno)
    ]
    torch = torch_name(tree)
    if not enclosing or torch is None:
        return None
    definition = min(enclosing, key=lambda node: (node.end_lineno or node.lineno) - node.lineno)
    return location, definition, torch
