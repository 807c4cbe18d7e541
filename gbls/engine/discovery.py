"""Find what a file compiles, statically: where each compile site is, and its ranges.

The worker sees what actually runs (the object, its class, its ``forward``'s code); this sees what
the file says, including compile calls that never run on import (in ``main()`` or the
``__main__`` block), and gives the ranges the editor needs (the ``def`` name, the decorator, the
compile call). It is one pass over the file's own syntax, so that it costs milliseconds whatever
the file imports: it never resolves a name into a library. It follows the names the file binds
to ``torch.compile`` (``import torch as T``, ``from torch import compile as jit``,
``jit = T.compile(backend=...)``, ``partial(torch.compile, ...)``) and ``.compile()`` on anything
but an imported module, so ``re.compile`` is not a compile site; and an outer call's arguments
(``torch.compile(f)(torch.randn(3))``) are the compiled function's inputs, not compile sites.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..worker.shared.protocol import TargetKind
from .ranges import Span

COMPILE = "torch.compile"
OPTIMIZE = "torch._dynamo.optimize"  # always takes its backend first: a decorator factory
PARTIALS = {"partial", "functools.partial"}


@dataclass(frozen=True)
class CompiledSite:
    """A compiled target as the source writes it. Spans use 1-based lines and UTF-8 byte columns."""

    name: str
    qualname: str
    kind: TargetKind  # as far as the source shows (the run has the truth)
    line: int  # the compile call's first line (the ``def`` line for a decorated function)
    first_line: int  # what the code object's co_firstlineno will be (the first decorator's line)
    name_span: Span
    decorator_span: Span | None = None
    call_span: Span | None = None
    in_main_block: bool = False  # runs only when the file runs as a script (`if __name__ == ...`)
    scope: str = ""  # the function whose body holds the compile call; "" at module level
    # The call compiles what its enclosing function is given (``torch.compile(...)(func)`` in a
    # decorator, a factory, a ``compile_if_available`` helper): one compile site per function that
    # goes through it, each on its own ``def``.
    generic: bool = False

    @property
    def id(self) -> str:
        """What the worker echoes back for the target it ran for this site."""
        return f"{self.qualname}@{self.line}:{self.name_span.column}"

    @property
    def end_line(self) -> int:
        """The compile call's (or decorator's) last line: the run's call line falls in between."""
        span = self.call_span or self.decorator_span or self.name_span
        return span.end_line


