"""The custom-op escape hatch: the smallest function of the user's around a call Dynamo cannot trace
(a NumPy routine on a tensor's data, a C extension, a function Dynamo skips), made an operator of
its own with ``torch.library.custom_op``, and its fake implementation (``register_fake``).

Dynamo puts one call of the op in the graph and never looks inside: the function runs as written,
eagerly, at each call, and the compiler knows its result only from the fake, which makes an empty
result of the real one's shape and dtype from the arguments. Where that is a tensor argument's,
the fake is ``torch.empty_like`` of it, and re-analysis proves it (the worker holds each call of a
workspace op to its fake, as inductor's code does). Elsewhere the fake is a marked stub to write;
until then Dynamo breaks at the op's call, and the fix says so. A stub left so (or any fake that
raises ``NotImplementedError``) is written as ``torch.empty_like`` of the op's tensor argument where
the op returns one tensor: proven as the op's fake is, on each call.

``nonstrict_trace`` is offered before it: where it holds, the function's tensor operations stay in
the graph. This is for where it does not: a function whose Python leaves torch's tensors (NumPy on
their data), which nonstrict tracing runs on fake tensors, or whose result it cannot take.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

from ..model import BreakReport
from ..ranges import Span
from ..sources import Sources
from .edits import Edit, Fix
from .syntax import (
    changed_in_place,
    enclosing_callee,
    node_span,
    nodes_at,
    own_nodes,
    root_source,
    torch_name,
)

# An unannotated parameter with a default takes the default's type in the op's schema.
DEFAULT_TYPES = {bool: "bool", int: "int", float: "float", str: "str"}


def _mutates(definition: ast.FunctionDef) -> bool:
    """Whether the function visibly changes an argument in place (``x[0] = v``, ``x.add_(1)``): an op
    made with ``mutates_args=()`` promises that it does not, and the compiler relies on it."""
    arguments = definition.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    return changed_in_place(definition, names)


def _written(source: str, node: ast.expr) -> str:
    """``node`` as the source writes it (its quotes, its spacing)."""
    return ast.get_source_segment(source, node) or ast.unparse(node)


def _literal(node: ast.expr) -> object:
    """The value of a literal (``2``, ``-1.0``), or None."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError):
        return None


def _parameters(source: str, definition: ast.FunctionDef, tensor: str) -> tuple[str, str | None] | None:
    """The parameter list with each parameter annotated, as the op's schema needs (as written, else
    its default's type, else ``tensor``), and the first tensor parameter's name; None where the op
    cannot take them (``*args``, a positional-only one, a default of another type)."""
    arguments = definition.args
    if arguments.vararg or arguments.kwarg or arguments.posonlyargs:
        return None  # torch's schema inference refuses each of them
    positional = arguments.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults += arguments.defaults
    parts: list[str] = []
    first_tensor = None
    pairs = [
        *zip(positional, defaults, strict=True),
        *zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True),
    ]
    for arg, default in pairs:
        if arg.annotation is not None:
            annotation = _written(source, arg.annotation)
        elif default is None:
            annotation = tensor
        elif type(_literal(default)) in DEFAULT_TYPES:
            annotation = DEFAULT_TYPES[type(_literal(default))]
        else:
            return None
        if annotation in (tensor, "torch.Tensor", "Tensor") and first_tensor is None:
            first_tensor = arg.arg
        if arguments.kwonlyargs[:1] == [arg]:
            parts.append("*")
        given = f" = {_written(source, default)}" if default is not None else ""
        parts.append(f"{arg.arg}: {annotation}{given}")
    return ", ".join(parts), first_tensor


def _result(source: str, definition: ast.FunctionDef, tensor: str) -> str | None:
    """The result's annotation: as written; else a tensor, or a tuple of them where every ``return``
    gives a tuple of that many (a function that returns nothing is no op's)."""
    if definition.returns is not None:
        return _written(source, definition.returns)
    values = [node.value for node in own_nodes(definition) if isinstance(node, ast.Return)]
    if not values or any(value is None for value in values):
        return None
    sizes = {len(value.elts) if isinstance(value, ast.Tuple) else 0 for value in values if value is not None}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    return tensor if not size else f"tuple[{', '.join([tensor] * size)}]"


def _header_colon(lines: list[str], definition: ast.FunctionDef) -> tuple[int, int] | None:
    """Where the colon that ends ``definition``'s header is (its line, its character column)."""
    text = "".join(line + "\n" for line in lines[definition.lineno - 1 : definition.end_lineno])
    depth = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type != tokenize.OP:
                continue
            if token.string in ("(", "[", "{"):
                depth += 1
            elif token.string in (")", "]", "}"):
                depth -= 1
            elif token.string == ":" and depth == 0:
                return definition.lineno + token.start[0] - 1, token.start[1]
    except (tokenize.TokenError, SyntaxError):
        return None
    return None


