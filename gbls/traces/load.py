"""A real run's trace or log, read into one result per process, as an analysis of the run would make.

What can be imported: a ``TORCH_TRACE`` folder (one file per process: per rank under
``torchrun``), one trace file, or a saved ``TORCH_LOGS=graph_breaks,recompiles`` log (every rank
of a ``torchrun`` in one, its lines prefixed ``[rank3]:``). Each process's compilations become the
events an analysis emits (``translate``) and are folded by the same ``merge`` into the same
``Result``. What could not be read is said in ``problems``; what was read is kept.
"""

from __future__ import annotations

import datetime
import glob
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

from ..engine.sources import TextOf
from ..worker.shared.merge import merge
from ..worker.shared.protocol import Request, Result
from ..worker.shared.workspace import in_workspace
from . import logs, records
from .breaks import parse as parse_break
from .compilations import Compilation, compilations, torch_dirs, user_file
from .records import TraceFile, interned
from .translate import Translator

RANK_IN_NAME = re.compile(r"rank_(\d+)_")
NO_COLUMNS_BEFORE = (2, 13)  # torch gives a guard's instruction from 2.13 on


@dataclass(frozen=True)
class Process:
    """One process of the run: a trace file, or one rank's lines of a log."""

    path: str
    rank: int | None
    result: Result
    compile_ids: tuple[str, ...]


@dataclass
class Imported:
    """A trace or log as given, read."""

    source: str  # the path given
    date: str = ""  # when the run last wrote it
    torch: str = ""
    processes: list[Process] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what could not be read
    notes: list[str] = field(default_factory=list)  # how it was read

    @property
    def ranks(self) -> list[int]:
        return sorted({p.rank for p in self.processes if p.rank is not None})


def files_of(source: str) -> list[str]:
    """The files a source names: a folder's regular files (a TORCH_TRACE folder), or the file."""
    if os.path.isdir(source):
        return sorted(path for path in glob.glob(os.path.join(source, "*")) if os.path.isfile(path))
    return [source]


def load(source: str, workspace: list[str], text_of: TextOf) -> Imported:
    """Read ``source`` (a trace folder, a trace file or a log) against the workspace's sources."""
    imported = Imported(os.path.abspath(source))
    if not os.path.exists(source):
        imported.problems.append(f"{source}: no such file or folder")
        return imported
    paths = files_of(source)
    if not paths:
        imported.problems.append(f"{source}: the folder holds no trace file")
    written = [os.path.getmtime(path) for path in paths]
    if written:
        imported.date = datetime.datetime.fromtimestamp(max(written)).strftime("%Y-%m-%d %H:%M")
    relocate = Relocation(workspace)
    for path in paths:
        first = _first_line(path)
        if first is None:
            imported.problems.append(f"{path}: cannot be read (not a regular file)")
        elif records.is_trace_line(first):
            with open(path, encoding="utf-8", errors="replace") as handle:  # streamed: it can be huge
                trace = records.read(path, handle)
            imported.problems += [f"{path}: {problem}" for problem in trace.problems]
            imported.torch = imported.torch or _torch_version(trace)
            ranks = {r.rank for r in trace.records if r.rank is not None}
            named = RANK_IN_NAME.search(os.path.basename(path))
            rank = min(ranks) if ranks else int(named.group(1)) if named else None
            found = compilations(trace, parse_break)
            imported.processes.append(
                _process(path, rank, trace, found, workspace, text_of, imported.torch, relocate)
            )
        elif logs.is_log(lines := _read(path)):
            for rank, found in logs.read(lines).items():
                imported.processes.append(
                    _process(path, rank, TraceFile(path), found, workspace, text_of, "", relocate)
                )
        else:
            imported.problems.append(
                f"{path}: neither a TORCH_TRACE file (glog-prefixed JSON records) nor a TORCH_LOGS log "
                "(no [__graph_breaks] or [__recompiles] line): not read"
            )
    imported.notes += relocate.said()
    # What each process's findings could not show (lines that changed since the run), said once.
    imported.notes += dict.fromkeys(note for process in imported.processes for note in process.result.notes)
    return imported


