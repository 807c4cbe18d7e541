"""LSP's work-done progress for an analysis: begun where the client shows progress, cancellable
from there."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

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
