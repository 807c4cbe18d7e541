"""LSP's work-done progress for an analysis: begun where the client shows progress, cancellable
from there. ``Watching`` is how the editor watches the worker analyse (the session's ``Watch``)."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ..engine.model import FileReport, failure_report
from ..runtime.errors import WorkerError
from ..runtime.session import Analysed, Analysis, RunKey, internal_failure

if TYPE_CHECKING:
    from .features import GblsServer


async def progress_begin(server: GblsServer, name: str, cancel: Callable[[], None]) -> str | None:
    """Show ``analysing NAME`` in the client; its token, or None where the client shows no progress.
    Cancelling it in the client calls ``cancel``."""
    if not server.capabilities.progress:
        return None
    token = f"gbls-{uuid.uuid4()}"
    try:
        # Shielded: the analysis may be replaced (an edit) before the client answers, and pygls
        # cannot complete a cancelled request: it would log the client's answer as an error.
        await asyncio.shield(server.work_done_progress.create_async(token))
    except Exception:
        return None
    server.work_done_progress.begin(
        token, lsp.WorkDoneProgressBegin(title="gbls", message=f"analysing {name}", cancellable=True)
    )
    cancelled = server.work_done_progress.tokens.get(token)
    if cancelled is not None:
        cancelled.add_done_callback(lambda future: cancel() if future.cancelled() else None)
    return token


def progress_end(server: GblsServer, token: str | None) -> None:
    if token is not None:
        server.work_done_progress.end(token, lsp.WorkDoneProgressEnd())
        server.work_done_progress.tokens.pop(token, None)


class Watching:
    """An analysis the worker runs, as the editor watches it: its progress shown meanwhile (cancelling
    it cancels the analysis), the statuses of the files it reaches (``Status.starting``), and the
    failure it ended in as its report (the worker's; or gbls's own, logged with its traceback)."""

    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls

    async def started(self, analysis: Analysis, previous: Analysed | None) -> str | None:
        ls, key = self._ls, analysis.key
        title = f"run {key.name}" if isinstance(key, RunKey) else os.path.basename(analysis.path)
        token = await progress_begin(ls, title, lambda: ls.analyses.scheduler.cancel(key))
        ls.status.starting(analysis, previous)
        return token

    def ended(self, analysis: Analysis, started: object, outcome: FileReport | BaseException) -> FileReport:
        progress_end(self._ls, started if isinstance(started, str) else None)
        if isinstance(outcome, WorkerError):
            return failure_report(analysis.path, "worker", str(outcome))
        if isinstance(outcome, Exception):  # a bug in gbls: say so, with the traceback in the log
            return internal_failure(analysis.path, outcome)
        if isinstance(outcome, BaseException):  # cancelled: a newer analysis replaces it
            raise outcome
        return outcome
