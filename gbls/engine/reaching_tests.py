"""The project's tests that reach a file: what runs a library's compiled code no script calls.

A library method compiled with ``@torch.compile`` is often called by nothing but the project's
pytest tests. When neither a configured run nor the file's own analysis ran it, gbls runs the tests
that reach it (``python -m pytest tests/test_x.py::test_up ...`` from the project's folder) before it
says "not analysed". Which tests is decided here, for ``gbls check`` and the editor alike, from the
files' syntax only: in the ``test_*.py`` and ``*_test.py`` files whose imports name the module (or
a workspace module that imports it), the tests that use what they import from those (or import them
themselves, or call a helper of the file that does), each by its id: one test of a 197-test file
runs within one analysis's budget, the whole file does not. A file none of whose tests says so (a
fixture brings the module), or all of whose tests do, runs whole.
"""

from __future__ import annotations

import ast
import os

from ..worker.shared.protocol import Run
from . import runs
from .imports import imported_names, workspace_imports
from .sources import MOST_FILES, TextOf, python_files

MOST_TESTS = 8  # test files run for one analysis: the run has one analysis's time budget


def module_name(path: str) -> str:
    """The dotted name the file is imported by: its packages (folders with ``__init__.py``) above it."""
    folder = os.path.dirname(path)
    parts = [os.path.splitext(os.path.basename(path))[0]]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_test_file(path: str) -> bool:
    name = os.path.basename(path)
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def tests_of(paths: list[str], folder: str, text_of: TextOf) -> list[str]:
    """The tests that reach one of ``paths``: the test files among them (a test is its own), then
    under ``folder`` the tests that use one of their modules (``path::test``, ``path::Class::test``,
    or a whole file), in path order: at most ``MOST_TESTS``."""
    found = sorted(path for path in paths if is_test_file(path))[:MOST_TESTS]
    files = list(python_files([folder], MOST_FILES))
    # A test reaches a file through the modules that import it too: a library's optimizers, which
    # call its compiled utilities; its package, when the package's own imports reach the file.
    through = [
        other
        for other in files
        if not is_test_file(other) and set(paths) & set(workspace_imports(other, [folder], text_of))
    ]
    wanted = {module_name(path) for path in [*paths, *through]} - {""}
    for candidate in filter(is_test_file, files):
        source = text_of(candidate) or ""
        if candidate in found or not wanted & set(imported_names(source, "")):
            continue
        for test in _reaching(candidate, source, wanted):
            if len(found) == MOST_TESTS:
                return found
            found.append(test)
    return found


def _binds(node: ast.stmt, wanted: set[str]) -> set[str]:
    """The names an import statement binds to a wanted module or to something of it."""
    bound = set()
    if isinstance(node, ast.ImportFrom) and not node.level:
        module = node.module or ""
        for alias in node.names:
            if module in wanted or f"{module}.{alias.name}" in wanted:
                bound.add(alias.asname or alias.name)
    elif isinstance(node, ast.Import):
        for alias in node.names:
            if alias.name in wanted or any(name.startswith(alias.name + ".") for name in wanted):
                bound.add(alias.asname or alias.name.split(".")[0])
    return bound


def _uses(node: ast.AST, bound: set[str], wanted: set[str]) -> bool:
    """Whether ``node`` imports a wanted module or reads a name bound to one."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Import | ast.ImportFrom) and _binds(inner, wanted):
            return True
        if isinstance(inner, ast.Name) and inner.id in bound:
            return True
    return False


def _reaching(path: str, source: str, wanted: set[str]) -> list[str]:
    """The ids of the tests of ``path`` that use a wanted module; ``[path]``, the whole file, when none
    says so itself."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return [path]
    bound = {name for node in tree.body for name in _binds(node, wanted)}
    tests: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []
    helpers: list[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            tests.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            functions = (n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef))
            tests += [(f"{node.name}::{f.name}", f) for f in functions if f.name.startswith("test")]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            helpers.append(node)
    growing = True
    while growing:  # a helper of the file that uses the module, and the helpers that call it
        growing = False
        for helper in helpers:
            if helper.name not in bound and _uses(helper, bound, wanted):
                bound.add(helper.name)
                growing = True
    chosen = [f"{path}::{name}" for name, test in tests if _uses(test, bound, wanted)]
    return chosen if chosen and len(chosen) < len(tests) else [path]  # all of them: the file


def test_run(folder: str, tests: list[str]) -> Run:
    """``python -m pytest TEST...`` from ``folder``, the tests named as the user would type them."""
    named = []
    for test in tests:
        file, separator, name = test.partition("::")
        named.append(os.path.relpath(file, folder) + separator + name)
    run = runs.command_line(folder, "pytest", named, module=True)
    return Run(f"-m pytest {' '.join(named)}", run.script, run.module, run.args, run.cwd, run.env)


def test_in(path: str, line: int, source: str) -> str:
    """pytest's name, within the test file ``path`` of text ``source``, of the test whose body holds
    ``line`` (``test_apply``, ``TestScaler::test_apply``); "" when the line is in no test."""
    if not is_test_file(path):
        return ""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return ""
    names: list[str] = []
    body: list[ast.stmt] = tree.body
    while True:
        inner = next(
            (
                node
                for node in body
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and node.lineno <= line <= (node.end_lineno or node.lineno)
            ),
            None,
        )
        if inner is None:
            break
        names.append(inner.name)
        if not isinstance(inner, ast.ClassDef):
            break
        body = inner.body
    return "::".join(names) if names and names[-1].startswith("test") else ""
