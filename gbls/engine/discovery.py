"""Find what a file compiles, statically: where each compiled function or module is, and its ranges.

The worker sees what actually runs; this sees what the file says, including compile calls that
never run on import (in ``main()`` or the ``__main__`` block), and gives the ranges the editor
needs (the ``def`` name, the decorator, the compile call). jedi resolves names, so aliases
(``import torch as T``, ``from torch import compile as jit``, ``jit = T.compile(backend=...)``)
are found and ``re.compile`` is not.
"""

from __future__ import annotations

import ast
import logging
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import jedi

from ..worker.lines import split_lines
from .ranges import Span, line_text

log = logging.getLogger(__name__)

COMPILE_FUNCTIONS = {"torch.compile", "torch._dynamo.optimize", "torch._dynamo.eval_frame.optimize"}
MODULE_COMPILE = "torch.nn.modules.module.Module.compile"
# jedi's caches are not thread-safe, and discovery runs in worker threads.
_jedi_lock = threading.Lock()


@dataclass(frozen=True)
class CompiledSite:
    """A compiled target as the source writes it. Spans use 1-based lines and UTF-8 byte columns."""

    name: str
    qualname: str
    kind: str  # function | method | module
    line: int
    first_line: int  # what the code object's co_firstlineno will be (the first decorator's line)
    name_span: Span
    decorator_span: Span | None = None
    call_span: Span | None = None
    in_main_block: bool = False

    @property
    def id(self) -> str:
        """What the worker echoes back for the target it ran for this site."""
        return f"{self.qualname}@{self.line}:{self.name_span.column}"


@dataclass
class _Scope:
    names: list[str] = field(default_factory=list)
    in_main: bool = False


@lru_cache(maxsize=4)
def _environment(interpreter: str | None) -> Any:
    if not interpreter:
        return None
    try:
        return jedi.create_environment(interpreter, safe=False)
    except Exception:  # an interpreter jedi cannot inspect: resolve with gbls's own
        log.warning(
            "jedi cannot inspect %s; names are resolved with gbls's own Python", interpreter, exc_info=True
        )
        return None


def find_compiled(source: str, path: str, interpreter: str | None = None) -> tuple[CompiledSite, ...]:
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ()
    with _jedi_lock:
        script = jedi.Script(source, path=path, environment=_environment(interpreter))
        finder = _Finder(script, tree)
        finder.visit_body(tree.body, _Scope())
    return tuple(sorted(finder.sites, key=lambda site: site.line))


def _span(node: ast.AST) -> Span:
    return Span(
        node.lineno,  # type: ignore[attr-defined]
        node.col_offset,  # type: ignore[attr-defined]
        node.end_lineno or node.lineno,  # type: ignore[attr-defined]
        node.end_col_offset or node.col_offset,  # type: ignore[attr-defined]
    )


def _last_name(node: ast.AST) -> ast.AST | None:
    """The node whose final identifier jedi should resolve: ``T.compile`` → ``compile``."""
    if isinstance(node, ast.Call):
        node = node.func
    return node if isinstance(node, ast.Name | ast.Attribute) else None


