"""The gbls language server's features, wired together (``server`` registers each LSP method's
handler).

The process never imports torch. Each feature is a unit with the state it keeps: ``documents`` (a
URI resolved into a ``Snapshot``), ``analyses`` (what runs when), ``reaching`` (importers, tests,
runs), ``status``, ``publishing``, ``traces``, ``fixes`` (those offered, proven in the background),
and the settings (``configuration``). A finished analysis is an event (``events``) that publishing
and the fixes listen to.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..engine import reach
from ..runtime import persistent
from ..runtime.errors import WorkerError
from ..runtime.session import Session
from ..settings import Settings
from . import inlays, notebooks, pull
from .analyses import Analyses
from .capabilities import Capabilities
from .documents import GblsProtocol
from .events import Events, Finished
from .fixes import Fixes
from .messages import Notes
from .progress import Watching
from .publishing import Publishing
from .reaching import Reaching
from .snapshot import Documents
from .status import Status
from .traces import Traces

log = logging.getLogger(__name__)


class GblsServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "gbls", __version__, protocol_cls=GblsProtocol, notebook_document_sync=notebooks.SYNC
        )
        # What the client said at start; the workspace's configuration is read on top of it each time,
        # so a key the user removes goes back to its default instead of keeping its last value.
        self.initial_settings = Settings()
        self.capabilities = Capabilities()
        self.notebooks = notebooks.Notebooks(lambda: self.workspace)
        self.documents = Documents(self)
        # Until the client says its settings and folders (``begin``): nothing is analysed before.
        self.session = Session(Settings(), [], self.documents.text_of)
        self.notes = Notes(self)
        self.events = Events()
        self.analyses = Analyses(self)
        self.watching = Watching(self)
        self.reaching = Reaching(self)
        self.status = Status(self)
        self.publishing = Publishing(self)
        self.traces = Traces(self)
        self.fixes = Fixes(self.session, self.window_log_message)
        self.pull = pull.Pulling()
        self.inlays = inlays.Asked()
        self.events.listen(self.publishing.finished)
        self.events.listen(self._finished)
        self._background: set[asyncio.Task[Any]] = set()
        self._said_sandbox_note = False

    def begin(self, settings: Settings, folders: list[str], capabilities: Capabilities) -> None:
        """The client's settings, workspace folders and capabilities, at its start: the session that
        analyses them."""
        self.initial_settings = settings
        self.capabilities = capabilities
        # The cache's notes come from the threads that read and write it: logged, not sent from there.
        store = persistent.from_environment(log.warning)
        self.session = Session(settings, folders, self.documents.text_of, store)
        self.fixes = Fixes(self.session, self.window_log_message)

    @property
    def settings(self) -> Settings:
        return self.session.settings

    def _finished(self, event: Finished) -> None:
        """Prove the fixes of a finished analysis; after a document's own analysis by the worker, warm
        a fresh worker now if it failed (not when the next edit waits for it), and where it left
        the file's compiled functions unanalysed, look for a script or test of the project that
        runs them."""
        report, snapshot = event.analysed.report, event.snapshot
        self.fixes.start(report, self.documents.text_of)
        if snapshot is None:
            return
        if report.failure_kind == "worker":
            self.in_background(self.warm())
        view = self.session.view(snapshot.path)
        if view is not None and reach.unanalysed([view]):
            self.in_background(self.reaching.by_importers(snapshot))

    def in_background(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def warm(self) -> None:
        """Start the worker for the current settings, and say how it went."""
        worker = self.session.workers.worker
        try:
            info = await self.session.workers.warm()
        except WorkerError as error:
            if worker.retired:
                return  # replaced (restart, new interpreter) while it was starting: nothing to say
            self.window_show_message(
                lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"gbls cannot analyse: {error}")
            )
            return
        ready = f"gbls worker ready: torch {info.torch}, Python {info.python} ({info.executable})"
        self.notes.log(f"{ready}, sandbox {info.sandbox}")
        if worker.note and not self._said_sandbox_note:
            self._said_sandbox_note = True
            self.notes.log(worker.note, lsp.MessageType.Warning)

    async def restart_worker(self) -> None:
        await self.session.restart()
        self.in_background(self.warm())
        for uri in self.notebooks.documents():
            self.analyses.request(self.documents.snapshot(uri), fresh=True)

    async def stop(self) -> None:
        """Stop the proofs, then the worker: a proof left running would start a new worker after the
        shutdown (and a process still being started when the event loop closes keeps the server
        from exiting)."""
        self.analyses.scheduler.cancel_all()
        await self.fixes.stop()
        await self.session.stop()
