"""What reaches a file the editor opens, run in the background: the runs its folder configures, else
the workspace files that import it and compile something, else the project's tests that use it
(``engine.reach`` finds them, for ``gbls check`` too). Each is an analysis of its own, keyed
``RunKey`` or ``DocumentKey``; a file none reached says why (``engine.reach.unreached``)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from lsprotocol import types as lsp
from pygls import uris

from ..engine import reach, runs
from ..runtime.session import AnalysisKey, DocumentKey, RunKey
from ..worker.shared.protocol import Run
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer

log = logging.getLogger(__name__)


class Reaching:
    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls
        self.runs: dict[str, Run] = {}  # the configured runs and the tests' runs, by name, as last read
        self._configured: dict[str, str] = {}  # of those, the configured ones: the folder of each
        # A file that compiles nothing: the analyses of the files that import it.
        self._importers: dict[str, list[DocumentKey]] = {}
        self._looking: set[str] = set()  # the files whose importers and tests are being looked for

    def reach(self, snapshot: Snapshot) -> None:
        """Analyse in the background what reaches the file: the configured runs that have not run yet,
        else the workspace files that import it and compile something."""
        found = runs.configured(snapshot.folder, snapshot.path)
        for problem in found.problems:
            self._ls.notes.say_once(problem)
        if not found.runs:
            self._ls.in_background(self.by_importers(snapshot))
            return
        for run in found.runs:
            self._configured[run.name] = snapshot.folder
            self._start(run)

    def reconfigured(self, folder: str) -> None:
        """The folder's runs were edited (its pyproject.toml or .vscode/launch.json changed on disk): a
        run it no longer configures as it was goes, with what it showed; every open document of the
        folder is asked for again, so that a script a run now starts shows that run's result at once,
        and one no run starts any more is analysed itself."""
        ls = self._ls
        for name, where in list(self._configured.items()):
            run = self.runs.get(name)
            if where != folder or run is None:
                continue
            if run not in runs.configured(folder, runs.entry_of(run)).runs:
                del self._configured[name], self.runs[name]
                ls.analyses.forget(RunKey(name))
        for uri in ls.notebooks.documents():
            snapshot = ls.documents.snapshot(uri)
            if snapshot.folder == folder:
                ls.analyses.request(snapshot)

    def forget(self) -> None:
        """gbls is turned off: the runs go, with what they showed."""
        for name in list(self.runs):
            self._ls.analyses.forget(RunKey(name))
        self.runs.clear()

    async def by_importers(self, snapshot: Snapshot) -> None:
        """The analyses of the workspace files that import the file (each shown from the persistent
        cache at once, where it has them), else of the project's tests that use it."""
        ls, path = self._ls, snapshot.path
        self._looking.add(path)  # till then, "nothing compiles this file" is not known
        try:
            importing = await asyncio.to_thread(
                reach.importers, [path], snapshot.folder, ls.documents.text_of
            )
            found = importing[path]
            self._importers[path] = [
                DocumentKey(uris.from_fs_path(importer) or importer) for importer in found
            ]
            for key in self._importers[path]:
                if ls.session.analysed_of(key) is None:
                    ls.analyses.show_stored(key)  # a new window: shown at once
                    ls.analyses.scheduler.schedule(key)
            reached = bool(found) or await self._by_tests(snapshot)
        finally:
            self._looking.discard(path)
        now = None if reached else ls.documents.snapshot(snapshot.uri)
        if now is not None and now.document is not None:
            ls.status.show(now, "done")

    async def _by_tests(self, snapshot: Snapshot) -> bool:
        text_of = self._ls.documents.text_of
        run = await asyncio.to_thread(reach.tests_run, snapshot.path, snapshot.folder, text_of)
        if run is not None:
            self._start(run)
        return run is not None

    def _start(self, run: Run) -> None:  # in the background, unless it ran and has not changed
        known, self.runs[run.name] = self.runs.get(run.name), run
        if known != run or self._ls.session.analysed_of(RunKey(run.name)) is None:
            self._ls.analyses.scheduler.schedule(RunKey(run.name))

    def reaching(self, path: str) -> list[AnalysisKey]:
        """The analyses that may reach the file: its importers', the configured runs'."""
        return [*self._importers.get(path, []), *(RunKey(name) for name in self.runs)]

    def reached_by(self, key: AnalysisKey) -> list[str]:
        """The files looked for whose reaching analyses include ``key``."""
        return [path for path in self._importers if key in self.reaching(path)]

    def still_looking(self, path: str) -> bool:
        """Whether what reaches the file is still being looked for, or an analysis that may reach it
        has yet to give its first result."""
        done = {key for key, _ in self._ls.session.results()}
        return path in self._looking or any(key not in done for key in self.reaching(path))

    def why(self, path: str) -> str:
        """Why no analysis ran compiled code of the file: the importer or configured run that would
        have stopped first, or nothing compiles it."""
        reaching = set(self.reaching(path))
        analyses = [analysed.report for key, analysed in self._ls.session.results() if key in reaching]
        return reach.unreached(path, analyses, self._ls.session.folder_of(path))

    async def watch(self) -> None:
        """Ask the client to say when a folder's runs change on disk (``pyproject.toml``,
        ``.vscode/launch.json``): an edit of them re-analyses what they start, with no restart."""
        if not self._ls.capabilities.watches_files:
            return
        watchers = [
            lsp.FileSystemWatcher(glob_pattern=f"**/{name}")
            for name in (runs.PYPROJECT, ".vscode/launch.json")
        ]
        registration = lsp.Registration(
            id="gbls-runs",
            method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=lsp.DidChangeWatchedFilesRegistrationOptions(watchers=watchers),
        )
        try:
            await self._ls.client_register_capability_async(
                lsp.RegistrationParams(registrations=[registration])
            )
        except Exception as error:  # a client that refuses: runs are read again when a file is opened
            log.warning("the client did not watch the runs' files: %s", error)
