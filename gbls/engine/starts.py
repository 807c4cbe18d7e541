"""How a file is started when nothing says how: as its users would start it, from the file's syntax.

A script runs as ``python FILE`` from the folder its users start it from (the CLI's working
directory, the editor's workspace folder, as VS Code's "Run Python File" has it). A module of a
package that imports its own package (``scripts/train.py`` doing ``from mypkg.model import Net``,
or any relative import) fails that way: its users start it as ``python -m scripts.train`` from the
folder that holds the top-level package, and so does gbls.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Start:
    """Where a file's analysis starts it: its working directory, and the module name ``python -m``
    runs it as ("" for ``python FILE``)."""

    cwd: str
    module: str = ""


def start_of(path: str, source: str, folder: str) -> Start:
    """How ``path`` (its text ``source``) is started by a user in ``folder``."""
    if path.endswith(".ipynb"):  # Jupyter starts a notebook's kernel in the notebook's folder
        return Start(os.path.dirname(path))
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return Start(folder)
    relative, names = _imports(tree)
    here = os.path.dirname(path)
    top = here  # the folder that holds the file's top-level package (the file's own, if in none)
    while os.path.isfile(os.path.join(top, "__init__.py")):
        top = os.path.dirname(top)
    own_package = top != here and _package_root_name(path, top) in names
    if relative or own_package:
        return Start(top, _dotted(path, top))
    # Imports that resolve beside the file run as ``python FILE``; one that resolves only in a
    # folder above it (within ``folder``) is the project's own package, reached with ``-m``.
    if any(_resolves(here, name) for name in names):
        return Start(folder)
    for above in _folders_above(here, folder):
        if any(_resolves(above, name) for name in names):
            dotted = _dotted(path, above)
            return Start(above, dotted) if dotted else Start(folder)
    return Start(folder)


def _imports(tree: ast.Module) -> tuple[bool, set[str]]:
    """Whether the file has a relative import, and the top-level names its absolute imports name
    (those inside functions too: a script's ``main()`` imports lazily)."""
    relative, names = False, set[str]()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                relative = True
            elif node.module:
                names.add(node.module.partition(".")[0])
    return relative, names


def _resolves(folder: str, name: str) -> bool:
    """Whether ``import name`` finds a module or package in ``folder``."""
    return os.path.isfile(os.path.join(folder, name + ".py")) or os.path.isdir(os.path.join(folder, name))


def _folders_above(here: str, folder: str) -> list[str]:
    """The folders from ``here``'s parent up to ``folder``, nearest first; none if ``folder`` does not
    hold ``here``."""
    folder = folder.rstrip(os.sep) or os.sep
    if not here.startswith(folder + os.sep):
        return []
    found = []
    current = os.path.dirname(here)
    while True:
        found.append(current)
        if current == folder or os.path.dirname(current) == current:
            return found
        current = os.path.dirname(current)


def _package_root_name(path: str, top: str) -> str:
    return os.path.relpath(path, top).split(os.sep)[0]


def _dotted(path: str, folder: str) -> str:
    """The module name of ``path`` as found from ``folder`` ("" if it has none)."""
    parts = os.path.relpath(os.path.splitext(path)[0], folder).split(os.sep)
    return ".".join(parts) if all(part.isidentifier() for part in parts) else ""
