"""A finished analysis, as an event the server's features listen to (esbonio's ``EventSource``):
the analyses say what finished, and each feature does its part (publishing, the fixes' proofs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..runtime.session import Analysed, AnalysisKey
from .snapshot import Snapshot


@dataclass(frozen=True)
class Finished:
    """The analysis ``key`` has a new result, ``analysed``, which replaced ``previous``. ``snapshot``:
    the document the worker just analysed, as resolved when its analysis started (None for a run's
    result, and for one reused or read from the cache)."""

    key: AnalysisKey
    previous: Analysed | None
    analysed: Analysed
    snapshot: Snapshot | None = None


Listener = Callable[[Finished], None]


class Events:
    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        """``listener`` hears each finished analysis, after those that listened before it."""
        self._listeners.append(listener)

    def finished(self, event: Finished) -> None:
        for listener in self._listeners:
            listener(event)

    def heard(
        self, snapshot: Snapshot | None, key: AnalysisKey, previous: Analysed | None, analysed: Analysed
    ) -> None:
        """The session kept the new result of the analysis of ``snapshot`` (a document's; None: a run's)."""
        self.finished(Finished(key, previous, analysed, snapshot))
