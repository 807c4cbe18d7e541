"""When analyses run: at most one per document, a newer request replacing (and stopping) an older one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable


class Scheduler:
    def __init__(self, run: Callable[[str], Awaitable[None]]) -> None:
        self._run = run
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def schedule(self, uri: str, delay: float = 0.0) -> asyncio.Task[None]:
        """Analyse ``uri`` after ``delay`` seconds, cancelling whatever was pending or running for it.

        Cancelling a running analysis cancels its worker request, which kills the stale run.
        """
        self.cancel(uri)
        task = asyncio.create_task(self._after(delay, uri))
        self._tasks[uri] = task
        task.add_done_callback(lambda done: self._forget(uri, done))
        return task

    def pending(self, uri: str) -> bool:
        """Whether an analysis of ``uri`` waits or runs."""
        return uri in self._tasks

    def cancel(self, uri: str) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        for uri in list(self._tasks):
            self.cancel(uri)

    async def _after(self, delay: float, uri: str) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        await self._run(uri)

    def _forget(self, uri: str, task: asyncio.Task[None]) -> None:
        if self._tasks.get(uri) is task:
            del self._tasks[uri]
