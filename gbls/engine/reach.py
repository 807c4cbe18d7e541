"""What reaches a file, and what a file no analysis reached says: the same for ``gbls check`` and
the editor.

A model file has no compile site of its own: ``train.py`` compiles its model. A library's compiled
method has no caller in its own file: ``train_up.py`` calls it, without ever saying "compile". Both
front ends analyse the workspace files that import the file and either compile something
themselves, or are scripts importing a workspace module that does (found from the files' syntax,
cheaply, never by running them); only when none of them, and no configured run, ran its code is it
"not analysed", with the reason: of the scripts that would have reached it, the one that got
furthest stopped (or was cut) first, or nothing compiles it at all. A file without code (empty,
comments, a docstring) is nothing to analyse.

A library method compiled with ``@torch.compile`` is often called by nothing but the project's
pytest tests. When neither a configured run nor the file's own analysis ran it, gbls runs the tests
that reach it (``python -m pytest tests/test_x.py::test_up ...`` from the project's folder) before it
says "not analysed". Which tests is decided here, for ``gbls check`` and the editor alike, from the
files' syntax only: in the ``test_*.py`` and ``*_test.py`` files whose imports name the module (or
a workspace module that imports it), the tests that use what they import from those (or import them
themselves, or call a helper of the file that does), each by its id: one test of a 197-test file
runs within one analysis's budget, the whole file does not. A file none of whose tests says so (a
fixture brings the module), or all of whose tests do, runs whole.

The editor also asks which configured run starts a script it opens (``starting``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable

from ..worker.shared.protocol import Run
from . import runs
from .discovery import find_compiled
from .imports import imported_names, workspace_imports
from .model import FileReport, FileView
from .sources import MOST_FILES, TextOf, python_files

NOTHING_REACHES = (
    "nothing compiles this file: it has no compile site of its own, and neither a configured run, a "
    "workspace file that imports it nor a test that imports it compiles code that runs it. Configure a "
    "run ([[tool.gbls.run]] in pyproject.toml, or a Python launch configuration in .vscode/launch.json)"
)


def has_code(source: str) -> bool:
    """Whether the file has a statement to run beyond docstrings (a file that does not parse has: its
    analysis says why)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    return any(
        not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in tree.body
    )


def compiles(path: str, text_of: TextOf) -> bool:
    """Whether the file has a compile site of its own."""
    source = text_of(path) or ""
    return "compile" in source and bool(find_compiled(source, path))


def is_script(source: str, path: str) -> bool:
    """Whether the file does something when run: a ``__main__`` block, or top-level statements that
    call or loop, outside a package (a package's module is imported, not run)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return True
    if os.path.isfile(os.path.join(os.path.dirname(path), "__init__.py")):
        return False
    acting = (ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)
    return any(
        isinstance(node, acting) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call))
        for node in tree.body
    )


def importers(paths: list[str], folder: str, text_of: TextOf) -> dict[str, list[str]]:
    """For each of ``paths``, the files of the workspace folder ``folder`` that import it, directly or
    not (imports resolved as that folder's files resolve them), and that compile something of their
    own or are scripts importing a workspace file that does: one walk of the folder for them all. A
    file outside the folder has none, and needs no walk."""
    found: dict[str, list[str]] = {path: [] for path in paths}
    within = os.path.join(os.path.abspath(folder), "")
    inside = [path for path in paths if os.path.abspath(path).startswith(within)]
    known: dict[str, bool] = {}

    def compiling(path: str) -> bool:
        if path not in known:
            known[path] = compiles(path, text_of)
        return known[path]

    for candidate in python_files([folder], MOST_FILES) if inside else ():
        # A test runs as pytest runs it (the tests that reach a file), not as a file of its own.
        if is_test_file(candidate):
            continue
        imported = workspace_imports(candidate, [folder], text_of)
        reached = [path for path in inside if path != candidate and path in imported]
        if not reached:
            continue
        if compiling(candidate) or (
            is_script(text_of(candidate) or "", candidate) and any(map(compiling, imported))
        ):
            for path in reached:
                found[path].append(candidate)
    return found


def unreached(path: str, analyses: Iterable[FileReport], folder: str) -> str:
    """Why no analysis ran compiled code of ``path``: of ``analyses`` (those that would have: its
    importers', the configured runs'), the one that got furthest toward it stopped, or was cut at
    the end of its budget, first; else nothing compiles it."""
    ended = [r for r in analyses if r.path != path and ((r.status != "ok" and r.message) or r.cut)]
    if not ended:
        return NOTHING_REACHES
    # Furthest: it imported the file, then compiled something; a cut program was still going.
    report = max(
        ended, key=lambda r: (path in r.executed, any(f.analysed for f in r.functions), r.cut is not None)
    )
    script = os.path.relpath(report.path, folder)
    if report.cut is not None and not report.message:
        cut_at = f" at {report.cut.where}" if report.cut.where else ""
        return (
            f"{script}, which imports it, was cut after {report.cut.seconds:g} s{cut_at}, still running, "
            "before it ran compiled code of this file: give it a larger budget (the timeout setting), or "
            "configure a run that gets there sooner"
        )
    at = report.failure_span.line if report.failure_span is not None else 0
    where = os.path.relpath(report.failure_path or report.path, folder)
    first = report.message.splitlines()[0]
    line = f" at line {at}" if at else ""
    return f"{where} stopped{line} before it ran compiled code of this file: {first}"


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


def tests_run(path: str, folder: str, text_of: TextOf) -> Run | None:
    """The run of the project's tests that import ``path`` (``tests_of``), if it has any."""
    tests = tests_of([path], folder, text_of)
    return test_run(folder, tests) if tests else None


def starting(path: str, folder: str) -> Run | None:
    """The configured run that starts the script ``path`` (not one that runs whatever file is open,
    ``${file}``), if any: its result is the script's."""
    return next((run for run in runs.configured(folder).runs if runs.entry_of(run) == path), None)


def unanalysed(reports: Iterable[FileReport | FileView]) -> list[str]:
    """The files with a compiled function of their own that no analysis ran."""
    return [r.path for r in reports if any(not f.analysed and f.path == r.path for f in r.functions)]
