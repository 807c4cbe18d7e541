"""Fixes for a function that recompiles, the most specific first, raising the limit last.

Each maker takes the recompilation report, the compiled function's report, the analysed file and
the request's sources, and gives a ``Fix`` only where the code has the shape the fix is sure
about. None is ``safe``: each changes what gets compiled, so ``gbls check --fix`` leaves them to
the user.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from ..model import FileReport, FunctionReport, RecompileReport
from ..ranges import Span
from ..recompiles import literal
from ..sources import Sources
from .catalogue import compile_option, enable_flag
from .edits import Edit, Fix
from .shapes import mark_sizes, size_spec
from .syntax import insert_after_imports, node_span, torch_name

RecompileMaker = Callable[[RecompileReport, FunctionReport, str, Sources], Fix | None]


def dynamic_shapes(
    found: RecompileReport, function: FunctionReport, here: str, sources: Sources
) -> Fix | None:
    """``dynamic=False`` compiles every new size again: ``dynamic=True`` compiles one graph for all."""
    source = sources.text(here)
    if found.guard is None or found.guard.kind != "shape" or source is None:
        return None
    edit = compile_option(here, source, function.decorator, function.call, "dynamic", "True", overwrite=True)
    if edit is None or edit.text != "True":  # only where dynamic=False asks for a compilation per size
        return None
    return Fix(f"Compile `{function.name}` with dynamic=True (one graph for every size)", (edit,))


def _own_definition(
    found: RecompileReport, function: FunctionReport, here: str, sources: Sources
) -> ast.FunctionDef | None:
    """The module-level def of a plain compiled function whose own frame recompiled, in ``here``."""
    tree = sources.tree(here)
    if tree is None or not found.direct or function.kind != "function" or found.frame.path != here:
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == found.frame.name:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first == found.frame.line:
                return node
    return None


def _uses(definition: ast.FunctionDef, name: str) -> list[tuple[ast.Name, ast.AST]]:
    """Each read of ``name`` in the body, with the node it sits in; none at all if it is ever written."""
    parents = {child: node for node in ast.walk(definition) for child in ast.iter_child_nodes(node)}
    found = []
    for statement in definition.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name:
                if not isinstance(node.ctx, ast.Load):
                    return []
                found.append((node, parents[node]))
    return found


def _parameter_index(definition: ast.FunctionDef, name: str) -> int | None:
    names = [argument.arg for argument in [*definition.args.posonlyargs, *definition.args.args]]
    return names.index(name) if name in names else None


def scalar_as_tensor(
    found: RecompileReport, function: FunctionReport, here: str, sources: Sources
) -> Fix | None:
    """A number used only in arithmetic recompiles per value; as a tensor it is an input like any other."""
    guard = found.guard
    source, tree = sources.text(here), sources.tree(here)
    definition = _own_definition(found, function, here, sources)
    if guard is None or literal(guard) != "number" or guard.is_global or definition is None:
        return None
    if source is None or tree is None or function.decorator is None:
        return None
    name, index = guard.subject, _parameter_index(definition, guard.subject)
    uses = _uses(definition, name)
    if (
        index is None
        or not uses
        or not all(isinstance(parent, ast.BinOp | ast.UnaryOp) for _, parent in uses)
    ):
        return None
    lines = source.splitlines()
    torch = torch_name(tree)
    if torch is None:
        return None
    edits = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == definition.name
        ):
            continue
        if any(isinstance(argument, ast.Starred) for argument in node.args) or any(
            keyword.arg is None for keyword in node.keywords
        ):
            return None
        given = node.args[index] if index < len(node.args) else None
        given = given or next((k.value for k in node.keywords if k.arg == name), None)
        if given is not None:
            span = node_span(given, lines)
            edits.append(Edit(here, span, f"{torch}.tensor({ast.get_source_segment(source, given)})"))
    if not edits:
        return None
    calls = f"{len(edits)} call{'s' * (len(edits) != 1)}"
    return Fix(f"Pass `{name}` as a tensor at its {calls} (its value is then not a guard)", tuple(edits))


def _switches(
    definition: ast.FunctionDef, name: str, source: str
) -> list[tuple[ast.Compare, str, bool]] | None:
    """Every use of ``name`` as ``name == C`` / ``!=`` / ``is`` / ``is not``: (node, test, negated); None
    if it is used any other way."""
    uses = _uses(definition, name)
    found = []
    for node, parent in uses:
        if not isinstance(parent, ast.Compare) or parent.left is not node:
            return None
        if len(parent.ops) != 1 or not isinstance(parent.ops[0], ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
            return None
        other = parent.comparators[0]
        if not isinstance(other, ast.Constant | ast.Attribute | ast.Name) or any(
            isinstance(n, ast.Name) and n.id == name for n in ast.walk(other)
        ):
            return None
        operator = "is" if isinstance(parent.ops[0], ast.Is | ast.IsNot) else "=="
        test = f"{name} {operator} {ast.get_source_segment(source, other)}"
        found.append((parent, test, isinstance(parent.ops[0], ast.NotEq | ast.IsNot)))
    return found or None


def _flag_name(name: str, test: str, number: int, taken: set[str]) -> str:
    """``mode == "a"`` → ``mode_is_a`` (else ``mode_1``): a parameter name for the outcome of a test."""
    value = re.sub(r"\W+", "_", test.split(" ", 2)[-1].split(".")[-1]).strip("_")
    candidate = f"{name}_is_{value}" if value and not value[0].isdigit() else f"{name}_{number}"
    while candidate in taken:
        candidate += "_"
    taken.add(candidate)
    return candidate


def switch_out(found: RecompileReport, function: FunctionReport, here: str, sources: Sources) -> Fix | None:
    """A string, flag or enum compared in the body: compare it in Python, compile on the outcome.

    ``pick(x, mode)`` becomes a plain function that calls a compiled ``_pick(x, mode_is_a)`` with
    ``mode == "a"``: a bool has two values, so the compiled function compiles at most twice.
    """
    guard = found.guard
    source, tree = sources.text(here), sources.tree(here)
    definition = _own_definition(found, function, here, sources)
    if guard is None or guard.is_global or source is None or tree is None or definition is None:
        return None
    if function.decorator is None or (literal(guard) not in ("string", "bool") and guard.kind != "identity"):
        return None
    name = guard.subject
    parameters = definition.args
    switches = _switches(definition, name, source)
    if (
        not switches
        or parameters.vararg
        or parameters.kwarg
        or len(definition.decorator_list) != 1
        or _parameter_index(definition, name) is None
        or definition.body[0].lineno == definition.lineno
    ):
        return None
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    inner = f"_{definition.name}"
    while inner in taken:
        inner = "_" + inner
    flags: dict[str, str] = {}
    for _, test, _ in switches:
        if test not in flags:
            flags[test] = _flag_name(name, test, len(flags) + 1, taken)
    lines = source.splitlines(keepends=True)
    start = definition.decorator_list[0].lineno
    body_start = definition.body[0].lineno
    end = definition.end_lineno or definition.lineno
    # The body, each test replaced by its flag; edits from the last, so that columns stay right.
    body = lines[body_start - 1 : end]
    for compare, test, negated in sorted(
        switches, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True
    ):
        row = compare.lineno - body_start
        if compare.end_lineno != compare.lineno:
            return None
        row_bytes = body[row].encode("utf-8")
        flag = ("not " if negated else "") + flags[test]
        before, after = row_bytes[: compare.col_offset], row_bytes[compare.end_col_offset or 0 :]
        body[row] = (before + flag.encode() + after).decode()
    signature = "".join(lines[definition.lineno - 1 : body_start - 1]).rstrip()
    if not signature.endswith(":"):
        return None
    arguments = []
    for argument in [*parameters.posonlyargs, *parameters.args]:
        arguments += list(flags) if argument.arg == name else [argument.arg]
    arguments += [f"{a.arg}={a.arg}" for a in parameters.kwonlyargs]
    decorator = "".join(lines[start - 1 : definition.lineno - 1])
    inner_parameters = []
    for argument in [*parameters.posonlyargs, *parameters.args, *parameters.kwonlyargs]:
        inner_parameters += list(flags.values()) if argument.arg == name else [argument.arg]
    text = (
        f"{decorator}def {inner}({', '.join(inner_parameters)}):\n"
        + "".join(body).rstrip("\n")
        + f"\n\n\n{signature}\n    return {inner}({', '.join(arguments)})\n"
    )
    try:
        ast.parse(text)
    except SyntaxError:
        return None
    span = Span(start, 0, end + 1, 0)
    tests = ", ".join(f"`{test}`" for test in flags)
    return Fix(
        f"Move the switch on `{name}` out of the compiled function: `{definition.name}` tests {tests} "
        f"in Python and calls a compiled `{inner}` with the outcome",
        (Edit(here, span, text),),
    )


def unspecialized_module_ints(
    found: RecompileReport, function: FunctionReport, here: str, sources: Sources
) -> Fix | None:
    """Integer attributes of an ``nn.Module`` are constants to Dynamo unless this flag says otherwise."""
    guard = found.guard
    if guard is None or "allow_unspec_int_on_nn_module" not in guard.hint:
        return None
    return enable_flag(here, sources, "allow_unspec_int_on_nn_module", safe=False)


def raise_limit(found: RecompileReport, function: FunctionReport, here: str, sources: Sources) -> Fix | None:
    """The last resort: more compilations before Dynamo gives up on the function; for this compile
    call alone where ``torch.compile`` takes a ``recompile_limit`` (the accumulated limit, of every
    function together, is the config's)."""
    limit, source = found.limit, sources.text(here)
    if limit is None or source is None or not limit.limit.isidentifier():
        return None
    value = 2 * limit.limit_value
    if limit.limit == "recompile_limit" and "recompile_limit_argument" in found.features:
        own = compile_option(
            here, source, function.decorator, function.call, "recompile_limit", str(value), overwrite=True
        )
        if own is not None:
            return Fix(
                f"Raise `{function.name}`'s recompile_limit to {value} in its torch.compile call (a last "
                "resort: each recompilation is still a whole compilation)",
                (own,),
                proof="under_limit",
            )
    lines = source.splitlines()
    setting = re.compile(rf"_dynamo\.config\.{limit.limit}\s*=\s*(\d+)\s*(#.*)?$")
    edit = insert_after_imports(here, source, f"{{torch}}._dynamo.config.{limit.limit} = {value}")
    for number, text in enumerate(lines, start=1):
        found_setting = setting.search(text)
        if found_setting:  # the module sets it already: change its value there
            start, stop = found_setting.span(1)
            edit = Edit(here, Span(number, start, number, stop), str(value))
    if edit is None:
        return None
    return Fix(
        f"Raise torch._dynamo.config.{limit.limit} to {value} (a last resort: each recompilation is "
        "still a whole compilation)",
        (edit,),
        proof="under_limit",
    )


MAKERS: tuple[RecompileMaker, ...] = (
    dynamic_shapes,
    size_spec,
    mark_sizes,
    scalar_as_tensor,
    switch_out,
    unspecialized_module_ints,
    raise_limit,
)


def recompile_fixes(found: RecompileReport, report: FileReport, sources: Sources) -> list[Fix]:
    """The fixes for ``found``, a recompilation report of ``report``, that the source's shape allows."""
    function = next((f for f in report.functions if f.qualname == found.function), None)
    if function is None:
        return []
    fixes = [maker(found, function, report.path, sources) for maker in MAKERS]
    return [fix for fix in fixes if fix is not None]
