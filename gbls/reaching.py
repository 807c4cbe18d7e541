"""What ``gbls check`` analyses to reach the files it is given, and why a file none reached is not
analysed: the files themselves, the workspace files that import one that compiles nothing, then,
for one whose compiled code its own analysis could not run, the scripts that import it (a script
that calls a library's compiled method never says "compile") and the project's tests that use it
(``engine.reach``, as the editor has them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from .engine import reach
from .engine.model import FileReport
from .engine.sources import read_source
from .formats import common
from .runtime.session import Analysis, DocumentKey, Session, report_of
from .worker.shared.protocol import Run


@dataclass(frozen=True)
class Reaching:
    folder: str  # the working directory: the project
    named: list[str]  # the files given that have code (an empty file is nothing to analyse)
    # A named file that compiles nothing, or whose compiled code its analysis could not run: the
    # files that import it and reach it (``reach.importers``).
    importers: dict[str, list[str]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # what to analyse: the named files, then importers
    # Analysed only to reach the named files: their own failures are not the check's.
    helpers: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, given: list[str], folder: str, scripts: list[str] | None = None) -> Reaching:
        """``scripts``: more files to analyse, not named (a folder's scripts that reach its compiled code)."""
        named = [path for path in given if _has_code(path)]
        compiling_nothing = [path for path in named if not reach.compiles(path, read_source)]
        importers = reach.importers(compiling_nothing, folder, read_source)
        extra = {importer for found in importers.values() for importer in found} | set(scripts or ())
        return cls(folder, named, importers, [*named, *sorted(extra - set(named))], extra - set(named))

    async def by_importers(self, session: Session, reports: list[FileReport]) -> list[FileReport]:
        """The analyses of the scripts that import the files whose compiled functions no analysis ran
        (a library method only a script calls), but those already analysed."""
        unanalysed = reach.unanalysed(reports)
        found = reach.importers(unanalysed, self.folder, read_source) if unanalysed else {}
        analysed = {r.path for r in reports}
        scripts = sorted({s for files in found.values() for s in files} - analysed - set(self.files))
        for path, files in found.items():
            self.importers[path] = sorted({*self.importers.get(path, []), *files})
        self.helpers.update(scripts)
        analyses = [Analysis(DocumentKey(path), path, read_source(path) or "") for path in scripts]
        return list(await asyncio.gather(*(report_of(session, analysis) for analysis in analyses)))

    async def by_tests(self, session: Session, reports: list[FileReport]) -> tuple[Run, FileReport] | None:
        """The run of the project's tests that use the files whose compiled functions no analysis
        ran (or, of the named files, whose code none translated), and its report; None when there are
        none."""
        unreached = [*common.not_translated(reports, self.named, lambda _: ""), *reach.unanalysed(reports)]
        tests = reach.tests_of(unreached, self.folder, read_source) if unreached else []
        if not tests:
            return None
        run = reach.test_run(self.folder, tests)
        return run, await report_of(session, Analysis.of_run(run, read_source))

    def why(self, analyses: list[FileReport], path: str) -> str:
        """Why no analysis ran compiled code of ``path``: one that would have (an importer's, a run's)
        stopped first, or nothing compiles it."""
        would = set(self.importers.get(path, []))
        tried = [found for found in analyses if found.path in would or found.origin]
        return reach.unreached(path, tried, self.folder)


def _has_code(path: str) -> bool:
    """Whether the file has code to run; one that cannot be read is analysed, to say why."""
    source = read_source(path)
    return source is None or reach.has_code(source)
