"""The fix catalogue: for a break, edits that make it go away (or turn it into the documented alternative).

Each entry is keyed by the GB id of the user's torch registry (with the gb_type as a fallback for
torch without ids) and is a small function from the break and the source texts to a ``Fix``, or
to nothing when the code does not have the shape the fix is sure about. Fixes marked ``safe`` keep
what the code computes and are applied by ``gbls check --fix``.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .ranges import Span, byte_to_char, line_text
from .report import BreakReport, Location

TextOf = Callable[[str], str | None]

LOGGING_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


@dataclass(frozen=True)
class Edit:
    """Replace ``span`` (characters; an empty span inserts) of ``path`` by ``text``.

    A ``snippet`` edit's text has LSP snippet placeholders (``${1:x}``) for the editor to fill in;
    ``plain_text`` gives it with each placeholder's default, for clients without snippet edits.
    """

    path: str
    span: Span
    text: str
    snippet: bool = False

    @property
    def plain_text(self) -> str:
        if not self.snippet:
            return self.text
        text = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", self.text)
        return re.sub(r"\\([$}\\])", r"\1", text)


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    safe: bool = False


@dataclass(frozen=True)
class Broken:
    """What a fix needs to know about one break: where the graph splits, and the chain to the cause."""

    path: str
    function: str
    gb_id: str | None
    gb_type: str
    span: Span
    chain: tuple[Location, ...]

    @property
    def root(self) -> Location:
        return self.chain[-1]

    @classmethod
    def of(cls, brk: BreakReport, path: str) -> Broken:
        return cls(path, brk.function, brk.gb_id, brk.gb_type, brk.span, brk.chain)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Broken:
        """From a diagnostic's ``data`` (see ``diagnostics.break_data``)."""
        chain = tuple(Location(f["path"], f["function"], Span(*f["span"])) for f in data["chain"])
        start, end = chain[0].span, chain[0].span
        for location in chain:
            if location.path == data["path"]:
                start = end = location.span
                break
        span = Span(int(data["line"]), start.column, end.end_line, end.end_column)
        return cls(data["path"], data["function"], data.get("gb_id"), data["gb_type"], span, chain)


# -- reading the source ---------------------------------------------------------------------------


def _parse(source: str | None) -> ast.Module | None:
    if source is None:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def node_span(node: ast.AST, lines: list[str]) -> Span:
    """An AST node's span in characters (AST columns are UTF-8 bytes)."""
    line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
    return Span(
        line,
        byte_to_char(line_text(lines, line), node.col_offset),  # type: ignore[attr-defined]
        end_line,
        byte_to_char(line_text(lines, end_line), node.end_col_offset or 0),  # type: ignore[attr-defined]
    )


def _nodes_at(tree: ast.Module, span: Span, lines: list[str], kind: type) -> list[Any]:
    return [node for node in ast.walk(tree) if isinstance(node, kind) and node_span(node, lines) == span]


def _body_of(tree: ast.Module, statement: ast.stmt) -> list[ast.stmt]:
    """The statement list that holds ``statement``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if isinstance(body, list) and statement in body:
                return body
    return []


def _alone_on_its_lines(statement: ast.stmt, lines: list[str]) -> bool:
    span = node_span(statement, lines)
    before = line_text(lines, span.line)[: span.column]
    after = line_text(lines, span.end_line)[span.end_column :].strip()
    return not before.strip() and (not after or after.startswith("#"))


def _indent(lines: list[str], line: int) -> str:
    text = line_text(lines, line)
    return text[: len(text) - len(text.lstrip())]


def _remove_statement(path: str, source: str, tree: ast.Module, statement: ast.stmt) -> Edit | None:
    """Delete a statement's lines; a body left empty keeps a ``pass``."""
    lines = source.splitlines()
    if not _alone_on_its_lines(statement, lines):
        return None
    span = node_span(statement, lines)
    if len(_body_of(tree, statement)) == 1:
        return Edit(
            path, Span(span.line, span.column, span.end_line, len(line_text(lines, span.end_line))), "pass"
        )
    return Edit(path, Span(span.line, 0, span.end_line + 1, 0), "")


def torch_name(tree: ast.Module) -> str | None:
    """The name bound to the torch module: ``import torch`` → ``torch``, ``import torch as T`` → ``T``."""
    for node in tree.body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or (alias.name.startswith("torch.") and alias.asname is None):
                    return alias.asname or "torch"
    return None


