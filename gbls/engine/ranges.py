"""Map what CPython reports (1-based lines, UTF-8 byte columns, often no end line) to exact spans.

Dynamo's frames carry the instruction's start line and its start and end byte columns, but no
end line. Instructions take their positions from AST nodes, so the node that starts at that
line and column and ends at that column gives the end line. Without columns (Python < 3.11)
the span is the whole line, from its first non-blank character.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..worker.shared.lines import split_lines


@dataclass(frozen=True)
class Span:
    """A source span: 1-based lines, 0-based character columns, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def start(self) -> tuple[int, int]:
        return (self.line, self.column)

    @property
    def end(self) -> tuple[int, int]:
        return (self.end_line, self.end_column)

    def contains(self, line: int, column: int) -> bool:
        """Whether the cursor at ``line``/``column`` is on the span: just after its end counts."""
        return self.start <= (line, column) <= self.end

    def touches(self, other: Span) -> bool:
        """Whether two spans share a position, a common boundary included (a selection and a name)."""
        return self.start <= other.end and other.start <= self.end

    def overlaps(self, other: Span) -> bool:
        """Whether two spans share a character: edits that only meet at a boundary do not."""
        return self.start < other.end and other.start < self.end


def byte_to_char(text: str, byte_column: int) -> int:
    return len(text.encode("utf-8")[:byte_column].decode("utf-8", "ignore"))


def char_to_utf16(text: str, column: int) -> int:
    return len(text[:column].encode("utf-16-le")) // 2


def line_text(lines: Sequence[str], line: int) -> str:
    return lines[line - 1] if 0 < line <= len(lines) else ""


def written(source: str, span: Span) -> str:
    """The code of ``span`` in ``source`` as written, on one line."""
    lines = _lines(source)
    if not 0 < span.line <= span.end_line <= len(lines):
        return ""
    if span.line == span.end_line:
        return lines[span.line - 1][span.column : span.end_column]
    parts = [lines[span.line - 1][span.column :], *lines[span.line : span.end_line - 1]]
    return " ".join(" ".join([*parts, lines[span.end_line - 1][: span.end_column]]).split())


def span_of(source: str, line: int, column: int | None, end_column: int | None) -> Span:
    """The exact span of the instruction at ``line``/``column`` (byte columns) in ``source``."""
    lines = _lines(source)
    text = line_text(lines, line)
    if column is None or end_column is None:
        start = len(text) - len(text.lstrip())
        return Span(line, start, line, len(text))
    end_line = _end_lines(source).get((line, column, end_column), line)
    if end_line == line and end_column < column:
        end_line = line
        end_column = len(text.encode("utf-8"))
    return Span(
        line,
        byte_to_char(text, column),
        end_line,
        byte_to_char(line_text(lines, end_line), end_column),
    )


@lru_cache(maxsize=32)
def _lines(source: str) -> tuple[str, ...]:
    return tuple(split_lines(source))


@lru_cache(maxsize=32)
def _end_lines(source: str) -> dict[tuple[int, int, int], int]:
    """(line, byte column, end byte column) of every multi-line AST node → its end line."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    ends: dict[tuple[int, int, int], int] = {}
    for node in ast.walk(tree):
        end_line = getattr(node, "end_lineno", None)
        if end_line is not None and end_line != node.lineno:  # type: ignore[attr-defined]
            key = (node.lineno, node.col_offset, node.end_col_offset)  # type: ignore[attr-defined]
            ends.setdefault(key, end_line)
    return ends
