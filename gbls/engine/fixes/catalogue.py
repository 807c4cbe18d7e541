"""The fix catalogue: for a break, edits that make it go away (or turn it into the documented alternative).

Each entry is keyed by the GB id of the user's torch registry (with the gb_type as a fallback for
torch without ids) and is a small function from the break, the analysed file and the request's
sources to a ``Fix``, or to nothing when the code does not have the shape the fix is sure about.
Fixes marked ``safe`` keep what the code computes and are applied by ``gbls check --fix``.
"""

from __future__ import annotations

import ast
import logging
import re
import threading
from collections.abc import Callable

from ...worker.shared.lines import split_lines
from ...worker.shared.workspace import installed
from ..model import BreakReport
from ..ranges import Span, line_text
from ..sources import Sources, parse
from . import branches, hatches, leaves, modules, moves, sorting
from .edits import Edit, Fix, Maker
from .syntax import (
    insert_after_imports,
    node_span,
    nodes_at,
    remove_statement,
    root_call_statement,
    root_source,
)

log = logging.getLogger(__name__)
# jedi's caches are not thread-safe, and the fixes look definitions up in worker threads.
_jedi_lock = threading.Lock()

LOGGING_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "log"}


def _is_logging_call(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Name):
        return function.id == "print"
    return isinstance(function, ast.Attribute) and function.attr in LOGGING_METHODS