def _identifier(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _is_main_guard(node: ast.If) -> bool:
    test = node.test
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


class _Finder:
    def __init__(self, script: jedi.Script, tree: ast.Module) -> None:
        self.script = script
        self.tree = tree
        self.sites: list[CompiledSite] = []
        self.candidates = self._candidate_names(tree)
        self.resolved: dict[tuple[int, int], list[Any]] = {}
        # Names bound to ``torch.compile(backend=...)``: decorators that compile.
        self.factories: set[tuple[int, int]] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and not node.value.args:
                if self._compiler(node.value.func) == "function":
                    self.factories |= {
                        (t.lineno, t.col_offset) for t in node.targets if isinstance(t, ast.Name)
                    }

    @staticmethod
    def _candidate_names(tree: ast.Module) -> set[str]:
        """Identifiers that might name torch.compile: ``compile`` and whatever is bound from it."""
        names = {"compile", "optimize"}
        changed = True
        while changed:
            changed = False
            for node in ast.walk(tree):
                bound: list[str] = []
                if isinstance(node, ast.ImportFrom):
                    bound = [a.asname for a in node.names if a.asname and a.name in names]
                elif isinstance(node, ast.Assign) and isinstance(
                    node.value, ast.Call | ast.Name | ast.Attribute
                ):
                    callee = _last_name(node.value)
                    if callee is not None and _identifier(callee) in names:
                        bound = [t.id for t in node.targets if isinstance(t, ast.Name)]
                new = set(bound) - names
                if new:
                    names |= new
                    changed = True
        return names

    def _goto(self, node: ast.AST) -> list[Any]:
        line, column = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        key = (line, column)
        if key not in self.resolved:
            try:
                self.resolved[key] = self.script.goto(line, max(column - 1, 0), follow_imports=True)
            except Exception:
                log.warning("jedi failed to resolve line %s of %s", line, self.script.path, exc_info=True)
                self.resolved[key] = []
        return self.resolved[key]

    def _compiler(self, node: ast.AST) -> str | None:
        """``function`` if ``node`` names torch.compile, ``decorator`` if a compile(...) result."""
        name = _last_name(node) if not isinstance(node, ast.Call) else _last_name(node.func)
        if name is None or _identifier(name) not in self.candidates:
            return None
        for definition in self._goto(name):
            if definition.full_name in COMPILE_FUNCTIONS:
                return "function"
            if definition.full_name == MODULE_COMPILE:
                return "module-method"
            if definition.type == "statement" and (definition.line, definition.column) in self.factories:
                return "decorator"
        return None

    def visit_body(self, body: list[ast.stmt], scope: _Scope) -> None:
        for node in body:
            self.visit(node, scope)

    def visit(self, node: ast.AST, scope: _Scope) -> None:
        if isinstance(node, ast.Module):
            self.visit_body(node.body, scope)
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._function(node, scope)
            inner = _Scope([*scope.names, node.name, "<locals>"], scope.in_main)
            self._calls_in([*node.decorator_list, node.args], scope)
            self.visit_body(node.body, inner)
            return
        if isinstance(node, ast.ClassDef):
            self._calls_in(node.decorator_list + node.bases, scope)
            self.visit_body(node.body, _Scope([*scope.names, node.name], scope.in_main))
            return
        if isinstance(node, ast.If) and not scope.names and _is_main_guard(node):
            self._calls_in([node.test], scope)
            self.visit_body(node.body, _Scope(scope.names, True))
            self.visit_body(node.orelse, scope)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                self.visit(child, scope)
            elif isinstance(getattr(child, "body", None), list):  # except handlers, match cases
                self.visit(child, scope)
            else:
                self._calls_in([child], scope)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> None:
        for decorator in node.decorator_list:
            kind = self._compiler(decorator)
            callee_is_decorator = kind == "decorator" or (
                kind == "function" and isinstance(decorator, ast.Name | ast.Attribute)
            )
            factory_call = kind == "function" and isinstance(decorator, ast.Call) and not decorator.args
            if callee_is_decorator or factory_call:
                qualname = ".".join([*scope.names, node.name])
                in_class = bool(scope.names) and scope.names[-1] != "<locals>"
                self.sites.append(
                    CompiledSite(
                        name=node.name,
                        qualname=qualname,
                        kind="method" if in_class else "function",
                        line=node.lineno,
                        first_line=node.decorator_list[0].lineno,
                        name_span=self._name_span(node),
                        decorator_span=_span(decorator),
                        in_main_block=scope.in_main,
                    )
                )
                return

    def _name_span(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> Span:
        prefix = (
            "async def "
            if isinstance(node, ast.AsyncFunctionDef)
            else "class "
            if isinstance(node, ast.ClassDef)
            else "def "
        )
        column = node.col_offset + len(prefix.encode())
        return Span(node.lineno, column, node.lineno, column + len(node.name.encode()))

    def _calls_in(self, nodes: list[Any], scope: _Scope) -> None:
        for root in nodes:
            for node in ast.walk(root) if isinstance(root, ast.AST) else []:
                if isinstance(node, ast.Call):
                    self._call(node, scope)

    def _call(self, node: ast.Call, scope: _Scope) -> None:
        kind = self._compiler(node.func)
        if kind == "function" and node.args:
            site = self._site_for_argument(node.args[0], node, scope)
            if site is not None:
                self.sites.append(site)
        elif kind == "module-method" and isinstance(node.func, ast.Attribute):
            site = self._site_for_argument(node.func.value, node, scope)
            if site is not None:
                self.sites.append(site)

    def _first_line_of_def(self, line: int) -> int:
        for site_node in ast.walk(self.tree):
            if isinstance(site_node, ast.FunctionDef | ast.AsyncFunctionDef) and site_node.lineno == line:
                return site_node.decorator_list[0].lineno if site_node.decorator_list else line
        return line

    def _site_for_argument(self, argument: ast.AST, call: ast.Call, scope: _Scope) -> CompiledSite | None:
        """What ``torch.compile(argument)`` compiles: a function of this file or a module class."""
        name_node = argument.func if isinstance(argument, ast.Call) else argument
        name = _last_name(name_node)
        if name is None:
            return None
        try:
            if isinstance(argument, ast.Call):
                definitions = self._goto(name)
            else:
                line, column = name.end_lineno, name.end_col_offset  # type: ignore[attr-defined]
                definitions = self.script.infer(line, max(column - 1, 0))
        except Exception:
            log.warning("jedi failed on the compiled object at line %s", call.lineno, exc_info=True)
            definitions = []
        for definition in definitions:
            module_name = definition.module_name or ""
            qualname = definition.full_name or definition.name
            if qualname.startswith(module_name + "."):
                qualname = qualname[len(module_name) + 1 :]
            if definition.type not in ("function", "class", "instance"):
                continue
            kind = "module" if definition.type != "function" else "method" if "." in qualname else "function"
            first_line = definition.line or call.lineno
            if kind != "module" and definition.module_path == self.script.path:
                first_line = self._first_line_of_def(definition.line)
            return CompiledSite(
                name=definition.name,
                qualname=qualname,
                kind=kind,
                line=call.lineno,
                first_line=first_line,
                name_span=_span(argument),
                call_span=_span(call),
                in_main_block=scope.in_main,
            )
        return None


def definition_of(source: str, path: str, line: int, byte_column: int) -> tuple[str, int] | None:
    """Where the name at ``line``/``byte_column`` is defined, when that is a workspace file, not a library."""
    text = line_text(split_lines(source), line)
    column = len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))
    with _jedi_lock:
        try:
            found = jedi.Script(source, path=path).goto(line, column, follow_imports=True)
        except Exception:
            log.warning("jedi failed to find the definition at %s:%s", path, line, exc_info=True)
            return None
    for definition in found:
        module = str(definition.module_path or "")
        if definition.type == "function" and module.endswith(".py") and "-packages" not in module:
            return module, definition.line
    return None
