"""Analyse one file: find its compiled sites, run the worker, and build the report."""

from __future__ import annotations

import asyncio
import os

from .discovery import CompiledSite, find_compiled
from .report import FileReport, SourceOf, build, read_source
from .settings import Settings
from .worker.protocol import Request, StaticTarget
from .workerclient import Worker


def static_targets(sites: tuple[CompiledSite, ...]) -> tuple[StaticTarget, ...]:
    return tuple(
        StaticTarget(s.name, s.qualname, s.kind, s.line, s.first_line, s.in_main_block) for s in sites
    )


async def analyse(
    worker: Worker,
    path: str,
    source: str,
    settings: Settings,
    workspace: str = "",
    source_of: SourceOf = read_source,
    reuse: tuple[str, ...] = (),
) -> FileReport:
    """``reuse``: compiled functions whose last results still hold (see ``incremental``)."""
    path = os.path.abspath(path)
    # jedi is CPU-bound: keep it off the event loop so that hovers stay instant.
    sites = await asyncio.to_thread(find_compiled, source, path, settings.interpreter or None)
    request = Request(
        id=worker.new_id(),
        path=path,
        source=source,
        settings=settings.for_worker(),
        targets=static_targets(sites),
        workspace=workspace or os.path.dirname(path),
        reuse=reuse,
    )
    result = await worker.analyse(request)
    return build(path, source, result, sites, source_of)
