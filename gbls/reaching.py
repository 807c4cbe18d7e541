"""What ``gbls check`` analyses to reach the files it is given, and why a file none reached is not
analysed: the files themselves, the workspace files that import one that compiles nothing, and the
project's tests that import one whose compiled code nothing ran (``engine.reach``,
``engine.reaching_tests``, as the editor has them)."""

from __future__ import annotations

from dataclasses import dataclass

from .engine import reach, reaching_tests
from .engine.model import FileReport
from .engine.sources import read_source
from .formats import common
from .runtime.session import Session
from .worker.shared.protocol import Run


@dataclass(frozen=True)
class Reaching:
    folder: str  # the working directory: the project
    named: list[str]  # the files given that have code (an empty file is nothing to analyse)
    importers: dict[str, list[str]]  # a named file that compiles nothing: the files that import it
    files: list[str]  # what to analyse: the named files, then their importers

    @classmethod
    def of(cls, given: list[str], folder: str) -> Reaching:
        named = [path for path in given if _has_code(path)]
        compiling_nothing = [path for path in named if not reach.compiles(path, read_source)]
        importers = reach.importers(compiling_nothing, folder, read_source)
        extra = sorted({importer for found in importers.values() for importer in found} - set(named))
        return cls(folder, named, importers, [*named, *extra])

    async def by_tests(self, session: Session, reports: list[FileReport]) -> tuple[Run, FileReport] | None:
        """The run of the project's tests that import the files whose compiled functions no analysis
        ran (or, of the named files, whose code none translated), and its report; None when there are
        none."""
        unanalysed = [
            r.path for r in reports if any(not f.analysed and f.path == r.path for f in r.functions)
        ]
        unreached = [*common.unreached(reports, self.named, lambda _: ""), *unanalysed]
        tests = reaching_tests.tests_of(unreached, self.folder, read_source) if unreached else []
        if not tests:
            return None
        run = reaching_tests.test_run(self.folder, tests)
        return run, await session.check_run(run)

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
