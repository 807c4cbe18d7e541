"""The records of a ``TORCH_TRACE`` file, as torch writes them (what tlparse reads).

Each record is one line: a glog prefix (``V1202 01:09:43.968000 3655 torch/_dynamo/x.py:30]``),
then one JSON object whose first key names the record (``dynamo_start``, ``compilation_metrics``,
``artifact`` with its ``name``, ``str``…) beside the compile id it belongs to (``frame_id``,
``frame_compile_id``, ``attempt``) and, in a distributed run, its ``rank``. A record with a
payload says so (``has_payload``: the payload's MD5) and the payload follows on the next lines,
each opened by a tab. File names in stacks are interned: ``{"str": ["/path/f.py", 1]}`` defines
index 1.

Only the records an import reads are kept (a real job's trace holds megabytes of inductor output
it does not need). What cannot be read (a line that is no record, a payload that does not match
its checksum: a file cut off while torch wrote it) is said in ``problems``, and the rest is kept.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

GLOG = re.compile(r"^(?:\[rank(\d+)\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ \d+ \S+:\d+\]")
# What the import reads; every other record (chromium events, inductor's output, …) is skipped.
KEPT = {
    "str",
    "dynamo_start",
    "compilation_metrics",
    "artifact:dynamo_graph_break_reason",
    "artifact:recompile_reasons",
    "artifact:torch_version",
    "dynamo_cpp_guards_str",
    "dynamo_guards",
    "dynamo_output_graph",
}
# Keys beside the record's own: which compilation and process it belongs to.
CONTEXT = {"frame_id", "frame_compile_id", "attempt", "rank", "has_payload", "compiled_autograd_id", "stack"}
PROBLEMS_SAID = 5  # the first few unreadable lines are named; the others counted


@dataclass(frozen=True)
class Record:
    kind: str  # "dynamo_start", "compilation_metrics", "artifact:dynamo_graph_break_reason", …
    data: dict[str, Any]  # the record's JSON object
    payload: str | None
    line: int  # its line in the file, 1-based

    @property
    def value(self) -> Any:
        """The record's own part: ``data["compilation_metrics"]`` of a metrics record."""
        return self.data.get(self.kind.split(":", 1)[0])

    @property
    def compile_id(self) -> str:
        """``frame/recompile`` of the compilation it belongs to, or "" outside any."""
        frame, compile = self.data.get("frame_id"), self.data.get("frame_compile_id")
        return f"{frame}/{compile}" if isinstance(frame, int) and isinstance(compile, int) else ""

    @property
    def rank(self) -> int | None:
        rank = self.data.get("rank")
        return rank if isinstance(rank, int) and not isinstance(rank, bool) else None


@dataclass
class TraceFile:
    path: str
    records: list[Record] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unreadable: int = 0  # lines that are no record

    def unreadable_line(self, line: int, why: str) -> None:
        self.unreadable += 1
        if self.unreadable <= PROBLEMS_SAID:
            self.problems.append(f"line {line}: {why}")

    def finish(self) -> None:
        if self.unreadable > PROBLEMS_SAID:
            self.problems.append(f"{self.unreadable - PROBLEMS_SAID} more unreadable lines")


def is_trace_line(line: str) -> bool:
    """Whether ``line`` is a trace record: a glog prefix, then a JSON object."""
    prefix = GLOG.match(line)
    return prefix is not None and line[prefix.end() :].lstrip().startswith("{")


def read(path: str, lines: Iterable[str]) -> TraceFile:
    """The kept records of the trace file ``path``, whose lines (newlines kept or not) are ``lines``."""
    found = TraceFile(path)
    for number, head, payload in _entries(lines):
        prefix = GLOG.match(head)
        try:
            data = json.loads(head[prefix.end() :]) if prefix else None
        except ValueError:
            data = None
        if not isinstance(data, dict) or not data:
            found.unreadable_line(number, "not a trace record (a glog prefix and a JSON object)")
            continue
        kind = next((key for key in data if key not in CONTEXT), "")
        if kind == "artifact" and isinstance(data["artifact"], dict):
            kind = f"artifact:{data['artifact'].get('name')}"
        if kind not in KEPT:
            continue
        text = "\n".join(payload) if payload is not None else None
        checksum = data.get("has_payload")
        if checksum is not None and (
            text is None or hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest() != checksum
        ):
            found.unreadable_line(number, f"the payload of its {kind} record is cut off or altered")
            continue
        if kind == "str":
            _intern(found, data["str"], number)
            continue
        found.records.append(Record(kind, data, text, number))
    found.finish()
    return found


def _intern(found: TraceFile, entry: Any, number: int) -> None:
    if (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], str)
        and isinstance(entry[1], int)
    ):
        found.strings[entry[1]] = entry[0]
    else:
        found.unreadable_line(number, "an interned file name that is not [name, index]")


def _entries(lines: Iterable[str]) -> Iterator[tuple[int, str, list[str] | None]]:
    """Each record's line number, its line, and its payload lines (without their tab), if any."""
    head: str | None = None
    start = 0
    payload: list[str] | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip("\r\n")
        if line.startswith("\t") and head is not None:
            if payload is None:
                payload = []
            payload.append(line[1:])
            continue
        if head is not None:
            yield start, head, payload
        head, start, payload = (line, number, None) if line else (None, number, None)
    if head is not None:
        yield start, head, payload


def interned(found: TraceFile, index: Any) -> str:
    """The file name a stack frame's ``filename`` index stands for ("" if the trace never said)."""
    return found.strings.get(index, "") if isinstance(index, int) else str(index or "")
