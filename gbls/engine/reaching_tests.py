"""The project's tests that reach a file: what runs a library's compiled code no script calls.

A library method compiled with ``@torch.compile`` is often called by nothing but the project's
pytest tests. When neither a configured run nor the file's own analysis ran it, gbls runs the tests
that import its module (``python -m pytest FILE...`` from the project's folder) before it says
"not analysed". Which tests is decided here, for ``gbls check`` and the editor alike, from the
files' syntax only: ``test_*.py`` and ``*_test.py`` files whose imports (inside test functions too)
name the module.
"""

from __future__ import annotations

import ast
import os

from ..worker.shared.protocol import Run
from . import runs
from .cache import _imported_names
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
    """The test files among ``paths`` (a test is its own), then those under ``folder`` whose imports
    name the module of one of ``paths``, in path order: at most ``MOST_TESTS`` files."""
    found = sorted(path for path in paths if is_test_file(path))[:MOST_TESTS]
    wanted = {module_name(path) for path in paths} - {""}
    for candidate in filter(is_test_file, python_files([folder], MOST_FILES)):
        if len(found) == MOST_TESTS:
            break
        if candidate not in found and wanted & set(_imported_names(text_of(candidate) or "", "")):
            found.append(candidate)
    return found


def test_run(folder: str, tests: list[str]) -> Run:
    """``python -m pytest TEST...`` from ``folder``, the tests named as the user would type them."""
    named = [os.path.relpath(test, folder) for test in tests]
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
