"""The escape hatches torch offers from a break, as fixes: each offered only on a torch that has it
(``BreakReport.features``, found in the user's torch by the worker).

- A ``print`` can become ``torch._higher_order_ops.print``, which Dynamo traces into the graph.
- A ``print`` or ``logging.Logger`` call can be left out of compiled code altogether with
  ``torch._dynamo.config.ignore_logging_functions`` (it does not run there).
- A call into code Dynamo cannot trace can be traced non-strictly (``nonstrict_trace`` on the
  smallest function of the user's that holds it): its tensor operations stay in the graph. Where
  that does not hold, the function can be a custom op, one opaque call in the graph
  (``custom_ops.py``).
- A guard on a value read from a tensor (``if n > x.shape[0]: raise ...``, ``n`` from ``.item()`` or a
  data-dependent size) can be told to the compiler with ``torch._check``, as torch's hint says.
- A break not worth removing can cost less: with nested graph breaks on, the graph splits in the
  callee and the callers' code stays in the graphs; or the expression that breaks, or the smallest
  function of the user's that holds it, runs eagerly (``torch.compiler.disable``), and Dynamo
  splits once, at its call.
"""

from __future__ import annotations

import ast
import re

from ...worker.shared.protocol import SPLIT
from ..model import BreakReport, Location
from ..ranges import Span, line_text
from ..sources import Sources
from . import custom_ops, leaves, moves
from .edits import Edit, Fix
from .syntax import (
    LOGGER_METHODS,
    after_imports,
    branch_at,
    enclosing_callee,
    first_line,
    imports,
    indent_of,
    insert_after_imports,
    node_span,
    root_call_statement,
    torch_name,
)

# A break raised while Dynamo traces a higher-order operator's body (a checkpointed region's side
# effect, GB0067): the whole operator falls back, in the callee or not, so nesting changes nothing.
HIGHER_ORDER = re.compile(r"\bHOP\b|higher.?order|invoke_subgraph", re.IGNORECASE)


def _shape_of(argument: ast.expr) -> ast.expr | None:
    """The tensor ``argument`` is the shape of (``x.shape``, ``x.size()``), if it is one."""
    if isinstance(argument, ast.Attribute) and argument.attr == "shape":
        return argument.value
    if isinstance(argument, ast.Call) and not argument.args and not argument.keywords:
        function = argument.func
        if isinstance(function, ast.Attribute) and function.attr == "size":
            return function.value
    return None