def _wrap(brk: BreakReport, sources: Sources, filled: bool) -> Fix | None:
    if "custom_op" not in brk.features:
        return None
    found_root = root_source(brk, sources)
    if found_root is None or not nodes_at(found_root[1], brk.root.span, found_root[2], ast.Call):
        return None  # an op is for a call Dynamo cannot trace, not for a branch or a statement
    found = enclosing_callee(brk, sources)
    if found is None:
        return None
    location, definition, torch = found
    tree = sources.tree(location.path)
    # At the module's top level and undecorated: the op is registered once, by the function's name.
    if tree is None or definition not in tree.body or definition.decorator_list or _mutates(definition):
        return None
    tensor = f"{torch}.Tensor"
    source, lines = sources.text(location.path) or "", sources.lines(location.path)
    parameters, result = _parameters(source, definition, tensor), _result(source, definition, tensor)
    colon = _header_colon(lines, definition)
    if parameters is None or result is None or colon is None:
        return None
    listed, like = parameters
    name = definition.name
    if filled and (like is None or result != tensor):
        return None  # no tensor argument whose shape the one result could be
    namespace = re.sub(r"\W", "_", Path(location.path).stem, flags=re.ASCII)
    op = f"{'_' if namespace[:1].isdigit() else ''}{namespace}::{name}"
    header = f'@{torch}.library.custom_op("{op}", mutates_args=())\ndef {name}({listed}) -> {result}:'
    if filled:
        body = f"    return {torch}.empty_like({like})\n"
    else:
        body = (
            f"    # gbls: to write: an empty result of the shape and dtype {name} returns, made from the\n"
            "    # arguments' sizes alone (torch.empty, torch.empty_like): the compiler sees only this.\n"
            f'    raise NotImplementedError("the fake implementation of {op} is to be written")\n'
        )
    fake = f"\n\n@{name}.register_fake\ndef _{name}_fake({listed}):\n{body}"
    end = (definition.end_lineno or definition.lineno) + 1
    edits = (
        Edit(location.path, Span(definition.lineno, 0, colon[0], colon[1] + 1), header),
        Edit(location.path, Span(end, 0, end, 0), fake),
    )
    costs = (
        "its Python runs at each call, and a backward through it raises until register_autograd gives it one"
    )
    if filled:
        title = (
            f"Make {name} the custom op {op} (torch.library.custom_op), its fake a result shaped like "
            f"{like}: one op in the graph ({costs})"
        )
        return Fix(title, edits)
    title = (
        f"Make {name} the custom op {op} (torch.library.custom_op) with a stub of its fake to write: "
        f"until it is written Dynamo still breaks at its call ({costs})"
    )
    return Fix(title, edits, proof="stub")


