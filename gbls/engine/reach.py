"""What reaches a file that compiles nothing, and what a file no analysis reached says: the same for
``gbls check`` and the editor.

A model file has no compile site of its own: ``train.py`` compiles its model. Both front ends
analyse the workspace files that import it and compile something (found from the files' syntax,
cheaply, never by running them); only when none of them, and no configured run, ran its code is it
"not analysed", with the reason: the script that would have reached it stopped first, or nothing
compiles it at all. A file without code (empty, comments, a docstring) is nothing to analyse.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable

from . import reaching_tests
from .cache import workspace_imports
from .discovery import find_compiled
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


def importers(paths: list[str], folder: str, text_of: TextOf) -> dict[str, list[str]]:
    """For each of ``paths``, the files of the workspace folder ``folder`` with a compile site of their
    own that import it, directly or not (imports resolved as that folder's files resolve them): one
    walk of the folder for them all. A file outside the folder has none, and needs no walk."""
    found: dict[str, list[str]] = {path: [] for path in paths}
    within = os.path.join(os.path.abspath(folder), "")
    inside = [path for path in paths if os.path.abspath(path).startswith(within)]
    for candidate in python_files([folder], MOST_FILES) if inside else ():
        # A test runs as pytest runs it (the tests that reach a file), not as a file of its own.
        if reaching_tests.is_test_file(candidate) or not compiles(candidate, text_of):
            continue
        imported = workspace_imports(candidate, [folder], text_of)
        for path in inside:
            if path != candidate and path in imported:
                found[path].append(candidate)
    return found


def unreached(path: str, analyses: Iterable[FileReport], folder: str) -> str:
    """Why no analysis ran compiled code of ``path``: one of ``analyses`` (those that would have: its
    importers', the configured runs') stopped first; else nothing compiles it."""
    for report in analyses:
        if report.path == path or report.status == "ok" or not report.message:
            continue
        at = report.failure_span.line if report.failure_span is not None else 0
        where = os.path.relpath(report.failure_path or report.path, folder)
        first = report.message.splitlines()[0]
        line = f" at line {at}" if at else ""
        return f"{where} stopped{line} before it ran compiled code of this file: {first}"
    return NOTHING_REACHES
