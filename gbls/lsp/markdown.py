"""Markdown out of Dynamo's text and gbls's places: what hovers and the break report are made of.

Dynamo writes prose with `code` in backticks (not always closed) and, for some breaks, a snippet of
the traced code indented under it, naming files by their absolute paths. Here the prose stays prose
(markdown's own characters escaped), a snippet becomes a fenced block, and a file is named
relative to the workspace folder.
"""

from __future__ import annotations

import os
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from pygls import uris

from ..engine.model import Location

# A notebook's line → its cell's number (from 1) and the line in that cell; None for other files.
Cells = Callable[[str, int], tuple[int, int] | None]


def no_cells(path: str, line: int) -> None:
    return None


# A chain's frame (file, function, line) → its qualified name: ``Block.forward``.
Qualname = Callable[[str, str, int], str]


def as_named(path: str, function: str, line: int) -> str:
    return function


@dataclass(frozen=True)
class Where:
    """How markdown names places: the lines of ``here`` by their number, other files' relative to
    ``folder``, a notebook's by cell; with links where the client renders ``file:`` links."""

    here: str
    folder: str
    links: bool = True  # VS Code's hovers render them; its markdown preview of the report does not
    cells: Cells = no_cells
    qualname: Qualname = as_named

    def file(self, path: str) -> str:
        """``path`` relative to the workspace folder, if it is inside it."""
        inside = path.startswith(os.path.join(self.folder, ""))
        return os.path.relpath(path, self.folder) if inside else path

    def position(self, path: str, line: int) -> str:
        """``line 12``, or ``cell 2, line 3`` in a notebook."""
        cell = self.cells(path, line)
        return f"cell {cell[0]}, line {cell[1]}" if cell is not None else f"line {line}"

    def named(self, at: Location) -> str:
        """The function of a chain's step, by its qualified name: ``Block.forward``."""
        return self.qualname(at.path, at.function, at.span.line)

    def line(self, path: str, line: int) -> str:
        """:meth:`position`, after the file's name if it is not ``here``: ``helpers.py:12``."""
        if path == self.here:
            return self.position(path, line)
        if self.cells(path, line) is not None:
            return f"{self.file(path)} {self.position(path, line)}"
        return f"{self.file(path)}:{line}"

    def link(self, path: str, line: int) -> str:
        """:meth:`line`, as a link to it where links work (a cell's URI has no room for the line)."""
        text = self.line(path, line)
        if not self.links or self.cells(path, line) is not None:
            return text
        return f"[{text}]({uris.from_fs_path(path) or path}#L{line})"


# Markdown's own characters in prose: emphasis, HTML, escapes. An underscore inside a word
# (capture_scalar_outputs) emphasizes nothing and stays as it is, for clients that show markdown raw.
_MARKDOWN = re.compile(r"[\\*<]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def prose(text: str) -> str:
    """Dynamo's prose as markdown: `code` stays code (one left open is closed after its word),
    markdown's own characters elsewhere are escaped (``__init__`` is no bold ``init``)."""
    if text.count("`") % 2:
        head, _, tail = text.rpartition("`")
        word = re.match(r"\S*?(?=[.,;:)]*(\s|$))", tail)
        end = word.end() if word else len(tail)
        text = f"{head}`{tail[:end]}`{tail[end:]}"
    parts = text.split("`")
    return "`".join(
        part if index % 2 else _MARKDOWN.sub(lambda found: "\\" + found[0], part)
        for index, part in enumerate(parts)
    )


_FILE = re.compile(r'File "([^"]+)", line (\d+)')


def explanation(text: str, where: Where) -> str:
    """Dynamo's explanation: its prose as one paragraph, a snippet indented under it (the code a
    data-dependent branch's condition is computed by) as a fenced block, files named by ``where``."""
    blocks: list[tuple[bool, list[str]]] = []  # (a snippet?, its lines)
    for line in text.splitlines():
        if not line.strip():
            continue
        snippet = line.startswith("    ")
        if snippet:
            line = _FILE.sub(lambda m: f'File "{where.file(m[1])}", {where.position(m[1], int(m[2]))}', line)
        if blocks and blocks[-1][0] == snippet:
            blocks[-1][1].append(line)
        else:
            blocks.append((snippet, [line]))
    return "\n\n".join(
        "```python\n" + textwrap.dedent("\n".join(lines)) + "\n```"
        if snippet
        else prose(" ".join(line.strip() for line in lines))
        for snippet, lines in blocks
    )
