"""What reaches a file the editor opens: the project's configured runs, else the workspace files
that import it and compile something.

A model file has no compile site of its own: ``train.py`` compiles its model. Opening it, the
server analyses what reaches it in the background, so that its breaks appear without the user
opening anything else; only when nothing does is it "not analysed: nothing compiles this file".
Found from the files' syntax (imports and compile sites), cheaply, never by running them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..engine import runs
from ..engine.cache import workspace_imports
from ..engine.discovery import find_compiled
from ..engine.sources import TextOf

SKIPPED = {"__pycache__", "node_modules", "site-packages", "dist-packages", "build", "dist"}
MOST_FILES = 5000  # a workspace is searched this far for importers: a big monorepo stops here

NOTHING_REACHES = (
    "nothing compiles this file: it has no compile site of its own, and neither a configured run nor "
    "a workspace file that imports it compiles code that runs it. Configure a run ([[tool.gbls.run]] "
    "in pyproject.toml, or a Python launch configuration in .vscode/launch.json)"
)


def compiles(path: str, text_of: TextOf) -> bool:
    """Whether the file has a compile site of its own."""
    source = text_of(path) or ""
    return "compile" in source and bool(find_compiled(source, path))


def configured(folder: str, current_file: str) -> runs.Runs:
    """The runs ``folder`` configures; ``current_file``: what ``${file}`` means in a launch configuration."""
    return runs.configured(folder, current_file)


def importers(path: str, folder: str, text_of: TextOf) -> list[str]:
    """The files of the workspace folder ``folder`` with a compile site of their own that import
    ``path``, directly or not (imports resolved as that folder's files resolve them)."""
    found = []
    for candidate in _python_files([folder]):
        if candidate == path or not compiles(candidate, text_of):
            continue
        if path in workspace_imports(candidate, [folder], text_of):
            found.append(candidate)
    return found


def _python_files(folders: list[str]) -> Iterator[str]:
    count = 0
    for root in folders:
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(
                d for d in subfolders if not d.startswith(".") and d not in SKIPPED and "venv" not in d
            )
            for name in sorted(files):
                if name.endswith(".py"):
                    count += 1
                    if count > MOST_FILES:
                        return
                    yield os.path.join(folder, name)