def find_compiled(source: str, path: str = "") -> tuple[CompiledSite, ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    finder = _Finder(tree)
    finder.visit_body(tree.body, _Scope())
    return tuple(sorted(finder.sites, key=lambda site: (site.line, site.name_span.column)))


@dataclass(frozen=True)
class _Scope:
    names: tuple[str, ...] = ()  # the qualname parts, ``<locals>`` after a function
    function: str = ""  # the innermost function's qualname
    in_main: bool = False
    parameters: frozenset[str] = frozenset()  # of the functions around, the closures' too


def _span(node: ast.AST) -> Span:
    return Span(
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        node.end_col_offset or node.col_offset,  # type: ignore[attr-defined]
    )


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def name_span(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Span:
    prefix = {ast.AsyncFunctionDef: "async def ", ast.ClassDef: "class "}.get(type(node), "def ")
    column = node.col_offset + len(prefix)
    return Span(node.lineno, column, node.lineno, column + len(node.name.encode()))


def arguments_of(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    """Every parameter a ``def`` names, ``*args`` and ``**kwargs`` too."""
    given = node.args
    extra = [a for a in (given.vararg, given.kwarg) if a is not None]
    return [*given.posonlyargs, *given.args, *given.kwonlyargs, *extra]


def definitions(tree: ast.Module | None) -> dict[tuple[str, int], ast.FunctionDef | ast.AsyncFunctionDef]:
    """Each ``def`` of a module by its name and its code object's first line (the first decorator's)."""
    found: dict[tuple[str, int], ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            found.setdefault((node.name, first), node)
    return found


def _walk_calls(nodes: Iterable[ast.AST]) -> Iterator[ast.Call]:
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                yield node


class _Names:
    """What the file binds to torch, anywhere in it (flow-insensitive: one pass, no inference)."""

    def __init__(self, tree: ast.Module) -> None:
        self.torch: dict[str, str] = {}  # local name → the torch path it stands for
        self.modules: set[str] = set()  # names bound by ``import`` to modules other than torch
        self.factories: set[str] = set()  # names bound to ``torch.compile(**options)``: decorators
        self.classes: dict[str, ast.ClassDef] = {}
        self.functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
        self.assigned: dict[str, list[ast.expr]] = {}  # name → every value assigned to it
        self.qualnames: dict[ast.AST, str] = {}
        self._qualify(tree.body, [])
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == "torch" or alias.name.startswith("torch."):
                        if alias.asname:
                            self.torch[alias.asname] = alias.name
                        else:
                            self.torch["torch"] = "torch"
                    else:
                        self.modules.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "torch" or node.module.startswith("torch."):
                    for alias in node.names:
                        self.torch[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.ClassDef):
                self.classes.setdefault(node.name, node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.functions.setdefault(node.name, node)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
        self.imports_torch = bool(self.torch)
        # Aliases of aliases (``jit = T.compile``; ``fast = jit(mode=...)``) until nothing new is found.
        changed = True
        while changed:
            changed = False
            for name, values in self.assigned.items():
                for value in values:
                    if name not in self.torch and self.dotted(value) in (COMPILE, OPTIMIZE):
                        self.torch[name] = self.dotted(value) or ""
                        changed = True
                    elif name not in self.factories and self.makes_decorator(value):
                        self.factories.add(name)
                        changed = True

    def _qualify(self, body: Iterable[ast.stmt], prefix: list[str]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.qualnames[node] = ".".join([*prefix, node.name])
                inner = [*prefix, node.name] + ([] if isinstance(node, ast.ClassDef) else ["<locals>"])
                self._qualify(node.body, inner)
            else:
                for field in ("body", "orelse", "finalbody", "handlers"):
                    self._qualify([n for n in getattr(node, field, []) if isinstance(n, ast.stmt)], prefix)

    def dotted(self, node: ast.AST) -> str | None:
        """The torch path an expression names (``T.compile`` → ``torch.compile``), if any."""
        if isinstance(node, ast.Name):
            return self.torch.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def makes_decorator(self, node: ast.AST) -> bool:
        """``torch.compile(**options)``, ``optimize(backend)``, ``partial(torch.compile, ...)``."""
        if isinstance(node, ast.Name):
            return node.id in self.factories
        if not isinstance(node, ast.Call):
            return False
        callee = self.dotted(node.func)
        if callee == COMPILE:
            return not node.args
        if callee == OPTIMIZE:
            return True
        function = ast.unparse(node.func)
        return function in PARTIALS and bool(node.args) and self.dotted(node.args[0]) in (COMPILE, OPTIMIZE)


class _Finder:
    def __init__(self, tree: ast.Module) -> None:
        self.names = _Names(tree)
        self.sites: list[CompiledSite] = []
        self.main_only = self._main_only_functions(tree)

    @staticmethod
    def _main_only_functions(tree: ast.Module) -> set[str]:
        """Module-level functions that only the ``__main__`` block calls (``main()``), transitively."""
        top = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        guard = [n for n in tree.body if isinstance(n, ast.If) and _is_main_guard(n)]
        elsewhere = [n for n in tree.body if not (isinstance(n, ast.If) and _is_main_guard(n))]

        def called(nodes: Iterable[ast.AST]) -> set[str]:
            return {
                c.func.id for c in _walk_calls(nodes) if isinstance(c.func, ast.Name) and c.func.id in top
            }

        outside = called(n for n in elsewhere if not isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
        found = called(guard) - outside
        frontier = set(found)
        while frontier:
            more = called([top[name] for name in frontier]) - found - outside
            found |= more
            frontier = more
        return found

    def visit_body(self, body: list[ast.stmt], scope: _Scope) -> None:
        for node in body:
            self.visit(node, scope)

    def visit(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._decorated(node, scope)
            self._calls_in([*node.decorator_list, node.args], scope)
            qualname = ".".join([*scope.names, node.name])
            in_main = scope.in_main or (not scope.names and node.name in self.main_only)
            given = scope.parameters | {argument.arg for argument in arguments_of(node)}
            self.visit_body(
                node.body, _Scope((*scope.names, node.name, "<locals>"), qualname, in_main, given)
            )
            return
        if isinstance(node, ast.ClassDef):
            self._calls_in(node.decorator_list + node.bases, scope)
            self.visit_body(
                node.body, _Scope((*scope.names, node.name), scope.function, scope.in_main, scope.parameters)
            )
            return
        if isinstance(node, ast.If) and not scope.names and _is_main_guard(node):
            self._calls_in([node.test], scope)
            self.visit_body(node.body, _Scope(scope.names, scope.function, True, scope.parameters))
            self.visit_body(node.orelse, scope)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt) or isinstance(getattr(child, "body", None), list):
                self.visit(child, scope)  # statements, except handlers, match cases
            else:
                self._calls_in([child], scope)

    def _decorated(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        for decorator in node.decorator_list:
            compiles = self.names.dotted(decorator) == COMPILE or self.names.makes_decorator(decorator)
            if not compiles:
                continue
            in_class = bool(scope.names) and scope.names[-1] != "<locals>"
            self.sites.append(
                CompiledSite(
                    name=node.name,
                    qualname=".".join([*scope.names, node.name]),
                    kind="method" if in_class else "function",
                    line=node.lineno,
                    first_line=node.decorator_list[0].lineno,
                    name_span=name_span(node),
                    decorator_span=_span(decorator),
                    in_main_block=scope.in_main or node.name in self.main_only,
                    scope=scope.function,
                )
            )
            return

    def _calls_in(self, nodes: Iterable[ast.AST], scope: _Scope) -> None:
        for call in _walk_calls(nodes):
            compiled = self._compiled_by(call)
            if compiled is not None:
                self.sites.append(self._site(compiled, call, scope))

    def _compiled_by(self, call: ast.Call) -> ast.expr | None:
        """What ``call`` compiles: ``torch.compile(x)``, ``factory(x)``, ``x.compile()``; or nothing."""
        names = self.names
        callee = names.dotted(call.func)
        if callee == COMPILE:
            return call.args[0] if call.args else None
        if names.makes_decorator(call.func):  # jit(f), torch.compile(mode=...)(f), optimize("eager")(f)
            return call.args[0] if call.args else None
        function = call.func
        if (
            isinstance(function, ast.Attribute)
            and function.attr == "compile"
            and names.imports_torch
            and not call.args  # nn.Module.compile takes torch.compile's options, all keywords
            and callee is None
            and not (isinstance(function.value, ast.Name) and function.value.id in names.modules)
        ):
            return function.value
        return None

    def _site(self, argument: ast.expr, call: ast.Call, scope: _Scope) -> CompiledSite:
        generic = isinstance(argument, ast.Name) and argument.id in scope.parameters
        name, qualname, kind, first_line = self._describe(argument)
        return CompiledSite(
            name=name,
            qualname=qualname,
            kind="function" if generic else kind,
            generic=generic,
            line=call.lineno,
            first_line=first_line or call.lineno,
            name_span=_span(argument),
            call_span=_span(call),
            in_main_block=scope.in_main,
            scope=scope.function,
        )

    def _describe(self, argument: ast.expr, depth: int = 0) -> tuple[str, str, TargetKind, int]:
        """name, qualname, kind and first line of what ``argument`` is, as far as the syntax shows."""
        names = self.names
        if isinstance(argument, ast.Lambda):
            return "<lambda>", "<lambda>", "function", argument.lineno
        if isinstance(argument, ast.Name):
            function = names.functions.get(argument.id)
            if function is not None:
                first = function.decorator_list[0].lineno if function.decorator_list else function.lineno
                return function.name, names.qualnames.get(function, function.name), "function", first
            if argument.id in names.classes:  # the class itself, compiled as a function of it
                return argument.id, argument.id, "module", names.classes[argument.id].lineno
            values = names.assigned.get(argument.id, [])
            if len(values) == 1 and isinstance(values[0], ast.Call) and depth < 4:
                described = self._describe(values[0], depth + 1)
                if described[0] in names.classes or described[0][:1].isupper():  # model = Net(...)
                    return described
            return argument.id, argument.id, "module", 0
        if isinstance(argument, ast.Call):  # torch.compile(Net(...)): a module built right there
            built = argument.func
            while isinstance(built, ast.Call):
                built = built.func
            if isinstance(built, ast.Attribute) and built.attr in ("from_config", "from_pretrained", "to"):
                built = built.value  # AutoModel.from_config(cfg), Net().to(device)
                while isinstance(built, ast.Call):
                    built = built.func
            label = built.attr if isinstance(built, ast.Attribute) else ast.unparse(built)
            defined = names.classes.get(label)
            return label, label, "module", defined.lineno if defined else 0
        if isinstance(argument, ast.Attribute):  # model.forward: a bound method
            text = ast.unparse(argument)
            return argument.attr, text, "method", 0
        text = ast.unparse(argument)
        return text, text, "module", 0
