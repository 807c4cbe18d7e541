"""Torch's decisions about the sizes of a compiled function's inputs, as it makes them.

- A size made dynamic: automatic dynamic shapes saw it change between calls (``pgo``'s frame state
  of the input goes from a size to "dynamic"), so the next compilation takes it as a symbol.
- A size specialized to a constant: the code needed its value (``range(n)``, ``int(n)``,
  ``if n == 4``: the shape environment replaces the symbol by the number, with the user's stack),
  or torch specializes it for being 0 or 1 (a size meant to be dynamic that is 0 or 1 on this call
  is no symbol at all).

Each decision is an event of the translation it happens in, its input named as the source names it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from ..shared.events import Event, ShapeEvent
from ..shared.frames import RawFrame
from ..shared.protocol import ShapeDecision, ShapeReason
from . import resumed
from .compilations import Translation, current_compile_id
from .frames import collapse, raw_frame

SCOPED = re.compile(r"\b[LG]\['([^'\]]+)'\]")  # L['x'] (a local), G['N'] (a global)
ATTRIBUTES = re.compile(r"\._(?:modules|parameters|buffers)\['([^'\]]+)'\]")  # nn.Module's own dicts
SIZE = re.compile(r"^(.*)\.size\(\)\[(\d+)\]$")


def subject_of(source: str) -> tuple[str, int | None] | None:
    """``L['x'].size()[0]`` → ``("x", 0)``; ``L['n']`` → ``("n", None)``; None for what is no input
    (a stride, an offset, a size torch made up)."""
    text = ATTRIBUTES.sub(r".\1", SCOPED.sub(r"\1", source))
    size = SIZE.match(text)
    if size:
        return size.group(1), int(size.group(2))
    if re.fullmatch(r"[A-Za-z_][\w.]*", text):
        return text, None
    return None


def source_name(source: Any) -> str:
    """A torch source's name: a property from 2.10, a method before."""
    name = getattr(source, "name", "")
    return str(name() if callable(name) else name)


class Shapes:
    """Emits each decision about an input's size in the translation under way."""

    def __init__(self, emit: Callable[[Event], None], current: Callable[[], Translation | None]) -> None:
        self.emit = emit
        self.current = current
        # Each input's frame state as last seen (kept alive, so that its id stays its own).
        self.seen: dict[int, tuple[Any, Any, Any]] = {}

    def automatic_dynamic(self, name: str, entry: Any, merged: Any) -> None:
        """The input ``name`` had the sizes ``entry`` on this call; ``merged``: what torch keeps of its
        sizes from now on. A size that was a number and is no longer one was made dynamic."""
        before = self.seen.get(id(merged))
        self.seen[id(merged)] = (merged, merged.size, merged.scalar)
        found = subject_of(name)
        if before is None or found is None:
            return
        _, size, scalar = before
        subject = found[0]
        if isinstance(size, tuple) and isinstance(merged.size, tuple) and len(size) == len(merged.size):
            for dim, (old, new) in enumerate(zip(size, merged.size, strict=True)):
                if isinstance(old, int) and not isinstance(new, int):
                    now = entry.size[dim] if isinstance(entry.size, tuple) else "?"
                    self.decided("dynamic", subject, dim, f"{old} → {now}", "changed", len(size), [])
        elif isinstance(size, tuple) and not isinstance(merged.size, tuple):
            self.decided("dynamic", subject, None, "", "rank_changed", 0, [])
        if isinstance(scalar, int) and not isinstance(merged.scalar, int):
            self.decided("dynamic", subject, None, f"{scalar} → {entry.scalar}", "changed", 0, [])

    def specialized(self, sources: list[str], value: Any, reason: ShapeReason) -> None:
        """A size symbol became the constant ``value``: the code needed it, or (``zero_one``) it is
        0 or 1. The user's frames are where the translation is now."""
        stack = [raw_frame(summary) for summary in torch._guards.TracingContext.extract_stack()]
        for source in sources:
            found = subject_of(source)
            if found is not None:
                self.decided("specialized", found[0], found[1], str(value), reason, 0, stack)
                return

    def decided(
        self,
        decision: ShapeDecision,
        subject: str,
        dim: int | None,
        value: str,
        reason: ShapeReason,
        rank: int,
        stack: list[RawFrame],
    ) -> None:
        translation = self.current()
        if translation is None or translation.target is None:
            return
        self.emit(
            ShapeEvent(
                target=translation.target.number,
                compile_id=current_compile_id(),
                decision=decision,
                subject=resumed.named(subject, translation.code),
                dim=dim,
                value=value,
                reason=reason,
                rank=rank,
                chain=collapse(list(translation.prefix) + stack) if stack else (),
            )
        )
