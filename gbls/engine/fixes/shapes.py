"""Fixes for a function that recompiles for the sizes of an input, as the user's torch offers them.

torch decides per size of each input (``shapes``): automatic dynamic shapes make a size that
changed a symbol, and a size that is 0 or 1 is specialized apart, so a batch of 1 recompiles a
function already compiled for every other batch. Declared dynamic before the first call, the size
compiles once:

- in a shapes spec of the compile call, where ``torch.compile`` takes one (``dynamic_shapes=``;
  ``shapes_spec=`` where it was first added): an unbacked size, with no 0/1 specialization;
- else marked at each call (``torch._dynamo.decorators.mark_unbacked`` where a size is 0 or 1 on
  some calls, ``torch._dynamo.mark_dynamic`` otherwise).

A size the code specializes (``range(x.shape[0])``, ``int(n)``) is left alone: declared dynamic,
torch would refuse it (an unbacked size has no value to give, a marked one fails its constraint).
"""

from __future__ import annotations

import ast

from ...worker.shared.lines import split_lines
from ..model import FunctionReport, RecompileReport
from ..ranges import Span
from ..recompiles import input_span
from ..sources import Sources
from .catalogue import compile_option
from .edits import Edit, Fix
from .syntax import alone_on_its_lines, indent_of, insert_after_imports, node_span, torch_name

SPEC_IMPORT = "from torch.fx.experimental.dynamic_spec import STATIC, ShapeVar, TensorSpec"


def _sizes(found: RecompileReport) -> tuple[list[int], int, bool] | None:
    """The dimensions of the input torch decided about, its rank, and whether one was 0 or 1 on a
    call; None where the code specializes one of them, or torch said nothing of them."""
    shapes = found.shapes
    if any(shape.reason == "code" for shape in shapes):
        return None
    dims = sorted({shape.dim for shape in shapes if shape.dim is not None})
    rank = max((shape.rank for shape in shapes), default=0)
    if not dims or rank <= max(dims):
        return None
    return dims, rank, any(shape.reason == "zero_one" for shape in shapes)


def _subject(found: RecompileReport, sources: Sources) -> str | None:
    """The parameter of the recompiled frame the failed checks are on, if it is one."""
    guard = found.guard
    source = sources.text(found.frame.path)
    if guard is None or guard.kind != "shape" or not found.direct or source is None:
        return None
    subject = guard.subject
    return subject if "." not in subject and input_span(found.frame, subject, source) else None


def _compile_keywords(source: str, function: FunctionReport) -> set[str] | None:
    """The keywords the function's ``torch.compile(...)`` is given (none for a bare ``@torch.compile``)."""
    tree = ast.parse(source)
    lines = split_lines(source)
    anchor = function.decorator or function.call
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and anchor is not None and node_span(node, lines) == anchor:
            return {k.arg for k in node.keywords if k.arg} if isinstance(node, ast.Call) else set()
    return None


def size_spec(found: RecompileReport, function: FunctionReport, here: str, sources: Sources) -> Fix | None:
    """Declare the recompiling sizes in the compile call's shapes spec."""
    option = (
        "dynamic_shapes"
        if "dynamic_shapes_argument" in found.features
        else "shapes_spec"
        if "shapes_spec_argument" in found.features
        else ""
    )
    sizes, subject, source = _sizes(found), _subject(found, sources), sources.text(here)
    if not option or sizes is None or subject is None or source is None:
        return None
    keywords = _compile_keywords(source, function)
    if keywords is None or "dynamic" in keywords:  # torch takes a spec or ``dynamic``, not both
        return None
    dims, rank, _ = sizes
    spec = ", ".join(f'ShapeVar("{subject}_{dim}")' if dim in dims else "STATIC" for dim in range(rank))
    value = f'{{"{subject}": TensorSpec([{spec}])}}'
    edit = compile_option(here, source, function.decorator, function.call, option, value, overwrite=False)
    imported = insert_after_imports(here, source, SPEC_IMPORT)
    if edit is None or imported is None or SPEC_IMPORT in source:
        return None
    which = ", ".join(f"dim {dim}" for dim in dims)
    return Fix(
        f"Declare {which} of `{subject}` dynamic in `{function.name}`'s {option} (one compilation for "
        "every size, 0 and 1 included)",
        (imported, edit),
        proof="fewer_recompiles",
    )


def mark_sizes(found: RecompileReport, function: FunctionReport, here: str, sources: Sources) -> Fix | None:
    """Mark the recompiling sizes dynamic at each call of the function in the file, where no shapes
    spec can say it: ``mark_unbacked`` where a size is 0 or 1 on some calls, else ``mark_dynamic``."""
    if "dynamic_shapes_argument" in found.features or "shapes_spec_argument" in found.features:
        return None
    sizes, subject, source = _sizes(found), _subject(found, sources), sources.text(here)
    tree = sources.tree(here)
    if sizes is None or subject is None or source is None or tree is None or function.kind != "function":
        return None
    dims, _, zero_one = sizes
    if zero_one and "mark_unbacked" not in found.features:
        return None  # a marked size of 0 or 1 is still specialized apart
    mark = "decorators.mark_unbacked" if zero_one else "mark_dynamic"  # where every torch has each
    torch = torch_name(tree)
    definition = next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function.name), None
    )
    if torch is None or definition is None or function.decorator is None:
        return None
    names = [a.arg for a in [*definition.args.posonlyargs, *definition.args.args]]
    if subject not in names:
        return None
    index = names.index(subject)
    lines = split_lines(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    edits = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function.name
        ):
            continue
        given = node.args[index] if index < len(node.args) else None
        given = given or next((k.value for k in node.keywords if k.arg == subject), None)
        statement: ast.AST = node
        while not isinstance(statement, ast.stmt) and statement in parents:
            statement = parents[statement]
        if not isinstance(given, ast.Name) or not isinstance(statement, ast.stmt):
            return None
        if not alone_on_its_lines(statement, lines) or isinstance(statement, ast.FunctionDef):
            return None
        indent = indent_of(lines, statement.lineno)
        text = "".join(f"{indent}{torch}._dynamo.{mark}({given.id}, {dim})\n" for dim in dims)
        edits.append(Edit(here, Span(statement.lineno, 0, statement.lineno, 0), text))
    if not edits:
        return None
    which = ", ".join(f"dim {dim}" for dim in dims)
    calls = f"{len(edits)} call{'s' * (len(edits) != 1)}"
    return Fix(
        f"Mark {which} of `{subject}` dynamic with torch._dynamo.{mark} before its {calls} of "
        f"`{function.name}` (one compilation for every size)",
        tuple(dict.fromkeys(edits)),
        proof="fewer_recompiles",
    )
