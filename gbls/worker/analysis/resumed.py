"""The values a resume function receives, named by the code the user wrote.

After a graph break Dynamo runs the rest of the function as a resume function
(``torch_dynamo_resume_in_step_at_12``), whose arguments are what the function had on its stack at
the break (``___stack0``, ``___stack1``...; ``__resume_frame_values[0]`` when they are passed in a
list) and its locals. A guard on one of them names it so; the user wrote an expression: the call
Dynamo broke at returned it (``np.random.rand()``), or a local held it. Dynamo keeps, for each resume
function, the code it resumes and where (``ContinueExecutionCache``): the instruction before that
offset is the call that broke, whose result is the top of the stack.
"""

from __future__ import annotations

import ast
import dis
import linecache
import re
import sys
import types
from typing import Any

from torch._dynamo.resume_execution import ContinueExecutionCache

from ..shared import reasons
from ..shared.frames import base_name
from ..shared.protocol import Frame, Guard


def in_user_words(guard: Guard, code: types.CodeType) -> Guard:
    """``guard`` with the resume function ``code``'s values named as the user wrote them."""
    return reasons.held(guard, _names(code) if reasons.HELD.search(guard.text + guard.subject) else {})


def named(subject: str, code: types.CodeType) -> str:
    """A value the resume function ``code`` received (``___stack0``), as the user wrote it."""
    if not reasons.HELD.search(subject):
        return subject
    return reasons.name_held(subject, _names(code))[0]


def _names(code: types.CodeType) -> dict[int, tuple[str, Frame | None]]:
    """What each of the resume function ``code``'s frame values is, by its index: (the expression,
    where it was computed) for the stack values the statement of the break computed (the result of
    the call Dynamo broke at on top), (the name, None) for a local."""
    resumed = _resumed(code)
    if resumed is None:
        return {}
    original, offset, stack, argnames = resumed
    names: dict[int, tuple[str, Frame | None]] = {
        stack + index: (name, None) for index, name in enumerate(argnames)
    }
    slots = _stack_at(original, offset)
    index = stack - 1
    for slot in reversed(slots):
        if slot is _NULL:
            continue
        if slot is _UNSURE or index < 0:
            break
        if isinstance(slot, dis.Instruction):
            found = _written(original, slot)
            if found is not None:
                names[index] = found
        index -= 1
    return names


def _resumed(code: types.CodeType) -> tuple[types.CodeType, int, int, tuple[str, ...]] | None:
    """The code ``code`` resumes, the offset it resumes at, how many stack values and which locals
    it receives; None if it is no resume function this torch describes."""
    meta: Any = ContinueExecutionCache.generated_code_metadata.get(code)
    original = getattr(meta, "code", None)
    if not isinstance(original, types.CodeType):
        return None
    for key, generated in ContinueExecutionCache.cache.get(original, {}).items():
        # (resume offset, setup targets, stack values, locals, ...) on every torch gbls supports
        if generated is code and len(key) > 3 and isinstance(key[0], int) and isinstance(key[2], int):
            return original, key[0], key[2], tuple(str(name) for name in key[3])
    return None


# What a stack slot holds, when no instruction of the break's statement names it: a NULL (it is no
# frame value), a value of no expression (an item ``UNPACK_SEQUENCE`` pushed), or either of them.
_NULL, _UNNAMED, _UNSURE = object(), object(), object()
Slot = dis.Instruction | object
# Instructions that push no value; any other pushes one, but those of ``_pushed``.
_NO_VALUE = re.compile(
    r"(STORE|DELETE|POP|JUMP|RETURN|RAISE|RERAISE|SETUP|END|PRINT|IMPORT_STAR|LIST_|SET_|DICT_|MAP_ADD"
    r"|PRECALL|KW_NAMES|NOP|RESUME|EXTENDED_ARG|CACHE|COPY_FREE_VARS|MAKE_CELL|YIELD|SEND|CHECK)"
)


