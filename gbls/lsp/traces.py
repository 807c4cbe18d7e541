"""Real runs' traces in the editor: the ones ``gbls.traces`` names (globs relative to each workspace
folder), and any the user imports with the command, read onto the workspace's source.

Reading a trace never runs anything: it is the run's own record, placed on the files as they read
now (an open document's text, else the file on disk). What the import could not read or place is
said in its summary.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pygls import uris

from ..engine import views
from ..engine.model import FileView
from ..engine.sources import TextOf
from ..traces.load import Imported, load
from ..traces.report import reports
from .snapshot import Snapshot

if TYPE_CHECKING:
    from .features import GblsServer

log = logging.getLogger(__name__)


class Traces:
    """The traces the settings name, and those imported by command, shown with the rest."""

    def __init__(self, ls: GblsServer) -> None:
        self._ls = ls
        self._commanded: set[str] = set()  # the traces imported by command, not by the settings

    async def import_named(self) -> None:
        """Read the traces ``gbls.traces`` names; forget the ones it no longer names."""
        ls = self._ls
        wanted = named(ls.settings.traces, ls.session.folders) if ls.settings.enable else []
        for name in ls.session.imports():
            if name not in wanted and name not in self._commanded:
                ls.publishing.publish_files(ls.session.forget_import(name))
        for path in wanted:
            await self.import_trace(path)

    async def import_trace(self, path: str, commanded: bool = False) -> str:
        """Read the trace or log at ``path``, show what it says, and say how the reading went."""
        ls = self._ls
        if commanded:
            self._commanded.add(path)
        try:
            found = await asyncio.to_thread(read, path, ls.session.folders, ls.documents.text_of)
        except Exception as error:  # a bug in gbls: said, and the other traces are still read
            log.exception("gbls failed to import %s", path)
            ls.notes.say_once(f"could not import {path} ({type(error).__name__}: {error})")
            return f"gbls could not import {path}: {error}"
        previous = ls.session.record_import(path, found.views)
        ls.publishing.publish_files({**previous, **found.views})
        ls.notes.log(f"gbls: {found.summary}")
        for problem in found.trace.problems:
            ls.notes.say_once(problem)
        return found.summary

    def changed(self, snapshot: Snapshot) -> None:
        """The document changed: what a trace says of it shows only while its lines read as the run's."""
        if self._ls.session.imported_in(snapshot.path):
            self._ls.publishing.publish(snapshot.uri)


@dataclass(frozen=True)
class Import:
    """One trace, read: what it says of each workspace file, and how the reading went."""

    trace: Imported
    views: dict[str, FileView]

    @property
    def summary(self) -> str:
        """``imported trace runs/t0 (2026-12-02 01:09, 2 ranks): 3 breaks, 1 recompilation in 2 files``"""
        breaks = sum(len(view.breaks) for view in self.views.values())
        recompiles = sum(len(view.problems) for view in self.views.values())
        ranks = len(self.trace.ranks)
        facts = [fact for fact in (self.trace.date, f"{ranks} ranks" if ranks > 1 else "") if fact]
        text = f"imported trace {self.trace.source}" + (f" ({', '.join(facts)})" if facts else "")
        text += f": {breaks} break{'s' * (breaks != 1)}, {recompiles} recompilation problem"
        text += f"{'s' * (recompiles != 1)} in {len(self.views)} file{'s' * (len(self.views) != 1)}"
        return "; ".join([text, *self.trace.problems, *self.trace.notes])


def named(patterns: tuple[str, ...], folders: list[str]) -> list[str]:
    """The traces ``patterns`` name: each path or glob against each workspace folder (an absolute
    one as it is), the ones that exist, in order."""
    found: list[str] = []
    for pattern in patterns:
        expanded = os.path.expanduser(pattern)
        bases = [""] if os.path.isabs(expanded) else folders
        for base in bases:
            found += sorted(glob.glob(os.path.join(base, expanded), recursive=True))
    return list(dict.fromkeys(os.path.abspath(path) for path in found))


def path_of(argument: str, folders: list[str]) -> str:
    """The command's argument as a path: a file URI, an absolute path, or one relative to the first
    workspace folder."""
    path = (uris.to_fs_path(argument) or argument) if argument.startswith("file:") else argument
    path = os.path.expanduser(path)
    if not os.path.isabs(path) and folders:
        path = os.path.join(folders[0], path)
    return os.path.abspath(path)


def read(path: str, folders: list[str], text_of: TextOf) -> Import:
    """The trace or log at ``path``, placed on the workspace's files."""
    trace = load(path, folders, text_of)
    found: dict[str, list[FileView]] = {}
    for view in reports(trace, text_of, folders):
        found.setdefault(view.path, []).append(view)
    return Import(trace, {file: views.combined(seen) for file, seen in found.items()})
