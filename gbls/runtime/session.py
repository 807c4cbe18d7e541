"""One engine for the CLI and the language server: the warm workers and what each analysis left.

A ``Session`` keeps every analysis's last result by its ``AnalysisKey``: a document's own (keyed by
whatever its driver names documents by: the server's URI, the CLI's path) and a project run's, one
family; per document also the cache entry that lets a comment-only edit reuse its result, and the
incremental memory that lets an edit re-translate only what it can change; and per imported trace
of a real run what it says of each file. Every analysis's findings belong to the files they are
in: ``view(path)`` is what all of them say about one file (an imported finding only while its lines
read as the run's), ``shown(path)`` that and the text it is placed in. The workers, and the settings
each file is analysed with, are ``Workers``'s.

An analysis goes through one cycle, the CLI's and the editor's alike (``Session.analysed``): what
still holds is reused (the edit cache, the persistent cache), else the worker analyses (``analyse``,
the act); the result is kept as the analysis's, then remembered for the next edit and put in the
persistent cache.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from ..engine import cache, imports, incremental, runs, views
from ..engine.discovery import CompiledSite, find_compiled
from ..engine.model import FileReport, FileView, failure_report
from ..engine.report import build
from ..engine.sources import TextOf
from ..engine.starts import start_of
from ..settings import Settings
from ..traces.report import current, lines_of
from ..worker.shared.protocol import Request, Result, Run, StaticTarget
from ..worker.shared.workspace import roots_of
from .persistent import Persistent
from .workers import Workers

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Analysed:
    version: int | None
    source: str
    report: FileReport
    cached: bool = False  # read from the persistent cache: shown until its analysis runs again
    reused: tuple[str, ...] = ()  # what its document's last analysis did not translate again
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
    reused: tuple[str, ...] = ()  # what its last analysis did not translate again

    async def translated(
        self,
        source: str,
        settings: object,
        text_of: TextOf,
        run: Callable[[tuple[str, ...]], Awaitable[FileReport]],
    ) -> FileReport:
        """Translate what the edit can have changed (``run`` given the functions to reuse); keep the
        other functions' last results."""
        memory = self.memory
        # Parsing and tokenizing every region takes a while on big files: not on the event loop.
        reuse = await asyncio.to_thread(incremental.reusable, memory, source, settings, text_of)
        report = await run(tuple(reuse))
        self.reused = tuple(reuse)
        if not reuse:
            return report
        if memory is None or report.status != "ok":  # the module failed: say exactly what a full run says
            self.reused = ()
            return await run(())
        return incremental.combine(report, memory, reuse, source, text_of)

    async def remember(
        self, source: str, settings: object, folders: list[str], text_of: TextOf, report: FileReport
    ) -> None:
        """What the next analysis of the document may reuse; worked out off the event loop."""
        if report.status != "ok":
            return

        def work() -> tuple[cache.Entry | None, incremental.Memory]:
            imported = imports.workspace_imports(report.path, folders, text_of)
            reached = {loc.path for b in report.breaks for loc in b.chain if loc.path != report.path}
            reached |= {
                r.guard_at.path for r in report.recompiles if r.guard_at and r.guard_at.path != report.path
            }
            dependencies = sorted(reached | set(imported))
            stored = cache.entry(source, settings, dependencies, text_of, report)
            return stored, incremental.remember(report, source, settings, imported, text_of)

        stored, memory = await asyncio.to_thread(work)
        if stored is not None:
            self.cache = stored
        # A reused function runs eagerly, computing every value: where the analysis elided them (a
        # model of real size) that costs what eliding saved, and a cut program would get less far.
        self.memory = memory if report.cut is None and not report.elided else None


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


class Versioned(Protocol):
    """An open document, as the editor has it: its version moves with each edit."""

    @property
    def version(self) -> int | None: ...


