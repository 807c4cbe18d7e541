"""Frames as the worker sees them: whose file is the user's (not torch's, gbls's or the standard
library's), and a live stack's chain folded to the code the user wrote (``shared.frames``)."""

from __future__ import annotations

import os
import sysconfig
import types
from typing import Any

import torch

from ..shared import frames
from ..shared.frames import RawFrame
from ..shared.protocol import Frame

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Every module of the worker, whichever process runs it: never the user's code.
WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep


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


def collapse(raw: list[RawFrame]) -> tuple[Frame, ...]:
    """The chain as the user wrote it, the user's files being those outside torch, gbls and the
    standard library."""
    return frames.collapse(raw, is_user_file)


def resumes(caller: types.CodeType, callee: types.CodeType) -> bool:
    """Whether ``callee`` is a resume function of ``caller``'s function (Dynamo's code calls it to go on
    after a break)."""
    return (
        callee.co_name.startswith(frames.RESUME_PREFIX)
        and callee.co_filename == caller.co_filename
        and frames.base_name(callee.co_name) == frames.base_name(caller.co_name)
    )


def code_of(function: Any) -> types.CodeType | None:
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types.CodeType) else None
