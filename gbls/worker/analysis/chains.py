"""The eager call chain above a frame Dynamo translates: from the compiled target's call it runs
under (the code Dynamo generated for the target, or the target's own frame where Dynamo gave up on
it and ran it eagerly) down to the frame, each frame where it is (its instruction's columns).

A callee Dynamo could not inline runs as a frame of its own, called by the target's generated code
or by its eager frame; so does a resume function of such a callee after its own break. Its breaks
and its compilations are the target's, on the chain from the target's line that leads to them.
"""

from __future__ import annotations

import types

from ..shared.frames import RawFrame
from .columns import of_instruction as columns_from_syntax
from .frames import is_user_file, resumes
from .targets import Registry, Target


def eager_chain(
    stack: list[types.FrameType], translated: types.CodeType, registry: Registry
) -> tuple[Target | None, list[RawFrame]]:
    """The target whose call entered the translated frame, and the chain of frames from there down
    to the translated frame's caller: the innermost target running on ``stack`` (the translated
    frame's callers, outermost first), code generated for it or its own run eagerly
    (``Registry.running``), the chain from the outermost frame that runs it (its own call's)."""
    running = [registry.running(frame) for frame in stack]
    target = next((found for found in reversed(running) if found is not None), None)
    if target is None:
        return None, []
    start = running.index(target)
    chain = [f for f in stack[start:] if _in_chain(f.f_code, registry)]
    placed = _placed_from(chain, translated, registry)
    return target, [position(f, registry) for f in chain[placed:]]


def position(frame: types.FrameType, registry: Registry) -> RawFrame:
    """Where an eager frame is: its current instruction's columns, from the column table (3.11+)
    or from the syntax of its line (3.10; not for Dynamo's generated code, which has no syntax)."""
    code = frame.f_code
    column = end_column = None
    if hasattr(code, "co_positions") and frame.f_lasti >= 0:
        for index, found in enumerate(code.co_positions()):
            if index == frame.f_lasti // 2:
                column, end_column = found[2], found[3]
                break
    elif registry.of_generated(code) is None:
        column, end_column = columns_from_syntax(code, frame.f_lasti)
    return (code.co_filename, code.co_name, frame.f_lineno, column, end_column)


def _placed_from(chain: list[types.FrameType], translated: types.CodeType, registry: Registry) -> int:
    """Where the eager call chain starts to say where it is: generated code without positions for
    the calls it leaves in (torch 2.6, and any torch on Python 3.10) has no columns, or only its
    first line. Below the last such frame the chain is a suffix of the one Dynamo logged for the
    compiled frame, and merges with it. A call of the frame's own resume function needs no
    position: the chain drops that caller (``collapse``), and the frames above it still say where
    the user's code called into the library that Dynamo compiled on its own."""
    callees = [frame.f_code for frame in chain[1:]] + [translated]
    for index in range(len(chain) - 1, -1, -1):
        frame = chain[index]
        if (
            registry.of_generated(frame.f_code) is not None
            and position(frame, registry)[3] is None
            and not resumes(frame.f_code, callees[index])
        ):
            return index + 1
    return 0


def _in_chain(code: types.CodeType, registry: Registry) -> bool:
    return registry.of_generated(code) is not None or is_user_file(code.co_filename)
