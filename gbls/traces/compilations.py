"""A trace's records grouped by compilation: each compile id's code, breaks, metrics, recompile
reasons and graphs, as the run recorded them; and which of the files its stacks name are the
run's own code (not torch's, not the standard library's).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..worker.shared.workspace import INSTALLED, installed
from .breaks import LoggedBreak
from .records import Record, TraceFile, interned

STDLIB = re.compile(r"/lib/python3\.\d+/")
# Why Dynamo refused a compilation: "… exceeding the recompile_limit cache size limit (currently set to 8)"
CONFIGURED = re.compile(r'"((?:recompile|cache_size)_limit)": (\d+)')
LIMIT = re.compile(r"exceeding the (\w+_limit)\b.*?\((?:currently set to )?(\d+)\)", re.S)


@dataclass
class Compilation:
    """One translation of one frame (a compile id), as the trace recorded it."""

    compile_id: str
    path: str = ""
    name: str = ""  # the code's name; a resume function's as torch names it
    line: int = 0  # the code's first line
    breaks: list[LoggedBreak] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)  # why each compiled version refused the call
    graphs: int = 0
    limit: tuple[str, int] | None = None  # the recompile limit that refused it, and its value
    started: bool = False  # Dynamo started translating it (``dynamo_start``)

    @property
    def recompile(self) -> bool:
        """Dynamo compiled this code before: every compiled version refused the call."""
        return not self.compile_id.endswith("/0")

    @property
    def frame_id(self) -> str:
        """Dynamo numbers the codes it translates: one frame id, one code."""
        return self.compile_id.split("/")[0]

    @property
    def recorded(self) -> bool:
        """Dynamo's own record of the frame (its compilation metrics) is here: a log has none."""
        return bool(self.metrics)


def user_file(torch_dirs: set[str]) -> Callable[[str], bool]:
    """The files of the run's user code: not torch's, not the standard library's, not ``<string>``."""

    def mine(path: str) -> bool:
        if not path or path.startswith("<") or path.startswith(tuple(torch_dirs)):
            return False
        return not (STDLIB.search(path) and not installed(path))

    return mine


def torch_dirs(paths: Iterable[str]) -> set[str]:
    """Where the run's torch is: each folder ``torch`` of an installed package, or the one whose
    ``_dynamo`` wrote the trace."""
    found = set()
    for path in paths:
        for marker in (
            f"{os.sep}torch{os.sep}_dynamo{os.sep}",
            *(f"{os.sep}{part}{os.sep}torch{os.sep}" for part in INSTALLED),
        ):
            index = path.find(marker)
            if index >= 0:
                found.add(path[: index + marker.index(f"torch{os.sep}") + len(f"torch{os.sep}")])
    return found


def compilations(trace: TraceFile, parse_break: Callable[[str], LoggedBreak | None]) -> list[Compilation]:
    """Each compile id's records, in the order the run made them."""
    found: dict[str, Compilation] = {}
    for record in trace.records:
        compile_id = record.compile_id
        if not compile_id:
            continue
        entry = found.setdefault(compile_id, Compilation(compile_id))
        value = record.value
        if record.kind == "dynamo_start" and isinstance(value, dict):
            entry.started = True
            stack = value.get("stack")
            last = stack[-1] if isinstance(stack, list) and stack and isinstance(stack[-1], dict) else {}
            entry.path = interned(trace, last.get("filename"))
            entry.name = str(last.get("name") or "")
            line = last.get("line")
            entry.line = line if isinstance(line, int) else 0
        elif record.kind == "compilation_metrics" and isinstance(value, dict):
            entry.metrics = value
            limit = LIMIT.search(str(value.get("fail_reason") or ""))
            entry.limit = (limit.group(1), int(limit.group(2))) if limit else None
            entry.path = entry.path or str(value.get("co_filename") or "")
            entry.name = entry.name or str(value.get("co_name") or "")
            first = value.get("co_firstlineno")
            entry.line = entry.line or (first if isinstance(first, int) else 0)
        elif record.kind == "artifact:dynamo_graph_break_reason" and record.payload is not None:
            logged = parse_break(record.payload)
            if logged is not None:
                entry.breaks.append(logged)
        elif record.kind == "artifact:recompile_reasons" and record.payload is not None:
            entry.reasons = _reasons(record)
        elif record.kind == "dynamo_output_graph":
            entry.graphs += 1
    # A compilation a recompile limit refused: torch 2.7+ records why; 2.6 only its reasons, with
    # no translation started. The limit is the run's config (each compilation's record holds it).
    configured = _configured_limit(found.values())
    for entry in found.values():
        if entry.limit is None and entry.reasons and not entry.started and not entry.recorded:
            entry.limit = configured
    # A compilation a recompile limit refused has no record of its code: its frame's code is it.
    codes = {
        c.compile_id.split("/")[0]: (c.path, c.name, c.line) for c in found.values() if c.path and c.name
    }
    for entry in found.values():
        if not (entry.path and entry.name) and entry.compile_id.split("/")[0] in codes:
            entry.path, entry.name, entry.line = codes[entry.compile_id.split("/")[0]]
    return list(found.values())


def _configured_limit(found: Iterable[Compilation]) -> tuple[str, int] | None:
    """The recompile limit the run was configured with (``recompile_limit``; ``cache_size_limit``
    before torch 2.7), from the Dynamo config each compilation's record holds."""
    for compilation in found:
        config = CONFIGURED.search(str(compilation.metrics.get("dynamo_config") or ""))
        if config is not None:
            return config.group(1), int(config.group(2))
    return None


def _reasons(record: Record) -> list[str]:
    """A recompile_reasons payload: a JSON list of reasons (one reason is written bare)."""
    text = record.payload or ""
    try:
        value = json.loads(text)
    except ValueError:
        return [text.strip()] if text.strip() else []
    return [str(item) for item in value] if isinstance(value, list) else [str(value)]
