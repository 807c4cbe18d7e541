"""A break's chain as the user wrote it, from the frames Dynamo reports: resume functions named as
their function, their generated callers dropped, frames of torch and the standard library folded.

The worker asks with the frames of its live stack, the server with the frames a trace wrote down;
each says which files are the user's (``is_user_file``). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .protocol import Frame

# (path, code name as Dynamo saw it, line, start byte column, end byte column)
RawFrame = tuple[str, str, int, int | None, int | None]

RESUME_PREFIX = "torch_dynamo_resume_in_"
RESUME = re.compile(RESUME_PREFIX + r"(\w+)_at_(\d+)$")


def base_name(code_name: str) -> str:
    """``torch_dynamo_resume_in_forward_at_12`` → ``forward``."""
    match = RESUME.match(code_name)
    return match.group(1) if match else code_name


def resume_line(code_name: str) -> int | None:
    """``torch_dynamo_resume_in_forward_at_12`` → 12: the line the resume function resumes after."""
    match = RESUME.match(code_name)
    return int(match.group(2)) if match else None


def collapse(frames: list[RawFrame], is_user_file: Callable[[str], bool]) -> tuple[Frame, ...]:
    """The chain as the user wrote it: frames of torch and the standard library folded (a wrapper
    such as ``torch.no_grad``'s, a polyfill), the generated caller of each resume function dropped,
    frames named without resume prefixes."""
    kept: list[RawFrame] = []
    for frame in frames:
        path, name = frame[0], frame[1]
        if kept and not is_user_file(path):
            continue
        if (
            kept
            and name.startswith(RESUME_PREFIX)
            and kept[-1][0] == path
            and base_name(kept[-1][1]) == base_name(name)
        ):
            kept.pop()
        kept.append(frame)
    chain: list[Frame] = []
    for path, name, line, column, end in kept:
        step = Frame(path, base_name(name), line, column, end)
        if not chain or chain[-1] != step:  # a wrapper folded away leaves its caller twice
            chain.append(step)
    return tuple(chain)
