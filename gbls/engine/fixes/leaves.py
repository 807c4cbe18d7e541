"""Two fixes for code whose side effect (a log line) must still run, each where the user's torch
offers it (``BreakReport.features``, found by the worker by feature detection):

- ``@leaf_function`` (``torch._dynamo.decorators.leaf_function``) on the smallest function of the
  user's around the break: one opaque call in the graph, the function run eagerly at each call, its
  result known to the compiler from a fake (``register_fake``): ``None`` for a function that returns
  nothing (a logging helper), an empty tensor like its first argument for one that returns a tensor.
- A ``logging.Logger`` method made reorderable (torch 2.14 and later read
  ``reorderable_logging_functions`` for a logger's methods): the call runs after the graph, with the
  same arguments, and the graph does not split. The logger must be a module's global, made outside
  the compiled code, and called without keywords. Before 2.14, which takes only a plain function
  there, the call becomes one of a function of the module's that calls the method, registered so.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import (
    LOGGER_METHODS,
    changed_in_place,
    enclosing_callee,
    first_line,
    indent_of,
    node_span,
    root_call_statement,
    torch_name,
)


def _returns(definition: ast.FunctionDef) -> str | None:
    """What the function returns, for its fake: "none" (nothing, everywhere), "tensor" (one value,
    everywhere), None for anything else (a tuple, or some of each)."""
    values = [node.value for node in ast.walk(definition) if isinstance(node, ast.Return)]
    if all(value is None or (isinstance(value, ast.Constant) and value.value is None) for value in values):
        return "none"
    if all(value is not None and not isinstance(value, ast.Tuple | ast.Constant) for value in values):
        return "tensor"
    return None


def leaf_function(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``@leaf_function`` on the function around the break, with its fake after it."""
    found = enclosing_callee(brk, sources)
    if "leaf_function" not in brk.features or found is None:
        return None
    location, definition, torch = found
    tree = sources.tree(location.path)
    arguments = definition.args
    if tree is None or definition not in tree.body or definition.decorator_list:
        return None  # registered once, at the module's top level
    if any(
        isinstance(n, ast.FunctionDef | ast.Lambda | ast.Yield | ast.YieldFrom)
        for n in ast.walk(definition)
        if n is not definition
    ):
        return None
    returns = _returns(definition)
    positional = [*arguments.posonlyargs, *arguments.args]
    if returns is None or arguments.vararg or arguments.kwarg or (returns == "tensor" and not positional):
        return None
    listed = ast.unparse(arguments)
    body = "return None" if returns == "none" else f"return {torch}.empty_like({positional[0].arg})"
    name = definition.name
    fake = f"\n\n@{name}.register_fake\ndef _{name}_fake({listed}):\n    {body}\n"
    end = (definition.end_lineno or definition.lineno) + 1
    lines = sources.lines(location.path)
    start = first_line(definition)
    edits = (
        Edit(
            location.path,
            Span(start, 0, start, 0),
            f"{indent_of(lines, start)}@{torch}._dynamo.decorators.leaf_function\n",
        ),
        Edit(location.path, Span(end, 0, end, 0), fake),
    )
    what = "nothing" if returns == "none" else f"an empty tensor like {positional[0].arg}"
    return Fix(
        f"Make {name} a leaf function (@leaf_function): one call in the graph, run eagerly at each call, "
        f"its fake returning {what}",
        edits,
    )


def _module_logger(
    brk: BreakReport, sources: Sources
) -> tuple[str, ast.Module, ast.Call, ast.Assign, str] | None:
    """The root cause when it is ``logger.method(...)``, a method that logs a line called without
    keywords on a logger a module's statement binds once: its file's text and tree, the call, that
    statement, and the module's name for torch."""
    found = root_call_statement(brk, sources)
    if found is None:
        return None
    source, tree, statement = found
    call = statement.value
    assert isinstance(call, ast.Call)
    method = call.func
    if not (
        isinstance(method, ast.Attribute)
        and method.attr in LOGGER_METHODS
        and isinstance(method.value, ast.Name)
        and not call.keywords
    ):
        return None
    logger = method.value.id
    made = [
        node
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == logger for t in node.targets)
    ]
    torch = torch_name(tree)
    if len(made) != 1 or torch is None:
        return None
    return source, tree, call, made[0], torch