def _after_imports(tree: ast.Module) -> int:
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
    tree = _parse(source)
    if tree is None:
        return None
    name = torch_name(tree)
    text = statement.format(torch=name or "torch") + "\n"
    if name is None:
        text = "import torch\n" + text
    line = _after_imports(tree)
    return Edit(path, Span(line, 0, line, 0), text)


# -- the fixes --------------------------------------------------------------------------------------


def _root_source(broken: Broken, text_of: TextOf) -> tuple[str, ast.Module, list[str]] | None:
    """The text, tree and lines of the file holding the root cause, if it parses."""
    source = text_of(broken.root.path)
    tree = _parse(source)
    if source is None or tree is None:
        return None
    return source, tree, source.splitlines()


def _root_call_statement(broken: Broken, text_of: TextOf) -> tuple[str, ast.Module, ast.Expr] | None:
    """The root cause when it is a call standing as a statement of its own, e.g. ``print(x)``."""
    found = _root_source(broken, text_of)
    if found is None:
        return None
    source, tree, lines = found
    for statement in _nodes_at(tree, broken.root.span, lines, ast.Expr):  # an Expr spans its value
        if isinstance(statement.value, ast.Call):
            return source, tree, statement
    return None


def _is_logging_call(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Name):
        return function.id == "print"
    return isinstance(function, ast.Attribute) and function.attr in LOGGING_METHODS


def remove_logging_call(broken: Broken, text_of: TextOf) -> Fix | None:
    found = _root_call_statement(broken, text_of)
    if found is None:
        return None
    source, tree, statement = found
    call = statement.value
    if not isinstance(call, ast.Call) or not _is_logging_call(call):
        return None
    edit = _remove_statement(broken.root.path, source, tree, statement)
    if edit is None:
        return None
    return Fix(f"Remove the {ast.unparse(call.func)}() call", (edit,))


def register_reorderable_print(broken: Broken, text_of: TextOf) -> Fix | None:
    """Dynamo moves registered logging calls after the graph, when their arguments are plain values."""
    found = _root_call_statement(broken, text_of)
    source = text_of(broken.path)
    if found is None or source is None:
        return None
    call = found[2].value
    assert isinstance(call, ast.Call)
    plain = all(
        isinstance(a, ast.Name | ast.Constant) for a in [*call.args, *(k.value for k in call.keywords)]
    )
    if not (isinstance(call.func, ast.Name) and call.func.id == "print" and plain):
        return None
    if re.search(r"reorderable_logging_functions\.add\(\s*print\s*\)", source):
        return None
    edit = insert_after_imports(
        broken.path, source, "{torch}._dynamo.config.reorderable_logging_functions.add(print)"
    )
    if edit is None:
        return None
    return Fix(
        "Let Dynamo move print() after the graph (torch._dynamo.config.reorderable_logging_functions)",
        (edit,),
    )


def config_flag(flag: str) -> Callable[[Broken, TextOf], Fix | None]:
    def enable(broken: Broken, text_of: TextOf) -> Fix | None:
        source = text_of(broken.path)
        if source is None or re.search(rf"_dynamo\.config\.{flag}\s*=\s*True", source):
            return None
        edit = insert_after_imports(broken.path, source, f"{{torch}}._dynamo.config.{flag} = True")
        if edit is None:
            return None
        return Fix(f"Enable torch._dynamo.config.{flag}", (edit,), safe=True)

    return enable


def remove_graph_break(broken: Broken, text_of: TextOf) -> Fix | None:
    found = _root_call_statement(broken, text_of)
    if found is None:
        return None
    source, tree, statement = found
    call = statement.value
    if not isinstance(call, ast.Call) or not ast.unparse(call.func).endswith("graph_break") or call.args:
        return None
    edit = _remove_statement(broken.root.path, source, tree, statement)
    return Fix("Remove the explicit torch._dynamo.graph_break()", (edit,), safe=True) if edit else None