def custom_op(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """The function around the break made a custom op, its fake an empty tensor like an argument."""
    return _wrap(brk, sources, filled=True)


def custom_op_stub(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """The function around the break made a custom op, its fake a stub for the user to write."""
    return _wrap(brk, sources, filled=False)


# The custom op Dynamo ran the fake of, as its explanation names it: "call_function ns.name(*(...".
FAKE_CALL = re.compile(r"call_function (\w+)\.(\w+)(?:\.\w+)?\(")


def _raises_not_implemented(definition: ast.FunctionDef) -> ast.Raise | None:
    """The one statement of ``definition``'s body (after a docstring), when it raises
    ``NotImplementedError``: a fake left to write."""
    body = definition.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return None
    raised = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
    return body[0] if isinstance(raised, ast.Name) and raised.id == "NotImplementedError" else None


def _op_name(decorator: ast.expr, call: str) -> str | None:
    """The op ``decorator`` names when it is a call of ``...library.<call>("ns::name", ...)``."""
    if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith(f"library.{call}")):
        return None
    named = decorator.args[0] if decorator.args else None
    return named.value if isinstance(named, ast.Constant) and isinstance(named.value, str) else None


def fake_written(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """A custom op whose fake raises ``NotImplementedError`` (written with a stub, as the custom-op fix
    leaves it): where the op returns one tensor and takes one, its fake becomes ``torch.empty_like``
    of that argument, as torch's hint asks ("did you implement a fake tensor implementation?"). The
    worker holds each call of the op to its fake, so the proof refuses it where the real result is
    shaped otherwise."""
    named = FAKE_CALL.search(brk.cause.explanation)
    if named is None:
        return None
    op = f"{named.group(1)}::{named.group(2)}"
    for path in dict.fromkeys((brk.root.path, here)):
        tree, source = sources.tree(path), sources.text(path) or ""
        torch = torch_name(tree) if tree is not None else None
        if tree is None or torch is None:
            continue
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
        defined = next(
            (f for f in functions if any(_op_name(d, "custom_op") == op for d in f.decorator_list)), None
        )
        if defined is None:
            continue
        tensor = f"{torch}.Tensor"
        parameters = _parameters(source, defined, tensor)
        if parameters is None or parameters[1] is None or _result(source, defined, tensor) != tensor:
            return None  # no tensor argument whose shape the one result could be
        for fake in functions:
            registers = any(
                ast.unparse(d) == f"{defined.name}.register_fake" or _op_name(d, "register_fake") == op
                for d in fake.decorator_list
            )
            raised = _raises_not_implemented(fake) if registers else None
            if raised is None:
                continue
            # The fake takes the op's arguments: the op's first tensor parameter is the fake's at its place.
            place = [a.arg for a in defined.args.args].index(parameters[1])
            if place >= len(fake.args.args) or fake.args.vararg is not None:
                return None
            like = fake.args.args[place].arg
            lines = sources.lines(path)
            edit = Edit(path, node_span(raised, lines), f"return {torch}.empty_like({like})")
            title = (
                f"Write the fake of the custom op {op}: a result shaped like {like} "
                f"({torch}.empty_like({like})), one op in the graph"
            )
            return Fix(title, (edit,))
    return None


# An operator whose output's size depends on its input's values, with no fake (GB0037), as Dynamo's
# explanation names it: "Operator `ns.name.overload` does not have a meta kernel ...".
NO_META = re.compile(r"Operator `(\w+)\.(\w+)\.\w+` does not have a meta kernel")
# A schema's argument as the fake takes it: "Tensor x", "int n" (no default, not keyword-only).
SCHEMA_ARGUMENT = re.compile(r"([\w?\[\]]+) (\w+)")


def _schema_of(tree: ast.Module, namespace: str, name: str) -> tuple[str, ast.stmt] | None:
    """The schema of the operator ``namespace::name`` and the module's statement that defines it:
    ``lib.define("name(Tensor x) -> Tensor", ...)`` on a ``torch.library.Library("namespace", ...)``
    of the module's, or ``torch.library.define("namespace::name", "(Tensor x) -> Tensor", ...)``."""
    libraries = {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Call)
        and ast.unparse(node.value.func).endswith("library.Library")
        and node.value.args
        and isinstance(node.value.args[0], ast.Constant)
        and node.value.args[0].value == namespace
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        given = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        function = ast.unparse(call.func)
        if function in {f"{lib}.define" for lib in libraries} and given[:1]:
            schema = given[0]
        elif function.endswith("library.define") and given[:1] == [f"{namespace}::{name}"] and given[1:]:
            schema = name + given[1]
        else:
            continue
        if schema.split("(", 1)[0].strip() == name:
            return schema, node
    return None


def fake_of_dynamic_size(brk: BreakReport, here: str, sources: Sources) -> Fix | None:
    """An operator of the workspace's whose output's size depends on the data (tagged
    ``dynamic_output_shape``) and that has no fake: Dynamo cannot tell its output's shape (GB0037).
    Its fake, registered after its definition, returns a 1-D tensor of its first tensor argument's
    dtype whose length is a size of its own (``torch.library.get_ctx().new_dynamic_size()``). The
    worker holds each call of the op to its fake (its rank and dtype), so the proof refuses it where
    the real result is shaped otherwise."""
    named = NO_META.search(brk.cause.explanation)
    if named is None:
        return None
    namespace, name = named.groups()
    op = f"{namespace}::{name}"
    for path in dict.fromkeys((brk.root.path, here)):
        tree, source = sources.tree(path), sources.text(path) or ""
        if tree is None:
            continue
        torch = torch_name(tree)
        found = _schema_of(tree, namespace, name) if torch is not None else None
        if found is None:
            continue
        schema, defined = found
        listed, _, result = schema.split("(", 1)[1].rpartition(")")
        arguments = [SCHEMA_ARGUMENT.fullmatch(part.strip()) for part in listed.split(",") if part.strip()]
        if result.strip() != "-> Tensor" or not all(arguments):
            return None  # one tensor out, each argument positional
        parameters = [match.group(2) for match in arguments if match is not None]
        like = next((m.group(2) for m in arguments if m is not None and m.group(1) == "Tensor"), None)
        fake = f"_{name}_fake"
        if like is None or fake in source:
            return None
        # The module's statements after its definition that name it: its kernels, ``lib.impl("name", ...)``.
        kernels = [
            (node, [a.value for a in node.value.args if isinstance(a, ast.Constant)])
            for node in tree.body
            if node.lineno > defined.lineno
            and isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
        ]
        kernels = [(node, given) for node, given in kernels if name in given or op in given]
        if any("Meta" in given for _, given in kernels) or re.search(
            rf"(register_fake|impl_abstract)\(\s*['\"]{op}['\"]", source
        ):
            return None  # a fake or meta kernel of its own, that does not hold
        last = kernels[-1][0] if kernels else defined
        end = (last.end_lineno or last.lineno) + 1
        text = (
            f'\n\n@{torch}.library.register_fake("{op}")\n'
            f"def {fake}({', '.join(parameters)}):\n"
            f"    # Its length depends on the values of {like}: a size of its own for the compiler.\n"
            f"    return {like}.new_empty({torch}.library.get_ctx().new_dynamic_size())\n"
        )
        title = (
            f"Register the fake of the operator {op}: a 1-D result of {like}'s dtype whose length depends on "
            f"the data ({torch}.library.register_fake, get_ctx().new_dynamic_size()): the op joins the graph"
        )
        return Fix(title, (Edit(path, Span(end, 0, end, 0), text),))
    return None
