"""Whose code a file is: the user's workspace, or what is installed (torch, libraries, the standard library).

Both sides ask it: the worker to tell the program's own compiled functions and lines from a
library's, the server to give each result to the workspace file it belongs to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from .protocol import Request

INSTALLED = ("site-packages", "dist-packages")
# gbls's own code is never the user's, also where a checkout of gbls is the workspace.
GBLS_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep


def installed(path: str) -> bool:
    """Whether ``path`` is in an installed environment (a folder of it is site- or dist-packages)."""
    return bool(set(INSTALLED) & set(path.replace("\\", "/").split("/")))


def library_of(path: str) -> str:
    """The installed package (or module) ``path`` is in: ``transformers`` for
    ``…/site-packages/transformers/models/bert/modeling_bert.py``; "" where it is not installed."""
    parts = path.replace("\\", "/").split("/")
    found = [index for index, part in enumerate(parts) if part in INSTALLED]
    return parts[found[-1] + 1].removesuffix(".py") if found and found[-1] + 1 < len(parts) else ""


def in_workspace(path: str, roots: Iterable[str]) -> bool:
    """Whether ``path`` is a file of one of the workspace folders ``roots`` (an environment
    installed inside one, ``.venv/lib/python3.11/site-packages``, is not the user's code)."""
    if not os.path.isabs(path) or installed(path):
        return False
    if path.startswith(GBLS_DIR):
        return False
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots if root)


def roots_of(request: Request) -> list[str]:
    """The folders whose files are the analysed program's own: the workspace, and a run's working
    directory and script folder."""
    roots = [request.workspace or os.path.dirname(request.path)]
    if request.run is not None:
        roots += [request.run.cwd, os.path.dirname(request.run.script)]
    return [os.path.abspath(root) for root in dict.fromkeys(roots) if root]


def own_file(request: Request) -> Callable[[str], bool]:
    """The files whose lines say where the program is (where it failed, hung or was stopped): the
    analysed file, or for a run every file of the workspace."""
    if request.run is None:
        return lambda path: path == request.path
    roots = roots_of(request)
    return lambda path: in_workspace(path, roots)
