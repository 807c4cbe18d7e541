"""Frames as gbls reports them: whose file is the user's, resume functions named as their function,
and a chain folded to the code the user wrote."""

from __future__ import annotations

import os
import re
import sysconfig
import types
from typing import Any

import torch

from ..shared.protocol import Frame

# (path, code name as Dynamo saw it, line, start byte column, end byte column)
RawFrame = tuple[str, str, int, int | None, int | None]

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Every module of the worker, whichever process runs it: never the user's code.
WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep

RESUME_PREFIX = "torch_dynamo_resume_in_"


def base_name(code_name: str) -> str:
    """``torch_dynamo_resume_in_forward_at_12`` → ``forward``."""
    match = re.match(RESUME_PREFIX + r"(\w+)_at_\d+$", code_name)
    return match.group(1) if match else code_name


def is_user_file(filename: str) -> bool:
    return not (filename.startswith((TORCH_DIR, WORKER_DIR, STDLIB_DIR)) or filename.startswith("<"))


def raw_frame(summary: Any) -> RawFrame:
    """A ``traceback.FrameSummary`` as a raw frame (columns from Python 3.11 on)."""
    return (
        summary.filename,
        summary.name,
        summary.lineno,
        getattr(summary, "colno", None),
        getattr(summary, "end_colno", None),
    )


def collapse(frames: list[RawFrame]) -> tuple[Frame, ...]:
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


def resumes(caller: types.CodeType, callee: types.CodeType) -> bool:
    """Whether ``callee`` is a resume function of ``caller``'s function (Dynamo's code calls it to go on
    after a break)."""
    return (
        callee.co_name.startswith(RESUME_PREFIX)
        and callee.co_filename == caller.co_filename
        and base_name(callee.co_name) == base_name(caller.co_name)
    )


def resume_line(code_name: str) -> int | None:
    match = re.match(RESUME_PREFIX + r"\w+_at_(\d+)$", code_name)
    return int(match.group(1)) if match else None


def code_of(function: Any) -> types.CodeType | None:
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types.CodeType) else None