def _first_line(path: str) -> str | None:
    """The first line that is not blank, "" if none; None if ``path`` is no regular file (a pipe or
    a device could block)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open(path, encoding="utf-8", errors="replace") as handle:
            return next((line for line in handle if line.strip()), "")
    except OSError:
        return None


def _read(path: str) -> list[str]:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read().split("\n")


def _torch_version(trace: TraceFile) -> str:
    for record in trace.records:
        if record.kind == "artifact:torch_version" and record.payload:
            found = re.search(r'"pytorch_version":\s*"([^"]+)"', record.payload)
            if found:
                return found.group(1)
    return ""


def _release(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found.group(1)), int(found.group(2))) if found else None


def traced_script(
    trace: TraceFile, found: list[Compilation], workspace: list[str], relocate: Callable[[str], str]
) -> str:
    """The program's script: the workspace file of the outermost ``<module>`` frame the trace names
    (an analysis of the run takes its compile sites from there), else the first compiled file."""
    for stack in _stacks(trace, found):
        for path, name in stack:
            if name == "<module>" and in_workspace(relocate(path), workspace):
                return path
    return next((c.path for c in found if in_workspace(relocate(c.path), workspace)), "")


def _stacks(trace: TraceFile, found: list[Compilation]) -> Iterator[list[tuple[str, str]]]:
    for record in trace.records:
        value = record.value
        if record.kind == "dynamo_start" and isinstance(value, dict) and isinstance(value.get("stack"), list):
            yield [
                (interned(trace, frame.get("filename")), str(frame.get("name")))
                for frame in value["stack"]
                if isinstance(frame, dict)
            ]
    for compilation in found:
        for logged in compilation.breaks:
            yield [(frame.path, frame.name) for frame in logged.frames]


class Relocation:
    """The workspace's file for each file the run names: the same path, or, for a run made on
    another machine (``/home/u/proj/model.py`` on the cluster), the workspace file its path ends
    with (``proj/model.py``, ``model.py``), so that a trace opened on a laptop lands on its files."""

    def __init__(self, workspace: list[str]) -> None:
        self.workspace = [os.path.abspath(root) for root in workspace]
        self.moved: dict[str, str] = {}  # the run's folder → the workspace's, as found
        self.known: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        if path not in self.known:
            self.known[path] = self._find(path)
        return self.known[path]

    def _find(self, path: str) -> str:
        if not os.path.isabs(path) or in_workspace(path, self.workspace) or os.path.exists(path):
            return path
        folder = os.path.dirname(path)
        if folder in self.moved:
            return os.path.join(self.moved[folder], os.path.basename(path))
        parts = path.split(os.sep)[1:]
        for start in range(len(parts) - 1):
            for root in self.workspace:
                candidate = os.path.join(root, *parts[start:])
                if os.path.isfile(candidate):
                    self.moved[folder] = os.path.dirname(candidate)
                    return candidate
        return path

    def said(self) -> list[str]:
        return [f"the run's {old} is read as {new}" for old, new in sorted(self.moved.items())]


def _process(
    path: str,
    rank: int | None,
    trace: TraceFile,
    found: list[Compilation],
    workspace: list[str],
    text_of: TextOf,
    torch: str,
    relocate: Relocation,
) -> Process:
    entry = relocate(traced_script(trace, found, workspace, relocate))
    named = [*trace.strings.values(), *(f.path for c in found for b in c.breaks for f in b.frames)]
    mine = user_file(torch_dirs(named))
    release = _release(torch)
    translator = Translator(
        text_of,
        workspace,
        entry,
        mine,
        # A log does not say its torch (2.12's reads as 2.13's): its guards are placed as the newest
        # torch places them, on the operation that reads what they check.
        guard_positions=release is None or release >= NO_COLUMNS_BEFORE,
        relocate=relocate,
    )
    events = translator.translate(found)
    merged = merge(events, Request(id="", path=entry, source="", workspace=workspace[0] if workspace else ""))
    result = replace(merged, torch=torch, notes=tuple(translator.notes()))
    return Process(path, rank, result, tuple(c.compile_id for c in found))