def remove_logging_call(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    found = root_call_statement(brk, sources)
    if found is None:
        return None
    source, tree, statement = found
    call = statement.value
    if not isinstance(call, ast.Call) or not _is_logging_call(call):
        return None
    edit = remove_statement(brk.root.path, source, tree, statement)
    if edit is None:
        return None
    return Fix(f"Remove the {ast.unparse(call.func)}() call", (edit,))


def register_reorderable_print(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """Dynamo moves registered logging calls after the graph, when their arguments are plain values."""
    found = root_call_statement(brk, sources)
    source = sources.text(here)
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
        here, source, "{torch}._dynamo.config.reorderable_logging_functions.add(print)"
    )
    if edit is None:
        return None
    return Fix(
        "Let Dynamo move print() after the graph (torch._dynamo.config.reorderable_logging_functions)",
        (edit,),
    )


def _root_call(brk: BreakReport, sources: Sources) -> ast.Call | None:
    """The call the root cause is, if the source really has one there."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    calls = nodes_at(tree, brk.root.span, lines, ast.Call)
    return calls[0] if calls else None


def enable_flag(here: str, sources: Sources, flag: str, safe: bool) -> Fix | None:
    """``torch._dynamo.config.<flag> = True`` once, after the imports of ``here``."""
    source = sources.text(here)
    if source is None or re.search(rf"_dynamo\.config\.{flag}\s*=\s*True", source):
        return None
    edit = insert_after_imports(here, source, f"{{torch}}._dynamo.config.{flag} = True")
    if edit is None:
        return None
    return Fix(f"Enable torch._dynamo.config.{flag}", (edit,), safe=safe)


def config_flag(flag: str, method: str = "") -> Maker:
    """``method``: the root cause must be a call of it (``.item()``); else any call confirms it."""

    def enable(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
        call = _root_call(brk, sources)
        if call is None or (
            method and not (isinstance(call.func, ast.Attribute) and call.func.attr == method)
        ):
            return None  # the source does not show the call the break is about
        return enable_flag(here, sources, flag, safe=True)

    return enable


def assert_in_graph(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._assert(x.sum() > 0, "...")`` reads the tensor's value in Python: ``torch._assert_async``
    checks it in the graph. It raises a RuntimeError, not an AssertionError, and on a GPU when the
    kernel runs, not at the line: unsafe."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    line = brk.root.span.line
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno <= line <= (node.end_lineno or node.lineno)):
            continue
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr == "_assert" and len(node.args) == 2:
            span = node_span(function, lines)
            edit = Edit(brk.root.path, span, f"{ast.unparse(function.value)}._assert_async")
            return Fix("Check the condition in the graph with torch._assert_async", (edit,))
    return None


def remove_graph_break(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    found = root_call_statement(brk, sources)
    if found is None:
        return None
    source, tree, statement = found
    call = statement.value
    if not isinstance(call, ast.Call) or not ast.unparse(call.func).endswith("graph_break") or call.args:
        return None
    edit = remove_statement(brk.root.path, source, tree, statement)
    return Fix("Remove the explicit torch._dynamo.graph_break()", (edit,), safe=True) if edit else None


def definition_of(source: str, path: str, line: int, byte_column: int) -> tuple[str, int] | None:
    """Where the name at ``line``/``byte_column`` is defined, when that is a workspace file, not a library."""
    text = line_text(split_lines(source), line)
    column = len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))
    import jedi  # here: a check answered from the cache never looks a definition up (0.1 s of import)

    with _jedi_lock:
        try:
            found = jedi.Script(source, path=path).goto(line, column, follow_imports=True)
        except Exception:
            log.warning("jedi failed to find the definition at %s:%s", path, line, exc_info=True)
            return None
    for definition in found:
        module = str(definition.module_path or "")
        if definition.type == "function" and module.endswith(".py") and not installed(module):
            return module, definition.line
    return None


def drop_disable_decorator(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """When the disabled callee is defined in this workspace's file, offer to compile it after all."""
    found_root = root_source(brk, sources)
    if found_root is None:
        return None
    source, tree, lines = found_root
    calls = nodes_at(tree, brk.root.span, lines, ast.Call)
    if not calls or not isinstance(calls[0].func, ast.Name):
        return None
    name = calls[0].func.id
    definition = definition_of(source, brk.root.path, brk.root.span.line, calls[0].func.col_offset)
    if definition is None:
        return None
    path, line = definition
    target_tree = sources.tree(path)
    if target_tree is None:
        return None
    target_lines = sources.lines(path)
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


CATALOGUE: dict[str, tuple[Maker, ...]] = {
    "GB0059": (  # Failed to trace builtin operator
        remove_logging_call,
        register_reorderable_print,
        hatches.print_in_graph,
        hatches.ignore_logging,
    ),
    # a debugging function that can't be reordered
    "GB0296": (remove_logging_call, hatches.print_in_graph, hatches.ignore_logging),
    "GB0291": (remove_logging_call, leaves.reorder_logger, hatches.ignore_logging),  # logging.Logger method
    "GB0124": (config_flag("capture_scalar_outputs", "item"),),  # Tensor.item()
    "GB0036": (config_flag("capture_dynamic_output_shape_ops"),),  # Dynamic shape operator
    "GB0025": (remove_graph_break,),  # torch._dynamo.graph_break()
    "GB0098": (drop_disable_decorator,),  # torch.compiler.disable'd callee
    # Data-dependent branching: a guard on a symbolic value checked with torch._check, else rewritten.
    "GB0170": (hatches.check_guard, *branches.REWRITES),
    # A call of a function Dynamo skips: a logging one (warnings.warn) can go, as a print can.
    "GB0007": (remove_logging_call,),
    "GB8977": (moves.class_to_module,),  # Invalid call to __build_class__
    "GB0033": (assert_in_graph,),  # Data dependent operator
    "GB0207": (sorting.argsort_stack,),  # sort with non-constant keys
    "GB0119": (modules.init_module,),  # Uninitialized nn.Module
}
# For torch without GB ids in its registry.
BY_GB_TYPE = {
    "Failed to trace builtin operator": "GB0059",
    "Unsupported Tensor.item() call with capture_scalar_outputs=False": "GB0124",
    "Dynamic shape operator": "GB0036",
    "Call to `torch._dynamo.graph_break()`": "GB0025",
    "Skip calling `torch.compiler.disable()`d function": "GB0098",
    "Data-dependent branching": "GB0170",
    "Attempted to call function marked as skipped": "GB0007",
    "Invalid call to __build_class__": "GB8977",
    "Data dependent operator": "GB0033",
    "sort with non-constant keys": "GB0207",
    "Uninitialized nn.Module": "GB0119",
}


def fixes_for(
    brk: BreakReport, here: str, sources: Sources, usable: Callable[[Fix], bool] = lambda fix: True
) -> list[Fix]:
    """The fixes for ``brk``, a break of the analysed file ``here``, that the source's shape allows
    (and that are ``usable``: those gbls may make)."""

    def made(makers: tuple[Maker, ...]) -> list[Fix]:
        return [
            fix for fix in (maker(brk, here, sources) for maker in makers) if fix is not None and usable(fix)
        ]

    key = brk.gb_id or BY_GB_TYPE.get(brk.gb_type, "")
    own = made(CATALOGUE.get(key, ()))
    # What takes code out of Dynamo's tracing is for breaks nothing of their own removes.
    return own + made(hatches.FALLBACKS if own else hatches.LAST_RESORTS)


def compile_option(
    path: str, source: str, decorator: Span | None, call: Span | None, name: str, value: str, overwrite: bool
) -> Edit | None:
    """Add ``name=value`` to the ``torch.compile`` decorator or call at ``decorator`` or ``call``; if the
    option is there, set it (``overwrite``) when it is another constant, or leave it."""
    tree = parse(source)
    anchor = decorator or call
    if tree is None or anchor is None:
        return None
    lines = split_lines(source)
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or node_span(node, lines) != anchor:
            continue
        if isinstance(node, ast.Call):
            if not ast.unparse(node.func).endswith("compile"):
                return None
            given = next((k.value for k in node.keywords if k.arg == name), None)
            if given is not None:
                if not overwrite or not isinstance(given, ast.Constant) or ast.unparse(given) == value:
                    return None
                return Edit(path, node_span(given, lines), value)
            closing = node_span(node, lines)
            at = Span(closing.end_line, closing.end_column - 1, closing.end_line, closing.end_column - 1)
            return Edit(path, at, f", {name}={value}" if node.args or node.keywords else f"{name}={value}")
        if ast.unparse(node).endswith("compile"):  # @torch.compile, not an alias of compile(...)'s result
            end = node_span(node, lines)
            return Edit(
                path, Span(end.end_line, end.end_column, end.end_line, end.end_column), f"({name}={value})"
            )
        return None
    return None


def fullgraph_fix(path: str, source: str, decorator: Span | None, call: Span | None) -> Fix | None:
    """Lock in a break-free function: with ``fullgraph=True`` any future break is an error."""
    edit = compile_option(path, source, decorator, call, "fullgraph", "True", overwrite=False)
    return Fix("Lock in one graph with fullgraph=True", (edit,)) if edit is not None else None
