"""Source texts: found in the workspace, read from disk safely, decoded as Python would, and parsed
once per request.

A path may come from the analysed code (a frame of a forged break, a ``co_filename`` of
``/dev/zero``), so only regular files of bounded size are read, without ever blocking.
"""

from __future__ import annotations

import ast
import io
import os
import stat
import tokenize
from collections.abc import Callable, Iterable, Iterator

from ..worker.shared.lines import split_lines
from ..worker.shared.workspace import INSTALLED

MAX_SOURCE_BYTES = 16 << 20
# Folders that hold none of the user's code: caches, installed packages, builds; hidden folders and
# environments (``*venv*``) neither.
SKIPPED_FOLDERS = {"__pycache__", "node_modules", "build", "dist", *INSTALLED}
MOST_FILES = 5000  # a workspace is searched this far for importers and tests: a big monorepo stops here

TextOf = Callable[[str], str | None]


def python_files(folders: Iterable[str], most: int | None = None) -> Iterator[str]:
    """The Python files under ``folders``, in path order, without environments, builds and hidden
    folders: at most ``most`` of them."""
    count = 0
    for root in folders:
        for folder, subfolders, files in os.walk(root):
            subfolders[:] = sorted(
                d
                for d in subfolders
                if not d.startswith(".") and d not in SKIPPED_FOLDERS and "venv" not in d
            )
            for name in sorted(files):
                if name.endswith(".py"):
                    count += 1
                    if most is not None and count > most:
                        return
                    yield os.path.join(folder, name)


def read_bytes(path: str) -> bytes | None:
    """The bytes of the regular file ``path``, or None (missing, not a regular file, too big)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except (OSError, ValueError):
        return None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    return data if len(data) <= MAX_SOURCE_BYTES else None


def read_source(path: str) -> str | None:
    """The text of the regular file ``path``, or None (missing, not a regular file, too big)."""
    data = read_bytes(path)
    return decode_source(data) if data is not None else None


def source_encoding(path: str) -> str | None:
    """The encoding the regular file ``path`` decodes with, exactly (a BOM kept), or None: what a fix
    writes it back in, so that every byte it does not change stays."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return None  # undecodable bytes were replaced when read: writing would change them
    return encoding


def why_unreadable(path: str) -> str:
    """Why ``read_source`` gives nothing for ``path``, in words."""
    try:
        info = os.stat(path)
    except OSError as error:
        return error.strerror or str(error)
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file"
    if info.st_size > MAX_SOURCE_BYTES:
        return f"larger than {MAX_SOURCE_BYTES >> 20} MB"
    return "it cannot be read"


def decode_source(data: bytes) -> str:
    """Source bytes as text, honouring a PEP 263 coding cookie; undecodable bytes are replaced."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def parse(source: str | None) -> ast.Module | None:
    if source is None:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


class Sources:
    """The texts, lines and syntax trees one request looks at, each read and parsed at most once."""

    def __init__(self, text_of: TextOf) -> None:
        self._text_of = text_of
        self._texts: dict[str, str | None] = {}
        self._trees: dict[str, ast.Module | None] = {}

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            self._texts[path] = self._text_of(path)
        return self._texts[path]

    def lines(self, path: str) -> list[str]:
        return split_lines(self.text(path) or "")

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            self._trees[path] = parse(self.text(path))
        return self._trees[path]

    def qualname(self, path: str, name: str, line: int) -> str:
        """``Block.forward`` for the function ``name`` of ``path`` whose code holds ``line`` (a chain's
        frame names only ``forward``); ``name`` where the file does not say."""
        found = name

        def visit(body: list[ast.stmt], prefix: str) -> None:
            nonlocal found
            for node in body:
                inside = node.lineno <= line <= (node.end_lineno or node.lineno)
                if isinstance(node, ast.ClassDef) and inside:
                    visit(node.body, f"{prefix}{node.name}.")
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and inside:
                    if node.name == name:
                        found = prefix + name
                    visit(node.body, f"{prefix}{node.name}.<locals>.")

        tree = self.tree(path)
        if tree is not None:
            visit(tree.body, "")
        return found