def reorder_logger(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._dynamo.config.reorderable_logging_functions.add(logger.info)`` after the module's
    ``logger = ...``: the call runs after the graph, which does not split for it."""
    found = _module_logger(brk, sources)
    if "reorderable_logger_methods" not in brk.features or found is None:
        return None
    source, _, call, made, torch = found
    added = ast.unparse(call.func)
    if f"reorderable_logging_functions.add({added})" in source.replace(" ", ""):
        return None
    after = (made.end_lineno or made.lineno) + 1
    edit = Edit(
        brk.root.path,
        Span(after, 0, after, 0),
        f"{torch}._dynamo.config.reorderable_logging_functions.add({added})\n",
    )
    return Fix(
        f"Run {added}() after the graph (torch._dynamo.config.reorderable_logging_functions): the graph "
        "does not split, and the line is still logged",
        (edit,),
    )


def _logging_function(name: str, method: str, torch: str) -> str:
    """The module's function that logs with ``method`` (``log.info``), registered as reorderable."""
    return (
        f"\n\n@{torch}.compiler.disable\n"
        f"def {name}(*args):\n"
        f'    """`{method}` as a function of the module\'s own, which Dynamo calls after the graph\n'
        "    (reorderable_logging_functions takes no logger's method before torch 2.14); disabled, so\n"
        '    that Dynamo does not compile the logging itself there."""\n'
        "    # The line logged is its caller's: this function's and the disable wrapper's frames skipped.\n"
        f"    {method}(*args, stacklevel=3)\n"
        f"\n\n{torch}._dynamo.config.reorderable_logging_functions.add({name})\n"
    )


def reorder_logger_call(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """Before torch 2.14 a logger's method breaks whatever the config says, but a function of the
    module's in ``reorderable_logging_functions`` is called after the graph: ``log.info("done %s", y)``
    becomes ``log_info("done %s", y)``, ``log_info`` defined after ``log = ...`` to call
    ``log.info`` and registered. Dynamo logs the tensors the graph computed for the call's
    arguments, as they are when the graph ends: not where the compiled function changes one of
    them in place (``y.add_(1)``, ``y += 1``), nor for ``logger.exception``, which reads the
    exception being handled."""
    found = _module_logger(brk, sources)
    if "reorderable_logger_methods" in brk.features or found is None:
        return None
    source, tree, call, made, torch = found
    assert isinstance(call.func, ast.Attribute)
    method = ast.unparse(call.func)
    if call.func.attr == "exception" or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    line = call.lineno
    around = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.lineno < line <= (node.end_lineno or node.lineno)
    ]
    read = {node.id for argument in call.args for node in ast.walk(argument) if isinstance(node, ast.Name)}
    if not around or changed_in_place(around[-1], read):
        return None
    name = method.replace(".", "_")
    text = _logging_function(name, method, torch)
    bound = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    bound |= {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    bound |= {
        (node.asname or node.name).split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.alias)
    }
    lines = sources.lines(brk.root.path)
    rename = Edit(brk.root.path, node_span(call.func, lines), name)
    if text.strip() in source:
        edits: tuple[Edit, ...] = (rename,)  # defined and registered for another of its calls
    elif name in bound:
        return None
    else:
        after = (made.end_lineno or made.lineno) + 1
        edits = (Edit(brk.root.path, Span(after, 0, after, 0), text), rename)
    return Fix(
        f"Log with {name}(), a function of the module's that calls {method}(), registered with "
        "torch._dynamo.config.reorderable_logging_functions: Dynamo calls it after the graph, which "
        "does not split, and the line is still logged",
        edits,
    )
