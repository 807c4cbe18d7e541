"""Span arithmetic: where a cursor is, what touches, what overlaps, and columns in three units."""

from __future__ import annotations

import ast

from gbls.engine.ranges import Span, byte_to_char, char_to_utf16, span_of
from gbls.worker.shared.lines import split_lines


def test_a_cursor_is_on_a_span_up_to_just_after_its_end() -> None:
    span = Span(3, 4, 3, 10)
    assert span.contains(3, 4) and span.contains(3, 10)
    assert not span.contains(3, 3) and not span.contains(3, 11)
    assert not span.contains(2, 5) and not span.contains(4, 5)
    multi = Span(3, 8, 5, 2)
    assert multi.contains(4, 0) and multi.contains(5, 2) and not multi.contains(3, 7)


def test_touching_counts_a_shared_boundary_overlapping_does_not() -> None:
    first, second = Span(1, 0, 1, 5), Span(1, 5, 1, 9)
    assert first.touches(second) and second.touches(first)
    assert not first.overlaps(second) and not second.overlaps(first)
    inside = Span(1, 2, 1, 3)
    assert first.overlaps(inside) and inside.overlaps(first)
    insertion = Span(1, 5, 1, 5)  # an empty span: an insertion at a boundary overlaps nothing
    assert not insertion.overlaps(first) and not insertion.overlaps(second) and insertion.touches(first)
    assert not Span(1, 0, 1, 5).touches(Span(2, 0, 2, 1))


def test_columns_in_bytes_characters_and_utf16_units() -> None:
    text = "naïve = 🚀 + x"
    assert byte_to_char(text, len("naïve = 🚀".encode())) == len("naïve = 🚀") == 9
    assert char_to_utf16(text, 9) == 10  # the rocket is two UTF-16 code units
    assert byte_to_char(text, 3) == 2  # inside the two bytes of ï: the character it starts


def test_instruction_spans_take_their_end_line_from_the_syntax() -> None:
    source = "def f(x):\n    return g(\n        x,\n    )\n"
    # CPython gives the call's start line and byte columns, not its end line.
    assert span_of(source, 2, 11, 5) == Span(2, 11, 4, 5)
    assert span_of(source, 2, 4, 10) == Span(2, 4, 2, 10)  # no node ends there: one line
    assert span_of(source, 2, None, None) == Span(2, 4, 2, 13)  # no column table: the whole line


def test_lines_end_where_python_ends_them() -> None:
    """Only CRLF, CR and LF end a line, for Python as for LSP: not a form feed, U+2028 or U+0085."""
    odd = "\x0c", "\u2028", "\x85", "\x1c", "\x1d", "\x1e", "\x0b"
    source = "a = 1\r\n" + "".join(f"# {c}\n" for c in odd) + "b = 2\rc = 3\n"
    tree = ast.parse(source)
    lines = split_lines(source)
    for statement in tree.body:
        assert isinstance(statement, ast.Assign)
        name = statement.targets[0]
        assert isinstance(name, ast.Name)
        assert lines[statement.lineno - 1].startswith(f"{name.id} = ")
    assert len(lines) == len(odd) + 3
    assert (
        split_lines(source, keepends=True)[0] == "a = 1\r\n" and "".join(split_lines(source, True)) == source
    )


def test_tabs_are_one_column_for_python_and_for_lsp() -> None:
    source = "def f(x):\n\treturn print(x)\n"
    call = ast.parse(source).body[0].body[0].value  # type: ignore[attr-defined]
    span = span_of(source, call.lineno, call.col_offset, call.end_col_offset)
    assert (span.column, span.end_column) == (8, 16)
    assert char_to_utf16("\treturn print(x)", span.column) == 8
