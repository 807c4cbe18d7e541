"""The warm workers and the settings each file is analysed with.

One worker per interpreter, sandbox and GPU the settings name: a workspace folder may have settings
of its own, its interpreter too; a worker no settings name any longer is stopped, and retired: an
analysis that started it knows it was replaced."""

from __future__ import annotations

import asyncio
import contextlib
import os

from ..settings import Settings
from .persistent import interpreter
from .sandbox import launch
from .workerclient import Worker, WorkerInfo


class Workers:
    def __init__(self, settings: Settings, folders: list[str]) -> None:
        self.settings = settings
        self.folders = [os.path.abspath(folder) for folder in folders]
        self._folder_settings: dict[str, Settings] = {}  # a workspace folder's own, where it has some
        self._workers: dict[tuple[str, str, bool], Worker] = {}  # by what each was started with
        self._stopping: set[asyncio.Task[None]] = set()

    def configure(self, settings: Settings, folders: dict[str, Settings] | None = None) -> None:
        """The client's new settings, and those of the workspace folders that have their own (the
        others keep ``settings``): the next analysis runs with them. A worker that no settings name
        any longer (another interpreter, sandbox or GPU) is stopped."""
        self.settings = settings
        if folders is not None:
            self._folder_settings = {os.path.abspath(folder): own for folder, own in folders.items()}
        wanted = {self.settings.worker_key(), *(own.worker_key() for own in self._folder_settings.values())}
        for key in [key for key in self._workers if key not in wanted]:
            self._stop_later(self._workers.pop(key))

    def settings_for(self, path: str) -> Settings:
        """The settings ``path`` is analysed with: its workspace folder's own, else the client's."""
        return self._folder_settings.get(self.folder_of(path), self.settings) if path else self.settings

    def folder_of(self, path: str) -> str:
        containing = [f for f in self.folders if path == f or path.startswith(f.rstrip(os.sep) + os.sep)]
        return max(containing, key=len) if containing else os.path.dirname(path)

    @property
    def worker(self) -> Worker:
        """The warm worker for the client's settings (a folder's own may name another)."""
        return self._worker_of(self.settings)

    def worker_for(self, path: str) -> Worker:
        """The warm worker that analyses ``path``: its folder's interpreter's."""
        return self._worker_of(self.settings_for(path))

    def _worker_of(self, settings: Settings) -> Worker:
        key = settings.worker_key()
        worker = self._workers.get(key)
        if worker is None:
            interpreter.cache_clear()  # a new worker: its interpreter may have changed since
            folders = self.folders or [os.getcwd()]
            worker = self._workers[key] = Worker(
                lambda: launch(settings.interpreter or None, folders, settings.sandbox, settings.gpu)
            )
        return worker

    async def warm(self) -> WorkerInfo:
        """Start the current worker, if it is not running; raises ``WorkerError`` if it cannot start."""
        return await self.worker.start()

    async def restart(self) -> None:
        for worker in list(self._workers.values()):
            worker.retired = True
            await worker.stop()
        self._workers.clear()

    async def stop(self) -> None:
        for worker in list(self._workers.values()):
            with contextlib.suppress(Exception):
                await worker.stop()
        for task in list(self._stopping):
            with contextlib.suppress(Exception):
                await task

    def _stop_later(self, worker: Worker) -> None:
        worker.retired = True
        task = asyncio.create_task(worker.stop())
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)