@dataclass(frozen=True)
class Analysis:
    """One analysis to go through the cycle: a document's text (``version``: of the open document
    ``document``, whose result is kept only while that document is still at that version), or a
    project run's (``run``; its script ``path`` as on disk)."""

    key: AnalysisKey
    path: str
    source: str
    version: int | None = None
    document: Versioned | None = None
    run: Run | None = None

    @classmethod
    def of_run(cls, run: Run, text_of: TextOf) -> Analysis:
        path = runs.entry_of(run)
        return cls(RunKey(run.name), path, (text_of(path) or "") if path else "", run=run)

    @property
    def current(self) -> bool:
        """Whether its document is still at the version analysed (a newer one is on its way if not)."""
        return self.document is None or self.document.version == self.version


@dataclass(frozen=True)
class Shown:
    """What the session shows of one file: what every analysis says of it (``view``; None if none
    reached it), the analysis of its own text (a document's), and the text the view's positions are
    in: that analysis's, else the file's text now."""

    view: FileView | None
    own: Analysed | None
    text: str
    version: int | None  # that text's version, where it is its own analysis's
    cached: bool  # its own result is the persistent cache's, its analysis not yet done


class Watch(Protocol):
    """How a front end watches the worker analyse: it hears the analysis start (with its last result,
    if any), then how it ended, and says what report that is (the report of the failure it ended in,
    where the front end shows failures as findings; raising the error otherwise)."""

    async def started(self, analysis: Analysis, previous: Analysed | None) -> object: ...

    def ended(
        self, analysis: Analysis, started: object, outcome: FileReport | BaseException
    ) -> FileReport: ...


class Unwatched:
    """The CLI's: nothing shown, every error raised."""

    async def started(self, analysis: Analysis, previous: Analysed | None) -> object:
        return None

    def ended(self, analysis: Analysis, started: object, outcome: FileReport | BaseException) -> FileReport:
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome


UNWATCHED = Unwatched()
# What a front end does once an analysis's new result is kept (it replaced the last one, if any),
# before what the next analysis reuses is worked out.
Heard = Callable[[AnalysisKey, "Analysed | None", "Analysed"], None]


def _unheard(key: AnalysisKey, previous: Analysed | None, analysed: Analysed) -> None:
    pass


