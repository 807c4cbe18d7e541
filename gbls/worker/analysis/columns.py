"""An instruction's columns on Python 3.10, which has no column table (``co_positions`` is 3.11+).

The instruction is matched to the syntax of its line: the k-th call instruction of the line is the
k-th call the line's code makes, in the order Python evaluates them; a conditional jump is the test
of the line's ``if``, ``while`` or conditional expression. Only an unambiguous match counts (as
many calls in the code as in the syntax, one test): anything else has no columns, and its range
is the whole line.
"""

from __future__ import annotations

import ast
import dis
import linecache
import types
from collections.abc import Iterator

Columns = tuple[int | None, int | None]
NONE: Columns = (None, None)
CALLS = {"CALL_FUNCTION", "CALL_FUNCTION_KW", "CALL_FUNCTION_EX", "CALL_METHOD", "CALL"}
JUMPS = {"POP_JUMP_IF_FALSE", "POP_JUMP_IF_TRUE", "JUMP_IF_FALSE_OR_POP", "JUMP_IF_TRUE_OR_POP"}

_trees: dict[str, ast.Module | None] = {}


def of_instruction(code: types.CodeType, offset: int | None) -> Columns:
    """The UTF-8 byte columns of the instruction at ``offset`` of ``code``, if its line tells them."""
    if offset is None:
        return NONE
    lines: list[tuple[int, dis.Instruction]] = []
    line = None
    target = None
    for instruction in dis.get_instructions(code):
        line = instruction.starts_line or line
        if line is not None:
            lines.append((line, instruction))
        if instruction.offset == offset:
            target = (line, instruction)
    if target is None or target[0] is None:
        return NONE
    line, instruction = target
    tree = _tree(code.co_filename)
    if tree is None:
        return NONE
    same_line = [other for at, other in lines if at == line]
    if instruction.opname in CALLS:
        calls = [other.offset for other in same_line if other.opname in CALLS]
        nodes = [
            node for node in _evaluation_order(tree) if isinstance(node, ast.Call) and node.lineno == line
        ]
        if len(nodes) == len(calls):
            return _span(nodes[calls.index(instruction.offset)])
    elif instruction.opname in JUMPS:
        jumps = [other for other in same_line if other.opname in JUMPS]
        tests = [
            node.test
            for node in ast.walk(tree)
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and node.test.lineno == line
        ]
        if len(jumps) == 1 and len(tests) == 1:
            return _span(tests[0])
    return NONE


def _span(node: ast.expr) -> Columns:
    return node.col_offset, node.end_col_offset  # the end on the node's last line, as 3.11's tables


def _tree(path: str) -> ast.Module | None:
    if path not in _trees:
        source = "".join(linecache.getlines(path))
        try:
            _trees[path] = ast.parse(source) if source else None
        except (SyntaxError, ValueError):
            _trees[path] = None
    return _trees[path]


def _evaluation_order(node: ast.AST) -> Iterator[ast.AST]:
    """Each node after the nodes it evaluates first (a call after its function and arguments). A
    lambda or comprehension on the line is code of its own: its calls make the counts differ."""
    for child in ast.iter_child_nodes(node):
        yield from _evaluation_order(child)
    yield node
