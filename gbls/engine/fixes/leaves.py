"""Two fixes for code whose side effect (a log line) must still run, each where the user's torch
offers it (``BreakReport.features``, found by the worker by feature detection):

- ``@leaf_function`` (``torch._dynamo.decorators.leaf_function``) on the smallest function of the
  user's around the break: one opaque call in the graph, the function run eagerly at each call, its
  result known to the compiler from a fake (``register_fake``): ``None`` for a function that returns
  nothing (a logging helper), an empty tensor like its first argument for one that returns a tensor.
- A ``logging.Logger`` method made reorderable (torch 2.14 and later read
  ``reorderable_logging_functions`` for a logger's methods): the call runs after the graph, with the
  same arguments, and the graph does not split. The logger must be a module's global, made outside
  the compiled code, and called without keywords.
"""

from __future__ import annotations

import ast

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import LOGGER_METHODS, enclosing_callee, first_line, indent_of, root_call_statement, torch_name


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


def reorder_logger(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._dynamo.config.reorderable_logging_functions.add(logger.info)`` after the module's
    ``logger = ...``: the call runs after the graph, which does not split for it."""
    found = root_call_statement(brk, sources)
    if "reorderable_logger_methods" not in brk.features or found is None:
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
    added = f"{logger}.{method.attr}"
    if f"reorderable_logging_functions.add({added})" in source.replace(" ", ""):
        return None
    after = (made[0].end_lineno or made[0].lineno) + 1
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
