"""An imported run on the source: each process's result placed as an analysis's is (``build``), its
views of each workspace file put together, every finding once, with where it came from.

A finding every process of the run recorded is the run's; one only some ranks recorded (a
branch rank 3 takes) says which. Each finding keeps the source lines it is shown on as they read
now: once a line reads otherwise, the file changed under it and it is no longer shown (``current``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

from ..engine import views
from ..engine.discovery import find_compiled
from ..engine.model import BreakReport, FileView, Provenance, RecompileReport
from ..engine.report import build
from ..engine.sources import TextOf
from ..worker.shared.lines import split_lines

if TYPE_CHECKING:  # the trace reader, imported only where a trace is read
    from .load import Imported

Lines = Callable[[str], Sequence[str]]


def origin_of(imported: Imported) -> str:
    return f"trace {_shown(imported.source)}"


def _shown(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def reports(imported: Imported, text_of: TextOf, workspace: list[str]) -> list[FileView]:
    """Each workspace file the run's findings belong to, with what the run says of it."""
    origin = origin_of(imported)
    files: dict[str, list[tuple[int | None, FileView]]] = {}
    for process in imported.processes:
        result = process.result
        source = (text_of(result.path) or "") if result.path else ""
        used = {function.site for function in result.functions}
        sites = tuple(site for site in find_compiled(source, result.path) if site.id in used)
        report = build(result.path, source, result, sites, text_of, workspace, origin)
        for path, view in views.by_file(report).items():
            files.setdefault(path, []).append((process.rank, view))
    lines = lines_of(text_of)
    return [_Marks(imported, seen, lines).view(origin) for seen in files.values()]


class _Marks:
    """One file's views from each process of the run, as one view whose findings say where from."""

    def __init__(self, imported: Imported, seen: list[tuple[int | None, FileView]], lines: Lines) -> None:
        self.imported = imported
        self.seen = seen
        self.lines = lines

    def view(self, origin: str) -> FileView:
        view = views.combined([view for _, view in self.seen])
        return dataclasses.replace(
            view,
            origin=origin,
            breaks=tuple(map(self.marked, view.breaks)),
            suppressed=tuple(map(self.marked, view.suppressed)),
            splits=tuple(map(self.marked, view.splits)),
            elsewhere=tuple(map(self.marked, view.elsewhere)),
            recompiles=tuple(map(self.marked_recompile, view.recompiles)),
        )

    def provenance(
        self, key: Hashable, compile_ids: tuple[str, ...], code: list[tuple[str, int]]
    ) -> Provenance:
        had = {rank for rank, other in self.seen if rank is not None and key in _keys(other)}
        return Provenance(
            trace=_shown(self.imported.source),
            date=self.imported.date,
            ranks=tuple(sorted(had)),
            of_ranks=len(self.imported.ranks),
            compile_ids=compile_ids,
            code=tuple((path, line, _line(self.lines(path), line)) for path, line in code),
        )

    def marked(self, brk: BreakReport) -> BreakReport:
        code = [(brk.path, brk.span.line)]
        if brk.split is not None:
            code.append((brk.split.path, brk.split.span.line))
        found = self.provenance(("break", brk.key), brk.cause.compile_ids, code)
        return dataclasses.replace(brk, provenance=found)

    def marked_recompile(self, found: RecompileReport) -> RecompileReport:
        compile_ids = tuple(recompile.compile_id for recompile in found.recompiles)
        where = [(found.path, found.span.line)]
        return dataclasses.replace(
            found, provenance=self.provenance(("recompile", found.key), compile_ids, where)
        )


def _keys(view: FileView) -> set[Hashable]:
    breaks = view.breaks + view.suppressed + view.splits + view.elsewhere
    return {("break", b.key) for b in breaks} | {("recompile", r.key) for r in view.recompiles}


def lines_of(text_of: TextOf) -> Lines:
    """Each file's lines, read once."""
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in cache:
            cache[path] = split_lines(text_of(path) or "")
        return cache[path]

    return lines


def _line(lines: Sequence[str], line: int) -> str:
    return lines[line - 1] if 0 < line <= len(lines) else ""


def holds(provenance: Provenance | None, lines: Lines) -> bool:
    """Whether the lines a finding is shown on still read as they did when it was imported."""
    return provenance is None or all(_line(lines(path), line) == text for path, line, text in provenance.code)


def current(view: FileView, lines: Lines) -> FileView:
    """``view`` without the imported findings whose lines changed since: they are of another
    version of the file, and would be shown on the wrong line."""
    kept = dataclasses.replace(
        view,
        breaks=tuple(b for b in view.breaks if holds(b.provenance, lines)),
        suppressed=tuple(b for b in view.suppressed if holds(b.provenance, lines)),
        splits=tuple(b for b in view.splits if holds(b.provenance, lines)),
        elsewhere=tuple(b for b in view.elsewhere if holds(b.provenance, lines)),
        recompiles=tuple(r for r in view.recompiles if holds(r.provenance, lines)),
    )
    # The compiled functions' summaries (their lenses count the breaks) are of the run's version
    # of the file too: once any of its findings is gone, they go with it.
    return kept if kept == view else dataclasses.replace(kept, functions=())