def print_in_graph(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``print("scaled", y)`` → ``torch._higher_order_ops.print("scaled {y!s}", y=y)``: printed from the
    graph, as print prints (``str`` of each argument: a 0-d tensor's own format would be its number),
    its arguments by keyword (torch 2.10 takes no positional ones). A shape reaches the operator as
    its ``str``, a constant where the sizes are (inductor takes no list of sizes: "not a leaf node";
    where they are dynamic, Dynamo breaks on it and the proof refuses the fix); a file that does not
    import torch does."""
    found = root_call_statement(brk, sources)
    if "print_hop" not in brk.features or found is None:
        return None
    _, tree, statement = found
    call = statement.value
    assert isinstance(call, ast.Call)
    plain = not call.keywords and not any(isinstance(argument, ast.Starred) for argument in call.args)
    if not (isinstance(call.func, ast.Name) and call.func.id == "print" and plain):
        return None
    parts: list[str] = []
    named: dict[str, str] = {}
    for index, argument in enumerate(call.args):
        if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
            parts.append(argument.value.replace("{", "{{").replace("}", "}}"))
            continue
        name = argument.id if isinstance(argument, ast.Name) else f"arg{index}"
        name = name if name not in named and name != "format_str" else f"arg{index}"
        shaped = _shape_of(argument)
        named[name] = f"str({ast.unparse(argument)})" if shaped is not None else ast.unparse(argument)
        parts.append(f"{{{name}!s}}")
    keywords = "".join(f", {name}={value}" for name, value in named.items())
    torch = torch_name(tree)
    text = f"{torch or 'torch'}._higher_order_ops.print({' '.join(parts)!r}{keywords})"
    edits = [Edit(brk.root.path, node_span(call, sources.lines(brk.root.path)), text)]
    if torch is None:
        line = after_imports(tree)
        edits.append(Edit(brk.root.path, Span(line, 0, line, 0), "import torch\n"))
    return Fix("Print from the graph: torch._higher_order_ops.print", tuple(edits))


def ignore_logging(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._dynamo.config.ignore_logging_functions.add(print)`` (or ``logging.Logger.info``) once,
    after the imports of ``here``: the call no longer runs in compiled code."""
    found = root_call_statement(brk, sources)
    source, tree = sources.text(here), sources.tree(here)
    if "ignore_logging_functions" not in brk.features or found is None or source is None or tree is None:
        return None
    function = found[2].value.func if isinstance(found[2].value, ast.Call) else None
    if isinstance(function, ast.Name) and function.id == "print":
        ignored = "print"
    elif isinstance(function, ast.Attribute) and function.attr in LOGGER_METHODS and imports(tree, "logging"):
        ignored = f"logging.Logger.{function.attr}"
    else:
        return None
    if re.search(rf"ignore_logging_functions\.add\(\s*{re.escape(ignored)}\s*\)", source):
        return None
    statement = f"{{torch}}._dynamo.config.ignore_logging_functions.add({ignored})"
    edit = insert_after_imports(here, source, statement)
    if edit is None:
        return None
    name = ignored.rsplit(".", 1)[-1]
    return Fix(
        f"Leave {name}() out of compiled code (torch._dynamo.config.ignore_logging_functions): where the "
        f"code is compiled, the program no longer prints or logs `{ast.unparse(found[2].value)}`",
        (edit,),
        changes="output",
    )


# The comparison that holds where ``if a OP b: raise`` does not raise.
NEGATED: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Gt: ast.LtE,
    ast.GtE: ast.Lt,
    ast.Lt: ast.GtE,
    ast.LtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
}


def check_guard(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._check(n <= x.shape[0])`` before ``if n > x.shape[0]: raise ...``, where ``n`` is a
    symbolic value read from a tensor (``.item()``, a data-dependent size): Dynamo cannot decide the
    branch, and torch's own message for it is "Consider annotating your code using torch._check*()".
    Told what holds (and checking it when the code runs), the compiler decides the branch; the
    ``if`` stays, for eager code. Where the condition fails, torch raises a RuntimeError before the
    ``if`` raises its own exception: unsafe."""
    # A tensor condition is "TensorVariable()": torch._check takes a Python or symbolic bool only.
    if "check" not in brk.features or "SymNodeVariable" not in brk.cause.context:
        return None
    found = branch_at(brk, sources)
    if found is None:
        return None
    tree, lines, statement = found
    torch = torch_name(tree)
    if torch is None or not isinstance(statement.body[-1], ast.Raise):
        return None  # only a guard keeps its meaning: a branch that goes on would lose its other side
    if not line_text(lines, statement.lineno).lstrip().startswith("if"):
        return None  # an ``elif``: no line of its own before it to hold the check
    test = statement.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in NEGATED):
        return None
    holds = ast.unparse(ast.Compare(test.left, [NEGATED[type(test.ops[0])]()], test.comparators))
    text = f"{indent_of(lines, statement.lineno)}{torch}._check({holds})\n"
    return Fix(
        f"Check {holds} with torch._check before the branch, so that the compiler decides it (where it "
        "fails: a RuntimeError, not the branch's own exception)",
        (Edit(brk.root.path, Span(statement.lineno, 0, statement.lineno, 0), text),),
    )


def nested_graph_breaks(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``torch._dynamo.config.nested_graph_breaks = True``, for a break in a callee that splits the
    compiled function's graph: Dynamo can split in the callee instead, keeping the callers' code."""
    source = sources.text(here)
    if "nested_graph_breaks" not in brk.features or source is None or len(brk.chain) < 2:
        return None
    if brk.nested or brk.effect != SPLIT or HIGHER_ORDER.search(brk.gb_type):
        return None
    if re.search(r"_dynamo\.config\.nested_graph_breaks\s*=", source):
        return None  # set already, to either value: the user decided
    edit = insert_after_imports(here, source, "{torch}._dynamo.config.nested_graph_breaks = True")
    if edit is None:
        return None
    return Fix(
        f"Turn on nested graph breaks: split in {brk.root.function}, keeping the code around the call "
        "in the graphs (torch._dynamo.config.nested_graph_breaks; a workaround: the graph still splits)",
        (edit,),
        proof="fewer",
    )


def _decorate(location: Location, definition: ast.FunctionDef, decorator: str, sources: Sources) -> Edit:
    first = first_line(definition)
    indent = indent_of(sources.lines(location.path), definition.lineno)
    return Edit(location.path, Span(first, 0, first, 0), f"{indent}@{decorator}\n")


def _hatched(definition: ast.FunctionDef) -> bool:
    """Whether ``definition`` has a decorator that already takes it out of Dynamo's tracing."""
    return any(ast.unparse(d).endswith(("disable", "nonstrict_trace")) for d in definition.decorator_list)


def trace_nonstrictly(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``@torch._dynamo.nonstrict_trace`` (``torch.compiler.nonstrict_trace`` where torch has it) on
    the smallest function of the user's around the root cause: Dynamo does not trace its Python, and
    puts the tensor operations it does into the graph. Its inputs and outputs must be tensors or
    plain values (re-analysis proves it). Its Python runs at each call, and once more while Dynamo
    traces it: where that shows (a print, a random draw), re-analysis sees the program change, and
    refuses it."""
    found = enclosing_callee(brk, sources)
    if found is None:
        return None
    location, definition, torch = found
    if "compiler_nonstrict_trace" in brk.features:
        decorator = f"{torch}.compiler.nonstrict_trace"
    elif "dynamo_nonstrict_trace" in brk.features:
        decorator = f"{torch}._dynamo.nonstrict_trace"
    else:
        return None
    if _hatched(definition):
        return None
    return Fix(
        f"Trace {definition.name} non-strictly with @{decorator.removeprefix(torch + '.')} (its tensor "
        "operations join the graph; its Python runs at each call, and once more while Dynamo traces it)",
        (_decorate(location, definition, decorator, sources),),
    )


def run_eagerly(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """``@torch.compiler.disable`` on the smallest function of the user's around the root cause (not the
    compiled function itself): it runs eagerly, and Dynamo splits once, where it is called."""
    found = enclosing_callee(brk, sources)
    if found is None:
        return None
    location, definition, torch = found
    if _hatched(definition):
        return None
    return Fix(
        f"Stop compiling {definition.name}: @torch.compiler.disable runs it eagerly (a workaround: the "
        "graph still splits, at its call)",
        (_decorate(location, definition, f"{torch}.compiler.disable", sources),),
        proof="skip",
    )


# Offered for every break, after its own fixes: they accept the break and make it cost less.
FALLBACKS = (nested_graph_breaks, leaves.leaf_function, run_eagerly)
# For a break that has no fix of its own: its code taken out of Dynamo's tracing, the least first.
# Nonstrict tracing before a custom op: where it holds, the function's tensor operations stay in the
# graph; a custom op is one opaque call, for the functions nonstrict tracing cannot take.
LAST_RESORTS = (
    nested_graph_breaks,
    trace_nonstrictly,
    leaves.leaf_function,
    custom_ops.custom_op,
    custom_ops.custom_op_stub,
    moves.expression_eagerly,
    run_eagerly,
)
