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
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable

from . import reaching_tests
from .discovery import find_compiled
from .imports import workspace_imports
from .model import FileReport
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
        if reaching_tests.is_test_file(candidate):
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