def drop_disable_decorator(broken: Broken, text_of: TextOf) -> Fix | None:
    """When the disabled callee is defined in this workspace's file, offer to compile it after all."""
    found_root = _root_source(broken, text_of)
    if found_root is None:
        return None
    source, tree, lines = found_root
    calls = _nodes_at(tree, broken.root.span, lines, ast.Call)
    if not calls or not isinstance(calls[0].func, ast.Name):
        return None
    name = calls[0].func.id
    from .discovery import definition_of  # jedi: the callee may be imported from a sibling module

    definition = definition_of(source, broken.root.path, broken.root.span.line, calls[0].func.col_offset)
    if definition is None:
        return None
    path, line = definition
    target_source = text_of(path)
    target_tree = _parse(target_source)
    if target_source is None or target_tree is None:
        return None
    target_lines = target_source.splitlines()
    for node in ast.walk(target_tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno == line:
            for decorator in node.decorator_list:
                text = ast.unparse(decorator)
                if text.endswith(("compiler.disable", "_dynamo.disable")) or text.startswith(
                    ("torch.compiler.disable(", "torch._dynamo.disable(")
                ):
                    span = node_span(decorator, target_lines)
                    if line_text(target_lines, span.line).strip() != "@" + text:
                        return None
                    edit = Edit(path, Span(span.line, 0, span.end_line + 1, 0), "")
                    return Fix(f"Remove @{text} from {name} so that Dynamo compiles it", (edit,))
    return None


def _where_rewrite(broken: Broken, text_of: TextOf) -> Fix | None:
    """``if c: x = f(x)`` → ``x = torch.where(c, f(x), x)``; ``a if c else b`` → ``torch.where(c, a, b)``."""
    found_root = _root_source(broken, text_of)
    if found_root is None:
        return None
    _, tree, lines = found_root
    name = torch_name(tree) or "torch"
    for node in ast.walk(tree):
        if isinstance(node, ast.IfExp) and node_span(node.test, lines) == broken.root.span:
            parts = ", ".join(ast.unparse(part) for part in (node.test, node.body, node.orelse))
            text = f"{name}.where({parts})"
            return Fix(
                "Rewrite the conditional expression with torch.where",
                (Edit(broken.root.path, node_span(node, lines), text),),
            )
        if isinstance(node, ast.If) and node_span(node.test, lines) == broken.root.span:
            target = _single_assignment(node.body)
            other = _single_assignment(node.orelse) if node.orelse else None
            if target is None or (node.orelse and (other is None or other[0] != target[0])):
                return None
            variable, value = target
            otherwise = other[1] if other else variable
            text = f"{variable} = {name}.where({ast.unparse(node.test)}, {value}, {otherwise})"
            span = node_span(node, lines)
            edit = Edit(
                broken.root.path,
                Span(span.line, span.column, span.end_line, len(line_text(lines, span.end_line))),
                text,
            )
            return Fix("Rewrite the branch with torch.where (both sides are computed)", (edit,))
    return None


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


def _cond_rewrite(broken: Broken, text_of: TextOf) -> Fix | None:
    """An ``if`` that only assigns becomes ``torch.cond``, one function per branch returning what it sets."""
    found_root = _root_source(broken, text_of)
    if found_root is None:
        return None
    _, tree, lines = found_root
    statement = next(
        (n for n in ast.walk(tree) if isinstance(n, ast.If) and node_span(n.test, lines) == broken.root.span),
        None,
    )
    if statement is None or (_single_assignment(statement.body) and not statement.orelse):
        return None  # torch.where says it more simply
    branches = [statement.body, statement.orelse]
    if not all(isinstance(s, ast.Assign | ast.AugAssign | ast.AnnAssign) for body in branches for s in body):
        return None
    outputs = sorted(_assigned(statement.body) | _assigned(statement.orelse))
    before = _defined_before(tree, statement)
    # A value set by one branch only must exist already, for the other branch to return it.
    both = _assigned(statement.body) & _assigned(statement.orelse)
    if not outputs or any(name not in before and name not in both for name in outputs):
        return None
    # The branches become functions: what they read and reassign is passed in, as torch.cond operands.
    operands = [name for name in outputs if name in before]
    name = torch_name(tree) or "torch"
    indent = _indent(lines, statement.lineno)
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
        (Edit(broken.root.path, end, "\n".join(text)),),
    )


def _branch_at(broken: Broken, text_of: TextOf) -> tuple[ast.Module, list[str], ast.If] | None:
    found_root = _root_source(broken, text_of)
    if found_root is None:
        return None
    _, tree, lines = found_root
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and node_span(node.test, lines) == broken.root.span:
            return tree, lines, node
    return None


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


def _return_rewrite(broken: Broken, text_of: TextOf) -> Fix | None:
    """``if c: return a`` then ``return b`` (or ``else: return b``) → ``return torch.cond(c, ...)``."""
    found = _branch_at(broken, text_of)
    if found is None:
        return None
    tree, lines, statement = found
    body = _body_of(tree, statement)
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
    operands = _loaded_before(tree, statement, values)
    if not operands:
        return None
    name = torch_name(tree) or "torch"
    indent = _indent(lines, statement.lineno)
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
        (Edit(broken.root.path, span, "\n".join(text)),),
    )


