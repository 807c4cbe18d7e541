"""The workspace's import graph, read from the files' syntax (never by importing them): which
modules a source imports, and which workspace files a file imports, directly or through one
another. What reaches a file, the tests that import it and what an edit can change all read it."""

from __future__ import annotations

import ast
import os

from .sources import TextOf


def imported_names(source: str, package: str) -> list[str]:
    """Dotted module names ``source`` imports, relative imports resolved against ``package``."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - node.level + 1] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names if base]
    # Importing a.b.c runs a/__init__.py and a/b/__init__.py too.
    parents = [".".join(name.split(".")[:i]) for name in names for i in range(1, name.count(".") + 1)]
    return [name for name in names + parents if name]


def workspace_imports(path: str, roots: list[str], text_of: TextOf) -> list[str]:
    """The workspace files ``path`` imports, directly or through one another (not the libraries)."""
    folders = [os.path.dirname(path), *roots]
    found: list[str] = []
    pending = [(path, "")]
    while pending:
        current, package = pending.pop()
        for name in imported_names(text_of(current) or "", package):
            relative = name.replace(".", os.sep)
            for folder in folders:
                for candidate in (
                    os.path.join(folder, relative + ".py"),
                    os.path.join(folder, relative, "__init__.py"),
                ):
                    if candidate != path and candidate not in found and os.path.isfile(candidate):
                        found.append(candidate)
                        pending.append(
                            (
                                candidate,
                                name if candidate.endswith("__init__.py") else name.rpartition(".")[0],
                            )
                        )
    return sorted(found)
