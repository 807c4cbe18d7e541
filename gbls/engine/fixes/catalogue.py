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
from . import (
    branches,
    checks,
    contexts,
    custom_ops,
    generators,
    hatches,
    hoists,
    inplace,
    instances,
    iterables,
    leaves,
    linalg,
    modules,
    moves,
    sorting,
)
from .edits import Edit, Fix, Maker
from .syntax import (
    alone_on_its_lines,
    imports,
    insert_after_imports,
    node_span,
    nodes_at,
    remove_statement,
    root_call_statement,
    root_calls,
    root_source,
    torch_name,
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


def _shown(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 50 else text[:49] + "…"


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
    said = "warning" if ast.unparse(call.func).endswith("warn") else "output"
    return Fix(f"Remove `{_shown(call)}`, and its {said}", (edit,), changes="output")


def register_reorderable(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """Dynamo moves a call of a function registered as reorderable logging after the graph, when its
    arguments are tensors, constants or format strings (re-analysis proves they are): ``print``, and
    ``warnings.warn``, as torch's hint for it says."""
    found = root_call_statement(brk, sources)
    source = sources.text(here)
    if found is None or source is None:
        return None
    call = found[2].value
    assert isinstance(call, ast.Call)
    function = ast.unparse(call.func)
    plain = not call.keywords and not any(isinstance(argument, ast.Starred) for argument in call.args)
    if function not in ("print", "warnings.warn") or not plain:
        return None
    if function == "warnings.warn" and not imports(sources.tree(here), "warnings"):
        return None  # the name the flag's line uses must be bound in the analysed file
    if re.search(rf"reorderable_logging_functions\.add\(\s*{re.escape(function)}\s*\)", source):
        return None
    edit = insert_after_imports(
        here, source, f"{{torch}}._dynamo.config.reorderable_logging_functions.add({function})"
    )
    if edit is None:
        return None
    what = "print" if function == "print" else "warn"
    return Fix(
        f"Let Dynamo {what} after the graph: the same output "
        "(torch._dynamo.config.reorderable_logging_functions)",
        (edit,),
    )


def _root_call(brk: BreakReport, sources: Sources) -> ast.Call | None:
    """The call the root cause is, if the source really has one there."""
    found = root_calls(brk, sources)
    calls = found[2] if found is not None else []
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


def _sliced_by_value(brk: BreakReport, sources: Sources) -> bool:
    """Whether the root cause is a subscript by a value, or its slice (``x[:n]``, ``n`` a tensor): Dynamo
    reads such an index with ``.item()``."""
    found = root_source(brk, sources)
    if found is None:
        return False
    _, tree, lines = found
    if nodes_at(tree, brk.root.span, lines, ast.Slice):
        return True
    subscripts = nodes_at(tree, brk.root.span, lines, ast.Subscript)
    return bool(subscripts) and not isinstance(subscripts[0].slice, ast.Constant)


def config_flag(flag: str, method: str = "") -> Maker:
    """``method``: the root cause must be a call of it (``.item()``; for it, a subscript by a value
    read from a tensor too); else any call confirms it."""

    def enable(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
        call = _root_call(brk, sources)
        if method == "item" and call is None and _sliced_by_value(brk, sources):
            return enable_flag(here, sources, flag, safe=True)
        if call is None or (
            method and not (isinstance(call.func, ast.Attribute) and call.func.attr == method)
        ):
            return None  # the source does not show the call the break is about
        return enable_flag(here, sources, flag, safe=True)

    return enable


def assert_statement(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``assert cond, message`` → ``torch._assert(cond, message)``, as torch's hint for a data-dependent
    assertion Dynamo will not compile a partial graph for says: it raises the same AssertionError."""
    found = root_source(brk, sources)
    if found is None:
        return None
    _, tree, lines = found
    torch = torch_name(tree)
    statements = [
        node for node in ast.walk(tree) if isinstance(node, ast.Assert) and node.lineno == brk.root.span.line
    ]
    if torch is None or len(statements) != 1 or not alone_on_its_lines(statements[0], lines):
        return None
    statement = statements[0]
    message = ast.unparse(statement.msg) if statement.msg is not None else repr("assertion failed")
    text = f"{torch}._assert({ast.unparse(statement.test)}, {message})"
    return Fix(
        "Assert with torch._assert, as torch's hint says (an AssertionError where the check fails)",
        (Edit(brk.root.path, node_span(statement, lines), text),),
    )


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


def _graph_break_or(brk: BreakReport, sources: Sources) -> Fix | None:
    """``torch._dynamo.graph_break() or x`` → ``x``: the call returns None."""
    found = root_calls(brk, sources)
    if found is None:
        return None
    tree, lines, calls = found
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BoolOp)
            and isinstance(node.op, ast.Or)
            and calls
            and node.values[0] is calls[0]
        ):
            rest = node.values[1:]
            text = ast.unparse(rest[0] if len(rest) == 1 else ast.BoolOp(ast.Or(), rest))
            edit = Edit(brk.root.path, node_span(node, lines), text)
            return Fix("Remove the explicit torch._dynamo.graph_break()", (edit,), safe=True)
    return None


def remove_graph_break(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    found = root_call_statement(brk, sources)
    if found is None:
        return _graph_break_or(brk, sources)
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


def _called_definition(brk: BreakReport, sources: Sources) -> tuple[str, str, int] | None:
    """The name, file and line of the workspace function the root cause calls by its name (jedi)."""
    found_root = root_source(brk, sources)
    if found_root is None:
        return None
    source, tree, lines = found_root
    calls = nodes_at(tree, brk.root.span, lines, ast.Call)
    if not calls or not isinstance(calls[0].func, ast.Name):
        return None
    definition = definition_of(source, brk.root.path, brk.root.span.line, calls[0].func.col_offset)
    return (calls[0].func.id, *definition) if definition is not None else None


# How torch names the disabled function in the break's context: "<function Opaque.forward at 0x7f...>".
DISABLED = re.compile(r"<function ([\w.<>]+) at 0x[0-9a-fA-F]+>")


def _named_definition(brk: BreakReport, here: str, sources: Sources) -> tuple[str, str, int] | None:
    """The function the break's context names (a method called as ``self.inner(x)``), found by its
    qualified name in the root cause's file or the analysed one."""
    named = DISABLED.search(brk.cause.context)
    if named is None:
        return None
    parts = [part for part in named.group(1).split(".") if part != "<locals>"]
    for path in dict.fromkeys((brk.root.path, here)):
        tree = sources.tree(path)
        scope: list[ast.stmt] = list(tree.body) if tree is not None else []
        node: ast.stmt | None = None
        for part in parts:
            node = next(
                (
                    child
                    for child in scope
                    if isinstance(child, ast.ClassDef | ast.FunctionDef) and child.name == part
                ),
                None,
            )
            if node is None:
                break
            scope = list(node.body)
        if isinstance(node, ast.FunctionDef):
            return parts[-1], path, node.lineno
    return None


def drop_disable_decorator(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """When the disabled callee is defined in this workspace's file, offer to compile it after all."""
    found = _called_definition(brk, sources) or _named_definition(brk, here, sources)
    if found is None:
        return None
    name, path, line = found
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


ITERATORS_MADE_OUTSIDE = (iterables.listed_at_calls, iterables.listed_where_made, iterables.listed_at_module)
CATALOGUE: dict[str, tuple[Maker, ...]] = {
    "GB0059": (  # Failed to trace builtin operator
        register_reorderable,
        hatches.print_in_graph,
        hatches.ignore_logging,
        remove_logging_call,
    ),
    # a debugging function that can't be reordered
    "GB0296": (hatches.print_in_graph, hatches.ignore_logging, remove_logging_call),
    # logging.Logger method: made reorderable (2.14+), or called through a function registered so
    "GB0291": (
        leaves.reorder_logger,
        leaves.reorder_logger_call,
        hatches.ignore_logging,
        remove_logging_call,
    ),
    "GB0124": (config_flag("capture_scalar_outputs", "item"),),  # Tensor.item()
    "GB0036": (config_flag("capture_dynamic_output_shape_ops"),),  # Dynamic shape operator
    "GB0025": (remove_graph_break,),  # torch._dynamo.graph_break()
    "GB0098": (drop_disable_decorator,),  # torch.compiler.disable'd callee
    "GB0099": (drop_disable_decorator,),  # a torch.compiler.disable'd callee Dynamo would inline
    # Data-dependent branching: a guard on a symbolic value checked with torch._check, else rewritten.
    "GB0170": (hatches.check_guard, *branches.REWRITES, checks.checked_before_compiling),
    # A call of a function Dynamo skips: a logging one (warnings.warn) can be reordered, or go; a timer
    # read first or last in the body, in Python around the compiled rest; one in the compiled
    # function's own body can be made where the function is called, and passed in.
    "GB0007": (register_reorderable, remove_logging_call, checks.checked_before_compiling, hoists.passed_in),
    # Call to a time function: torch 2.15's word for a timer read, which its hint says to move out.
    "GB9193": (checks.checked_before_compiling,),
    "GB8977": (moves.class_to_module,),  # Invalid call to __build_class__
    "GB0033": (assert_in_graph,),  # Data dependent operator
    "GB0207": (sorting.argsort_stack,),  # sort with non-constant keys
    "GB0119": (modules.init_module,),  # Uninitialized nn.Module
    "GB0142": (contexts.made_where_entered,),  # Unsupported context manager
    "GB0109": (iterables.unbind_tolist,),  # Tensor.tolist() with non-integer tensor
    # missing tp_iter: an iterator passed in, made before a break, or made by the module.
    "GB0811": ITERATORS_MADE_OUTSIDE,
    # C-implemented special method without VariableTracker model: torch 2.15's word for iterating one
    "GB9493": ITERATORS_MADE_OUTSIDE,
    # Attempted to inline function marked as skipped: torch 2.15's word for entering a context
    # manager made outside (its __enter__); else a call into what Dynamo skips, made where the
    # compiled function is called.
    "GB0008": (contexts.made_where_entered, hoists.passed_in),
    # Data-dependent assertion failed (cannot compile partial graph)
    "GB0034": (assert_statement, checks.checked_before_compiling),
    # A custom op's fake raised NotImplementedError (a stub still to write): write it.
    "GB0087": (custom_ops.fake_written,),
    # Unsupported function call (delayed): an in-place view of an input.
    "GB0148": (inplace.view_out_of_place,),
    # Dynamic shape operator (no meta kernel): lstsq rewritten, or an operator of the workspace's given
    # a fake.
    "GB0037": (linalg.lstsq_by_pinv, custom_ops.fake_of_dynamic_size),
    "GB4347": (hoists.passed_in,),  # Missing tp_iternext: next() of a generator made outside
    # Attempt to trace generator: a compiled function that consumes it compiled in its place.
    "GB0003": (generators.consumed_by_a_compiled_function,),
    # Observed exception: a check that raises, run in Python before the compiled code.
    "GB0088": (checks.checked_before_compiling,),
    # Reconstruction failure: a bound method of an object the function made, returned; made once before.
    "GB0092": (instances.made_once,),
}
# For torch without GB ids in its registry.
BY_GB_TYPE = {
    "Failed to trace builtin operator": "GB0059",
    "Unsupported Tensor.item() call with capture_scalar_outputs=False": "GB0124",
    "Dynamic shape operator": "GB0036",
    "Call to `torch._dynamo.graph_break()`": "GB0025",
    "Skip calling `torch.compiler.disable()`d function": "GB0098",
    "Skip inlining `torch.compiler.disable()`d function": "GB0099",
    "Data-dependent branching": "GB0170",
    "Attempted to call function marked as skipped": "GB0007",
    "Invalid call to __build_class__": "GB8977",
    "Data dependent operator": "GB0033",
    "sort with non-constant keys": "GB0207",
    "Uninitialized nn.Module": "GB0119",
    "Unsupported context manager": "GB0142",
    "Tensor.tolist() with non-integer tensor": "GB0109",
    "missing tp_iter": "GB0811",
    "C-implemented special method without VariableTracker model": "GB9493",
    "Attempted to inline function marked as skipped": "GB0008",
    "Data-dependent assertion failed (cannot compile partial graph)": "GB0034",
    "NotImplementedError/UnsupportedFakeTensorException when running FX node": "GB0087",
    "Unsupported function call (delayed)": "GB0148",
    "Dynamic shape operator (no meta kernel)": "GB0037",
    "Missing tp_iternext": "GB4347",
    "Attempt to trace generator": "GB0003",
    "Observed exception": "GB0088",
    "Reconstruction failure": "GB0092",
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