async def _watched(
    watch: Watch,
    analysis: Analysis,
    previous: Analysed | None,
    translate: Callable[[], Awaitable[FileReport]],
) -> FileReport:
    """The report ``translate()`` ends in, as ``watch`` says it (a cancellation is raised)."""
    started = await watch.started(analysis, previous)
    try:
        report = await translate()
    except BaseException as error:
        return watch.ended(analysis, started, error)
    return watch.ended(analysis, started, report)


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

    def forget_memory(self, key: DocumentKey) -> None:
        """The document's next analysis translates every function again, reusing nothing."""
        document = self._documents.get(key)
        if document is not None:
            document.memory = None

    def _settings_key(self, path: str) -> tuple[object, ...]:
        settings = self.settings_for(path)
        return (settings.for_worker(), settings.worker_key())

    def moved(self, key: DocumentKey, path: str, source: str, version: int | None = None) -> Analysed | None:
        """The document's last result moved onto ``source`` (of ``version``), when the edit (comments,
        blank lines) cannot change it; None: it must be analysed."""
        document = self._document(key, path)
        report = cache.reuse(document.cache, source, self._settings_key(path), self.text_of)
        return Analysed(version, source, report, reused=document.reused) if report is not None else None

    # -- the cycle ----------------------------------------------------------------------------

    async def analysed(
        self,
        analysis: Analysis,
        reuse: bool = True,
        keep: bool = True,
        watch: Watch = UNWATCHED,
        heard: Heard = _unheard,
    ) -> Analysed | None:
        """The whole cycle of one analysis, the CLI's and the editor's: what still holds reused
        (``reuse``: the edit cache, then the persistent cache), else the worker's analysis (which
        ``watch`` watches); kept as the analysis's result (and ``heard`` of) unless its document moved on
        meanwhile (then None: nothing is kept); then what the next edit reuses remembered, and
        (``keep``) the result put in the persistent cache."""
        key, previous = analysis.key, self._results.get(analysis.key)
        found = await self._reusable(analysis) if reuse else None
        if found is not None:
            self._kept(analysis, previous, found, heard)
            return found
        report = await _watched(watch, analysis, previous, functools.partial(self._translated, analysis))
        if not analysis.current:
            return None
        document = self._documents.get(key) if isinstance(key, DocumentKey) else None
        analysed = Analysed(
            analysis.version, analysis.source, report, reused=document.reused if document else ()
        )
        if not self._kept(analysis, previous, analysed, heard):
            return self._results[key]
        try:
            if document is not None:
                settings, folders = self._settings_key(analysis.path), self.folders
                await document.remember(analysis.source, settings, folders, self.text_of, report)
            if keep:
                await self._keep(report, analysis.run)
        except Exception:
            log.exception("gbls failed to remember the analysis of %s", analysis.path)
        return analysed

    async def _reusable(self, analysis: Analysis) -> Analysed | None:
        """The edit cache's result of a document, else the persistent cache's; None if neither holds."""
        key, path, source = analysis.key, analysis.path, analysis.source
        moved = self.moved(key, path, source, analysis.version) if isinstance(key, DocumentKey) else None
        if moved is not None:
            return moved
        stored = await self.stored(path, analysis.run)
        return Analysed(analysis.version, source, stored) if stored is not None else None

    def _kept(self, analysis: Analysis, previous: Analysed | None, analysed: Analysed, heard: Heard) -> bool:
        """Keep ``analysed`` as the analysis's result and say so; where saying so fails (a bug in
        gbls), the result kept is that failure (False)."""
        self._results[analysis.key] = analysed
        try:
            heard(analysis.key, previous, analysed)
        except Exception as error:
            failed = Analysed(analysis.version, analysis.source, internal_failure(analysis.path, error))
            self._results[analysis.key] = failed
            heard(analysis.key, analysed, failed)
            return False
        return True

    async def _translated(self, analysis: Analysis) -> FileReport:
        """The worker's report of the analysis: a run's, whole; a document's, incrementally."""
        path, source, run = analysis.path, analysis.source, analysis.run
        if isinstance(analysis.key, RunKey) or run is not None:
            return await self._run(path, source, (), run)
        document = self._document(analysis.key, path)
        translate = functools.partial(self._run, path, source)
        return await document.translated(source, self._settings_key(path), self.text_of, translate)

    async def _run(
        self, path: str, source: str, reuse: tuple[str, ...], run: Run | None = None
    ) -> FileReport:
        where = run.cwd if run else path
        worker, folder = self.workers.worker_for(where), self.folder_of(where)
        settings, cwd = self.settings_for(where), "" if run else self.cwd
        return await analyse(worker, path, source, settings, folder, self.text_of, reuse, run, cwd)

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

    async def _keep(self, report: FileReport, run: Run | None = None) -> None:
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

    def shown(self, path: str) -> Shown:
        """What the session shows of the file ``path``, and in which text."""
        view = self.view(path)
        owns = [
            found
            for key, found in self.results()
            if isinstance(key, DocumentKey) and found.report.path == path
        ]
        own = owns[0] if owns else None
        cached = own is not None and own.cached
        if view is not None and own is not None:
            return Shown(view, own, own.source, own.version, cached)
        return Shown(view, own, (self.text_of(path) or "") if view is not None else "", None, cached)

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


def internal_failure(path: str, error: Exception) -> FileReport:
    """A bug in gbls, as the analysis's failure (its traceback in the log)."""
    log.error("gbls failed while analysing %s", path, exc_info=error)
    return failure_report(path, "internal", f"gbls itself failed ({type(error).__name__}: {error})")


async def report_of(session: Session, analysis: Analysis) -> FileReport:
    """The report of ``analysis`` through the session's cycle, for the CLI: none of its documents is
    open, so none moves on while it is analysed."""
    analysed = await session.analysed(analysis)
    assert analysed is not None, "only an open document moves on"
    return analysed.report
