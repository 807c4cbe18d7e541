"""Compilations: each frame Dynamo translates, what it decided for it, and the recompilations.

A ``Translation`` is one frame being translated and the compiled target whose call it belongs
to. Dynamo says whether a translation is a recompilation (and the check its newest compiled
version failed, read by ``reasons``), whether a recompile limit refused it, and, from torch
2.12, where in the source the failed check was installed.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import torch._dynamo

from ..shared import reasons
from ..shared.frames import RawFrame, base_name
from ..shared.protocol import Frame, Guard, Raises
from . import hookpoints, resumed
from .frames import collapse, raw_frame
from .targets import Target


class Translation:
    """One frame Dynamo is translating, and the compiled target whose call it belongs to."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.target: Target | None = None
        # Frames above the translated one, outermost first: (path, raw code name, line, col, end_col)
        self.prefix: list[RawFrame] = []
        self.caller: RawFrame | None = None  # the analysed file's innermost frame on the stack
        self.compile_ids: list[str] = []  # of the breaks recorded while Dynamo translated it
        self.loop_skip = ""  # before torch 2.11: Dynamo dropped the frame for a break in a loop
        # What Dynamo decided for this frame, once it checked the recompile limit.
        self.compile_id = ""
        self.recompile = False
        self.guard: Guard | None = None
        self.limit = ""
        self.limit_value = 0
        self.raises: Raises = ""
        self.dynamic = False


class Recompilations:
    """Reads each recompilation's failed check and where it sits; says once when torch hides that."""

    def __init__(self, note: Callable[[str], None]) -> None:
        self.note = note
        self.places_guards = True  # this torch says where a failed guard was installed
        self.said_unplaced = False

    def note_compilation(self, translation: Translation, compile_id: Any, decision: tuple[bool, str]) -> None:
        """Dynamo is about to compile the frame, unless a recompile limit stops it."""
        translation.compile_id = f"{compile_id.frame_id}/{compile_id.frame_compile_id}"
        exceeded, limit = decision
        if exceeded:
            # The config as this compile call has it: a per-call ``recompile_limit=`` is patched in.
            translation.limit = limit
            translation.limit_value = int(getattr(torch._dynamo.config, limit, 0))
            config = torch._dynamo.config
            # The config's name from torch 2.7; fail_on_cache_limit_hit before.
            if getattr(
                config, "fail_on_recompile_limit_hit", getattr(config, "fail_on_cache_limit_hit", False)
            ):
                translation.raises = "fail_on_recompile_limit_hit"

    def note_recompilation(self, translation: Translation, found: list[str], stacks: list[Any]) -> None:
        """Dynamo compiles the frame again: the newest version's failed check, and where it is."""
        translation.recompile = True
        if not found:
            return
        guard = resumed.in_user_words(reasons.parse(found[0]), translation.code)
        if stacks and "\nUser stack trace:" in found[0]:
            frames = list(translation.prefix) + [raw_frame(summary) for summary in stacks[0]]
            guard = replace(guard, chain=collapse(frames))
        else:
            guard = replace(guard, chain=self._commented_location(found[0], translation))
        if not guard.chain and not self.places_guards and not self.said_unplaced:
            self.said_unplaced = True
            self.note(
                f"torch {hookpoints.TORCH_RELEASE} does not say where a recompilation's guard is installed: "
                "gbls shows it on the argument it checks, or on the function"
            )
        translation.guard = guard

    def _commented_location(self, reason: str, translation: Translation) -> tuple[Frame, ...]:
        """The line a reason's comment names, in a file of the translation whose path ends as it says."""
        located = reasons.where(reason)
        target = translation.target
        if located is None or target is None:
            return ()
        ending, line, function = located
        paths = {translation.code.co_filename, target.path, *(path for path, _, _ in target.reached)}
        found = sorted(path for path in paths if path.endswith(ending))
        return (Frame(found[0], base_name(function), line),) if found else ()


def newest_metric() -> Any:
    metrics = _all_metrics()
    return metrics[-1] if metrics else None


def _all_metrics() -> list[Any]:
    get = getattr(torch._dynamo.utils, "get_compilation_metrics", None)
    return list(get()) if get is not None else []


def metrics_since(last: Any) -> list[Any]:
    """The compilation metrics Dynamo recorded after ``last`` (they are kept in a bounded deque)."""
    metrics = _all_metrics()
    for index in range(len(metrics) - 1, -1, -1):
        if metrics[index] is last:
            return metrics[index + 1 :]
    return metrics


def metric_compile_id(metric: Any) -> str:
    """``frame/recompile`` of a metric's compile id, as ``_compile_id`` spells it."""
    match = re.search(r"(\d+)/(\d+)", str(getattr(metric, "compile_id", "")))
    return f"{match.group(1)}/{match.group(2)}" if match else ""


def current_compile_id() -> str:
    """``frame/recompile`` of the current compile, without the restart attempt."""
    trace_id = torch._guards.CompileContext.current_trace_id()
    if trace_id is None:
        return ""
    compile_id = trace_id.compile_id
    return f"{compile_id.frame_id}/{compile_id.frame_compile_id}"


def takes_symbolic_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether a graph's inputs have symbolic sizes or are symbolic numbers (dynamic shapes)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, (torch.SymInt, torch.SymFloat)):
            return True
        if isinstance(value, torch.Tensor) and any(isinstance(size, torch.SymInt) for size in value.shape):
            return True
    return False


def graph_lines(gm: torch.fx.GraphModule, code: types.CodeType) -> list[int]:
    marker = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
    lines = []
    for node in gm.graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        for path, line, name in marker.findall(trace):
            if path == code.co_filename and name == code.co_name:
                lines.append(int(line))
                break
    return lines
