"""What the capture replaced in torch, and how to put it back.

The analysis's child never puts anything back (it ends after its analysis), but the pytest plugin
(``gbls.testing``) captures in the project's own test process, which goes on with the real torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# How to undo each replacement and registration, in the order they were made.
_undo: list[Callable[[], None]] = []
_ABSENT = object()  # the owner had no attribute of its own by that name: it inherited one


def replace(owner: Any, name: str, value: Any) -> None:
    """Set ``owner.name`` to ``value``; ``restore`` puts back what was there."""
    own = vars(owner).get(name, _ABSENT)
    _undo.append(lambda: delattr(owner, name) if own is _ABSENT else setattr(owner, name, own))
    setattr(owner, name, value)


def on_restore(undo: Callable[[], None]) -> None:
    """Have ``restore`` call ``undo`` (a registration's removal)."""
    _undo.append(undo)


def restore() -> None:
    """Undo every replacement and registration, the last first."""
    while _undo:
        _undo.pop()()
