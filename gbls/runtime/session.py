"""One engine for the CLI and the language server: the warm workers and what each analysis left.

A ``Session`` keeps every analysis's last result by its ``AnalysisKey``: a document's own (keyed by
whatever its driver names documents by: the server's URI, the CLI's path) and a project run's, one
family; per document also the cache entry that lets a comment-only edit reuse its result, and the
incremental memory that lets an edit re-translate only what it can change; and per imported trace
of a real run what it says of each file. Every analysis's findings belong to the files they are
in: ``view(path)`` is what all of them say about one file (an imported finding only while its lines
read as the run's). The workers, and the settings each file is analysed with, are ``Workers``'s.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ..engine import cache, imports, incremental, runs, views
from ..engine.discovery import CompiledSite, find_compiled
from ..engine.model import FileReport, FileView
from ..engine.report import build
from ..engine.sources import TextOf
from ..engine.starts import start_of
from ..settings import Settings
from ..traces.report import current, lines_of
from ..worker.shared.protocol import Request, Result, Run, StaticTarget
from ..worker.shared.workspace import roots_of
from .persistent import Persistent
from .workers import Workers


@dataclass(frozen=True)
class Analysed:
    version: int | None
    source: str
    report: FileReport
    cached: bool = False  # read from the persistent cache: shown until its analysis runs again
    # What the analysis says of each file it reached (``views.by_file``), worked out once.
    views: dict[str, FileView] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", views.by_file(self.report))


@dataclass
class Document:
    """What the session keeps about one document besides its result: what its next analysis reuses."""

    path: str
    cache: cache.Entry | None = None
    memory: incremental.Memory | None = None
    reused: list[str] = field(default_factory=list)  # what its last analysis did not translate again


def static_targets(sites: tuple[CompiledSite, ...]) -> tuple[StaticTarget, ...]:
    return tuple(
        StaticTarget(
            s.id,
            s.name,
            s.qualname,
            s.kind,
            s.line,
            s.first_line,
            s.in_main_block,
            s.end_line,
            s.scope,
            s.generic,
        )
        for s in sites
    )


@dataclass(frozen=True)
class DocumentKey:
    """A document's own analysis, by what its driver names documents by: the server's URI, the CLI's
    path."""

    name: str


@dataclass(frozen=True)
class RunKey:
    """A run of the project (configured, or the one its tests make), by its name."""

    name: str


# What an analysis is of: what the scheduler runs, and what ``Session.results`` is keyed by.
AnalysisKey = DocumentKey | RunKey


class Analyser(Protocol):
    """What analyses a request: the warm worker, or (``gbls check --in-process``) this very process."""

    def new_id(self) -> str: ...

    async def analyse(self, request: Request) -> Result: ...


async def analyse(
    worker: Analyser,
    path: str,
    source: str,
    settings: Settings,
    workspace: str,
    text_of: TextOf,
    reuse: tuple[str, ...] = (),
    run: Run | None = None,
    cwd: str = "",
) -> FileReport:
    """One full analysis of ``source``: discovery, the worker's run, the report. ``reuse``: compiled
    functions whose last results still hold (see ``incremental``), run eagerly and not translated;
    ``run``: the project run ``path`` is the script of (the text that runs is then the disk's);
    ``cwd``: the folder a file starts in, as its users start it there (the workspace if "")."""
    path = os.path.abspath(path) if path else ""
    # Discovery parses the file: off the event loop, so that hovers stay instant.
    sites = await asyncio.to_thread(find_compiled, source, path) if path else ()
    start = None
    if path and run is None:
        start = await asyncio.to_thread(start_of, path, source, cwd or workspace)
    request = Request(
        id=worker.new_id(),
        path=path,
        source=source,
        settings=settings.for_worker(),
        targets=static_targets(sites),
        workspace=workspace,
        reuse=reuse,
        run=run,
        cwd=start.cwd if start else "",
        module=start.module if start else "",
    )
    result = await worker.analyse(request)
    return build(path, source, result, sites, text_of, roots_of(request), run.name if run else "")


class Session:
    def __init__(
        self,
        settings: Settings,
        folders: list[str],
        text_of: TextOf,
        persistent: Persistent | None = None,
        cwd: str = "",
    ) -> None:
        """``persistent``: the persistent cache (``engine.store``); None: every analysis runs.
        ``cwd``: the folder files start in, as their users start them there (the CLI's working
        directory); "": each file's workspace folder, as VS Code's "Run Python File" has it."""
        self.workers = Workers(settings, folders)
        self.text_of = text_of
        self.persistent = persistent
        self.cwd = cwd
        self._results: dict[AnalysisKey, Analysed] = {}
        self._documents: dict[DocumentKey, Document] = {}
        self._imports: dict[str, dict[str, FileView]] = {}  # each trace's view of each file
        self.torch = ""  # the torch version of the cache's reports, for a check no worker ran
        self.served = 0  # the analyses it served

    @property
    def settings(self) -> Settings:
        return self.workers.settings

    @property
    def folders(self) -> list[str]:
        return self.workers.folders

    def settings_for(self, path: str) -> Settings:
        return self.workers.settings_for(path)

    def folder_of(self, path: str) -> str:
        return self.workers.folder_of(path)

    async def stop(self) -> None:
        await self.workers.stop()

    async def restart(self) -> None:
        """Fresh workers; every document's next analysis translates every function again."""
        await self.workers.restart()
        for document in self._documents.values():
            document.memory = None

    # -- every analysis's result, by its key --------------------------------------------------

    def analysed_of(self, key: AnalysisKey) -> Analysed | None:
        """The analysis's last result, if it has one."""
        return self._results.get(key)

    def record(self, key: AnalysisKey, analysed: Analysed) -> Analysed | None:
        """Keep ``analysed`` as the analysis's result; the previous one, if any."""
        previous, self._results[key] = self._results.get(key), analysed
        return previous

    def forget(self, key: AnalysisKey) -> Analysed | None:
        """The analysis goes, with what it kept for the next one."""
        if isinstance(key, DocumentKey):
            self._documents.pop(key, None)
        return self._results.pop(key, None)

    def results(self) -> Iterator[tuple[AnalysisKey, Analysed]]:
        """Every analysis's last result: documents' (their own first), then runs'."""
        found = list(self._results.items())
        yield from [(key, analysed) for key, analysed in found if isinstance(key, DocumentKey)]
        yield from [(key, analysed) for key, analysed in found if isinstance(key, RunKey)]

    def executing(self, path: str) -> list[AnalysisKey]:
        """The analyses whose results an edit of ``path`` can change: those that executed it."""
        return [
            key
            for key, analysed in self.results()
            if path == analysed.report.path or path in analysed.report.executed
        ]

    # -- documents: what an edit can reuse ------------------------------------------------------

    def _document(self, key: DocumentKey, path: str) -> Document:
        document = self._documents.get(key)
        if document is None or document.path != path:
            document = self._documents[key] = Document(path)
        return document

    def reused(self, key: DocumentKey) -> list[str]:
        """The compiled functions the document's last analysis did not translate again."""
        document = self._documents.get(key)
        return document.reused if document else []

    def forget_memory(self, key: DocumentKey) -> None:
        """The document's next analysis translates every function again, reusing nothing."""
        document = self._documents.get(key)
        if document is not None:
            document.memory = None

    def _settings_key(self, path: str) -> tuple[object, ...]:
        settings = self.settings_for(path)
        return (settings.for_worker(), settings.worker_key())

    def from_cache(self, key: DocumentKey, path: str, source: str) -> FileReport | None:
        """The last report moved onto ``source``, when the edit (comments, blank lines) cannot change it."""
        return cache.reuse(self._document(key, path).cache, source, self._settings_key(path), self.text_of)

    # -- analysing --------------------------------------------------------------------------

    async def analyse(self, key: DocumentKey, path: str, source: str) -> FileReport:
        """Translate what the edit can have changed; keep the other functions' last results."""
        document = self._document(key, path)
        memory = document.memory
        # Parsing and tokenizing every region takes a while on big files: not on the event loop.
        reuse = await asyncio.to_thread(
            incremental.reusable, memory, source, self._settings_key(path), self.text_of
        )
        report = await self._run(path, source, tuple(reuse))
        document.reused = reuse
        if not reuse:
            return report
        if memory is None or report.status != "ok":  # the module failed: say exactly what a full run says
            document.reused = []
            return await self._run(path, source, ())
        return incremental.combine(report, memory, reuse, source, self.text_of)

    async def _run(self, path: str, source: str, reuse: tuple[str, ...]) -> FileReport:
        workspace = self.folder_of(path)
        settings = self.settings_for(path)
        return await analyse(
            self.workers.worker_for(path),
            path,
            source,
            settings,
            workspace,
            self.text_of,
            reuse,
            cwd=self.cwd,
        )

    async def remember(self, key: DocumentKey, path: str, source: str, report: FileReport) -> None:
        """What the next analysis of the document may reuse; worked out off the event loop."""
        if report.status != "ok":
            return
        settings = self._settings_key(path)

        def work() -> tuple[cache.Entry | None, incremental.Memory]:
            imported = imports.workspace_imports(report.path, self.folders, self.text_of)
            reached = {loc.path for b in report.breaks for loc in b.chain if loc.path != report.path}
            reached |= {
                r.guard_at.path for r in report.recompiles if r.guard_at and r.guard_at.path != report.path
            }
            dependencies = sorted(reached | set(imported))
            stored = cache.entry(source, settings, dependencies, self.text_of, report)
            return stored, incremental.remember(report, source, settings, imported, self.text_of)

        stored, memory = await asyncio.to_thread(work)
        document = self._document(key, path)
        if stored is not None:
            document.cache = stored
        # A reused function runs eagerly, computing every value: where the analysis elided them (a
        # model of real size) that costs what eliding saved, and a cut program would get less far.
        document.memory = memory if report.cut is None and not report.elided else None

    async def check(self, path: str, source: str) -> FileReport:
        """The CLI's whole cycle for one file: reuse what still holds, analyse the rest, remember it."""
        key = DocumentKey(path)
        report = self.from_cache(key, path, source) or await self.stored(path)
        if report is None:
            report = await self.analyse(key, path, source)
            await self.remember(key, path, source, report)
            await self.keep(report)
        self.record(key, Analysed(None, source, report))
        return report

    async def check_run(self, run: Run) -> FileReport:
        """The CLI's cycle for a run: the persistent cache's report, else the run analysed, and kept."""
        report = await self.stored(runs.entry_of(run), run)
        if report is None:
            report = await self.analyse_run(run)
            await self.keep(report, run)
        return report

    async def analyse_run(self, run: Run) -> FileReport:
        """The project run ``run``, as its users start it, from the files on disk."""
        path, worker = runs.entry_of(run), self.workers.worker_for(run.cwd)
        source = (self.text_of(path) or "") if path else ""
        folder, settings = self.folder_of(run.cwd), self.settings_for(run.cwd)
        return await analyse(worker, path, source, settings, folder, self.text_of, run=run)

    # -- the persistent cache -----------------------------------------------------------------

    async def stored(self, path: str, run: Run | None = None) -> FileReport | None:
        """The persistent cache's report of the analysis of ``path`` (or of ``run``), moved onto the
        files' current texts; None if it has none that still holds."""
        if self.persistent is None:
            return None
        path = os.path.abspath(path) if path else ""
        workspace = self.folder_of(run.cwd if run else path)
        start = "" if run else self.cwd or workspace
        settings = self.settings_for(run.cwd if run else path)
        hit = await self.persistent.load(settings, path, workspace, self.text_of, run, start)
        if hit is None:
            return None
        self.served += 1
        self.torch = self.torch or hit.torch
        return hit.report

    async def keep(self, report: FileReport, run: Run | None = None) -> None:
        """Put a finished analysis in the persistent cache."""
        if self.persistent is not None:
            workspace = self.folder_of(run.cwd if run else report.path)
            start = "" if run else self.cwd or workspace
            settings = self.settings_for(run.cwd if run else report.path)
            await self.persistent.save(settings, workspace, report, self.text_of, run, start)

    # -- what every analysis and trace says, by file ------------------------------------------

    def view(self, path: str) -> FileView | None:
        """What every analysis and every imported trace says about the file ``path``; None if none
        reached it. The file's own analysis comes first: a root cause it and a trace both found is
        its, once."""
        found = [analysed.views[path] for _, analysed in self.results() if path in analysed.views]
        lines = lines_of(self.text_of)
        found += [current(seen[path], lines) for seen in self._imports.values() if path in seen]
        return views.combined(found) if found else None

    def viewed(self) -> list[str]:
        """Every file an analysis or an imported trace says something of."""
        found = [path for _, analysed in self.results() for path in analysed.views]
        found += [path for seen in self._imports.values() for path in seen]
        return [path for path in dict.fromkeys(found) if path]

    def record_import(self, name: str, found: dict[str, FileView]) -> dict[str, FileView]:
        """Keep what the trace ``name`` says of each file; what it said before (maybe nothing)."""
        previous, self._imports[name] = self._imports.get(name, {}), found
        return previous

    def forget_import(self, name: str) -> dict[str, FileView]:
        return self._imports.pop(name, {})

    def imports(self) -> list[str]:
        return list(self._imports)

    def imported_in(self, path: str) -> bool:
        """Whether a trace says something of ``path``: an edit of it can hide what it says."""
        return any(path in seen for seen in self._imports.values())