def _snippet_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("$", "\\$").replace("}", "\\}")


def _cond_skeleton(broken: Broken, text_of: TextOf) -> Fix | None:
    """Any other data-dependent ``if``: a ``torch.cond`` skeleton, the branches moved in, to complete."""
    if any(rewrite(broken, text_of) for rewrite in (_where_rewrite, _cond_rewrite, _return_rewrite)):
        return None  # a complete rewrite is on offer
    found = _branch_at(broken, text_of)
    if found is None:
        return None
    tree, lines, statement = found
    operands = ", ".join(_loaded_before(tree, statement, [*statement.body, *statement.orelse])) or "x"
    # A first guess at the outputs: what the branches set that lives on after them (not a loop variable).
    true_sets, false_sets = _assigned(statement.body), _assigned(statement.orelse)
    living = (true_sets | false_sets) & (_defined_before(tree, statement) | (true_sets & false_sets))
    outputs = ", ".join(sorted(living)) or operands
    indent = _indent(lines, statement.lineno)
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
        broken.root.path,
        Span(span.line, 0, span.end_line, len(line_text(lines, span.end_line))),
        "\n".join(text),
        snippet=True,
    )
    return Fix("Turn the branch into a torch.cond skeleton to complete (operands, outputs)", (edit,))


Maker = Callable[[Broken, TextOf], Fix | None]

CATALOGUE: dict[str, tuple[Maker, ...]] = {
    "GB0059": (remove_logging_call, register_reorderable_print),  # Failed to trace builtin operator
    "GB0296": (remove_logging_call,),  # a debugging function that can't be reordered
    "GB0291": (remove_logging_call,),  # logging.Logger method
    "GB0124": (config_flag("capture_scalar_outputs"),),  # Tensor.item()
    "GB0036": (config_flag("capture_dynamic_output_shape_ops"),),  # Dynamic shape operator
    "GB0025": (remove_graph_break,),  # torch._dynamo.graph_break()
    "GB0098": (drop_disable_decorator,),  # torch.compiler.disable'd callee
    "GB0170": (_where_rewrite, _cond_rewrite, _return_rewrite, _cond_skeleton),  # Data-dependent branching
}
# For torch without GB ids in its registry.
BY_GB_TYPE = {
    "Failed to trace builtin operator": "GB0059",
    "Unsupported Tensor.item() call with capture_scalar_outputs=False": "GB0124",
    "Dynamic shape operator": "GB0036",
    "Call to `torch._dynamo.graph_break()`": "GB0025",
    "Skip calling `torch.compiler.disable()`d function": "GB0098",
    "Data-dependent branching": "GB0170",
}


def fixes_for(broken: Broken, text_of: TextOf) -> list[Fix]:
    key = broken.gb_id or BY_GB_TYPE.get(broken.gb_type, "")
    found = [maker(broken, text_of) for maker in CATALOGUE.get(key, ())]
    return [fix for fix in found if fix is not None]


def fullgraph_fix(path: str, source: str, decorator: Span | None, call: Span | None) -> Fix | None:
    """Lock in a break-free function: with ``fullgraph=True`` any future break is an error."""
    tree = _parse(source)
    anchor = decorator or call
    if tree is None or anchor is None:
        return None
    lines = source.splitlines()
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or node_span(node, lines) != anchor:
            continue
        if isinstance(node, ast.Call):
            if any(k.arg == "fullgraph" for k in node.keywords) or not ast.unparse(node.func).endswith(
                "compile"
            ):
                return None
            closing = node_span(node, lines)
            at = Span(closing.end_line, closing.end_column - 1, closing.end_line, closing.end_column - 1)
            text = ", fullgraph=True" if node.args or node.keywords else "fullgraph=True"
        elif ast.unparse(node).endswith("compile"):  # @torch.compile, not an alias of compile(...)'s result
            end = node_span(node, lines)
            at = Span(end.end_line, end.end_column, end.end_line, end.end_column)
            text = "(fullgraph=True)"
        else:
            return None
        return Fix("Lock in one graph with fullgraph=True", (Edit(path, at, text),))
    return None


def apply(source: str, edits: list[Edit]) -> str:
    """``source`` with non-overlapping ``edits`` applied (for the CLI and the tests)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))

    def offset(line: int, column: int) -> int:
        return starts[min(line - 1, len(lines))] + column

    result = source
    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.column), reverse=True):
        start, end = (
            offset(edit.span.line, edit.span.column),
            offset(edit.span.end_line, edit.span.end_column),
        )
        result = result[:start] + edit.text + result[end:]
    return result
