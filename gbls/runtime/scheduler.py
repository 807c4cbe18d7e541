"""When analyses run: at most one per analysis, a newer request replacing (and stopping) an older one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

Key = TypeVar("Key", bound=Hashable)


class Scheduler(Generic[Key]):
    def __init__(self, run: Callable[[Key], Awaitable[None]]) -> None:
        self._run = run
        self._tasks: dict[Key, asyncio.Task[None]] = {}

    def schedule(self, key: Key, delay: float = 0.0) -> asyncio.Task[None]:
        """Run the analysis ``key`` after ``delay`` seconds, cancelling whatever was pending or running
        for it.

        Cancelling a running analysis cancels its worker request, which kills the stale run.
        """
        self.cancel(key)
        task = asyncio.create_task(self._after(delay, key))
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._forget(key, done))
        return task

    def pending(self, key: Key) -> bool:
        """Whether the analysis ``key`` waits or runs."""
        return key in self._tasks

    def cancel(self, key: Key) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        for key in list(self._tasks):
            self.cancel(key)

    async def _after(self, delay: float, key: Key) -> None:
        if delay > 0:
            await asyncio.sleep(delay)
        await self._run(key)

    def _forget(self, key: Key, task: asyncio.Task[None]) -> None:
        if self._tasks.get(key) is task:
            del self._tasks[key]