def _stack_at(code: types.CodeType, offset: int) -> list[Slot]:
    """The stack after the instruction before ``offset`` in ``code`` (Dynamo broke at it: a call, or
    a store), as far as the statement it is in computed it: each slot's instruction, bottom first;
    [] where Python has no columns, or the statement branches before the break."""
    instructions = list(dis.get_instructions(code))
    before = [instruction for instruction in instructions if instruction.offset < offset]
    broke = before[-1] if before else None
    if broke is None or not broke.opname.startswith(("CALL", "STORE_ATTR", "STORE_SUBSCR")):
        return []
    statement = _statement_of(code, broke)
    if statement is None:
        return []
    window: list[dis.Instruction] = []
    for instruction in reversed(before):
        at = getattr(instruction, "positions", None)
        if at is None or at.lineno is None or not _inside(statement, at.lineno, at.col_offset or 0):
            break
        window.insert(0, instruction)
    slots: list[Slot] = []
    for instruction in window:
        if instruction.opcode in dis.hasjrel or instruction.opcode in dis.hasjabs:
            return []  # a branch of the statement: which way it went is not in the code
        pushed = _pushed(instruction)
        pops = len(pushed) - dis.stack_effect(instruction.opcode, instruction.arg)
        if instruction.opname == "COPY" and instruction.arg and instruction.arg <= len(slots):
            pushed = [slots[-instruction.arg]]
        if instruction.opname == "SWAP" and instruction.arg and instruction.arg <= len(slots):
            slots[-1], slots[-instruction.arg] = slots[-instruction.arg], slots[-1]
            continue
        if pops > len(slots):  # it takes what was on the stack before the statement
            slots = [_UNSURE] * pops
        slots = slots[: len(slots) - pops] + pushed
    return slots


def _pushed(instruction: dis.Instruction) -> list[Slot]:
    """What ``instruction`` pushes, in order."""
    name, arg = instruction.opname, instruction.arg or 0
    if name == "PUSH_NULL":
        return [_NULL]
    if name == "LOAD_GLOBAL" and arg & 1:  # the global and a NULL for the call (3.13: after it)
        return [instruction, _NULL] if sys.version_info >= (3, 13) else [_NULL, instruction]
    if name in ("LOAD_METHOD", "LOAD_SUPER_ATTR") or (
        name == "LOAD_ATTR" and sys.version_info >= (3, 12) and arg & 1
    ):
        return [_UNSURE, _UNSURE]  # a method and its object, or a NULL and the attribute
    if name in ("UNPACK_SEQUENCE", "UNPACK_EX", "BEFORE_WITH", "BEFORE_ASYNC_WITH", "LOAD_FAST_LOAD_FAST"):
        count = len(instruction.argval) if isinstance(instruction.argval, tuple) else 0
        effect = dis.stack_effect(instruction.opcode, instruction.arg)
        return [_UNNAMED] * max(count, effect + 1, 1)
    if _NO_VALUE.match(name):
        return []
    return [instruction]


def _statement_of(code: types.CodeType, instruction: dis.Instruction) -> ast.stmt | None:
    """The innermost statement of ``code``'s file that holds ``instruction``."""
    at = getattr(instruction, "positions", None)
    if at is None or at.lineno is None:
        return None
    tree = _tree(code.co_filename)
    found = None
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.stmt) and _inside(node, at.lineno, at.col_offset or 0):
            if found is None or (node.lineno, node.col_offset) >= (found.lineno, found.col_offset):
                found = node
    return found


def _inside(node: ast.stmt, line: int, column: int) -> bool:
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return (node.lineno, node.col_offset) <= (line, column) < end


def _tree(path: str) -> ast.Module | None:
    try:
        return ast.parse("".join(linecache.getlines(path)))
    except (SyntaxError, ValueError):
        return None


def _written(code: types.CodeType, instruction: dis.Instruction) -> tuple[str, Frame] | None:
    """``instruction``'s expression as written in ``code``'s file, on one line, and where it is."""
    at = getattr(instruction, "positions", None)
    if at is None or None in (at.lineno, at.end_lineno, at.col_offset, at.end_col_offset):
        return None
    assert at.lineno is not None and at.end_lineno is not None
    assert at.col_offset is not None and at.end_col_offset is not None
    lines = [line.encode("utf-8") for line in linecache.getlines(code.co_filename)]
    if at.end_lineno > len(lines):
        return None
    before_last = len(b"".join(lines[at.lineno - 1 : at.end_lineno - 1]))
    written = b"".join(lines[at.lineno - 1 : at.end_lineno])[at.col_offset : before_last + at.end_col_offset]
    text = " ".join(written.decode("utf-8", "replace").split())  # an expression over lines, on one
    end = at.end_col_offset if at.lineno == at.end_lineno else None
    return text, Frame(code.co_filename, base_name(code.co_name), at.lineno, at.col_offset, end)
