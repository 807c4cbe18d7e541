"""Columns of a traceback's frames, recovered from the source: a trace names lines, and only from
torch 2.13 on (Python 3.11+) carets that mark where an instruction starts.

Each frame but the last is a call into the next frame's function: among the calls of its line,
the one to that name (``normalize(y)`` for a frame of ``normalize``; ``self.block(x)`` for a
module's ``forward`` when it is the line's only call); the last frame is the root cause: the test
of the line's ``if``/``while`` for data-dependent branching, else the call the message names
(``print``, ``item``, ``nonzero``). Carets, where torch printed them, decide where the node
starts. Only an unambiguous match counts: anything else has no columns, and its range is the line.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Iterator
from functools import lru_cache

from ..worker.shared.lines import split_lines

Columns = tuple[int | None, int | None]
NONE: Columns = (None, None)
BRANCHING = ("Data-dependent branching", "Data-dependent jump")
WORD = re.compile(r"[A-Za-z_]\w*")


@lru_cache(maxsize=64)
def _calls_and_tests(source: str) -> tuple[dict[int, list[ast.Call]], dict[int, list[ast.expr]]] | None:
    """Every call, and every branch test, by the line it starts on."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    calls: dict[int, list[ast.Call]] = {}
    tests: dict[int, list[ast.expr]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            calls.setdefault(node.lineno, []).append(node)
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            tests.setdefault(node.test.lineno, []).append(node.test)
    return calls, tests


def callee_name(call: ast.Call) -> str:
    """The name a call calls: ``f`` of ``f(x)``, ``item`` of ``x.sum().item()``."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _columns(node: ast.expr) -> Columns:
    return node.col_offset, node.end_col_offset  # bytes; the end on the node's last line, as CPython's


def _caret_bytes(text: str, caret: int | None) -> int | None:
    """A caret's offset in the stripped line as a byte column of the line. Python draws carets in
    display columns: a wide character (an emoji, a CJK ideograph) takes two."""
    if caret is None:
        return None
    indent = len(text) - len(text.lstrip())
    width = 0
    for index, character in enumerate(text[indent:]):
        if width >= caret:
            return len(text[: indent + index].encode("utf-8"))
        width += 2 if unicodedata.east_asian_width(character) in ("W", "F") else 1
    return len(text.encode("utf-8"))


def _starting_at(nodes: list[ast.Call], start: int | None) -> list[ast.Call]:
    return nodes if start is None else [node for node in nodes if node.col_offset == start]


def of_call(source: str, line: int, callee: str, caret: int | None) -> Columns:
    """The call on ``line`` into a function named ``callee`` (a frame's call into the next one)."""
    found = _calls_and_tests(source)
    if found is None:
        return NONE
    lines = split_lines(source)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    calls = _starting_at(found[0].get(line, []), _caret_bytes(text, caret))
    named = [call for call in calls if callee_name(call) == callee]
    chosen = named or (calls if len(calls) == 1 else [])
    return _columns(chosen[0]) if len(chosen) == 1 else NONE


def of_cause(source: str, line: int, gb_type: str, said: str, caret: int | None) -> Columns:
    """The root cause on ``line``: the branch test of data-dependent branching, else the call whose
    name the message (``said``: its gb_type, explanation and context) names."""
    found = _calls_and_tests(source)
    if found is None:
        return NONE
    lines = split_lines(source)
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = _caret_bytes(text, caret)
    if gb_type in BRANCHING:
        tests = [test for test in found[1].get(line, []) if start is None or test.col_offset == start]
        return _columns(tests[0]) if len(tests) == 1 else NONE
    calls = _starting_at(found[0].get(line, []), start)
    words = set(WORD.findall(said))
    named = [call for call in calls if callee_name(call) in words]
    chosen = _outermost(named) if named else _outermost(calls) if start is not None else calls
    return _columns(chosen[0]) if len(chosen) == 1 else NONE


def _outermost(calls: list[ast.Call]) -> list[ast.Call]:
    """The calls no other of ``calls`` contains: ``x.abs().max().item()`` of its three."""
    return [call for call in calls if not any(other is not call and _inside(call, other) for other in calls)]


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return any(child is node for child in _descendants(outer))


def _descendants(node: ast.AST) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        yield child
        yield from _descendants(child)


@lru_cache(maxsize=64)
def _uses(source: str) -> dict[int, list[tuple[str, ast.expr]]]:
    """Each expression that reads a name or an attribute (``k``, ``self.factor``), with the
    operation it is an operand of, by line: where a guard on it was installed."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[int, list[tuple[str, ast.expr]]] = {}
    for parent in ast.walk(tree):
        if not isinstance(parent, ast.expr):
            continue
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, (ast.Name, ast.Attribute)):
                found.setdefault(child.lineno, []).append((ast.unparse(child), parent))
    return found


def of_use(source: str, line: int, subject: str) -> Columns:
    """The operation on ``line`` that reads ``subject`` (``x * k`` for ``k``, ``range(n)`` for
    ``n``): the instruction a guard on it was installed at, when its line reads it once."""
    operations = [parent for name, parent in _uses(source).get(line, []) if name == subject]
    return _columns(operations[0]) if len(operations) == 1 else NONE
