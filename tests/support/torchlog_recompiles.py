"""torch's own recompilation log, as the oracle gbls's recompilations are checked against.

Runs fixture files in an interpreter of their own with ``TORCH_LOGS=recompiles`` (and graph_breaks:
``torchlog.folder_log``, one run for both logs) and every ``torch.compile`` on the eager backend
(``torchlog``'s runner), and parses each "Recompiling
function NAME in PATH:LINE" entry: its compile id and, for each compiled version of the frame, the
check the call failed and the user stack torch printed below it; and each "torch._dynamo hit
config.LIMIT (N)" warning, with its compile id and function. All the files of a folder run in one
interpreter (``torch._dynamo.reset()`` between them).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gbls.worker.shared import reasons

from .torchlog import MARKER, folder_log

# Whether torch's user stacks of guards carry columns (2.13+, on a Python with column tables).
COLUMNS = tuple(map(int, torch.__version__.split(".")[:2])) >= (2, 13) and sys.version_info >= (3, 11)
LINE = re.compile(r"^[A-Z]\d{4} [\d:.]+ +\d+ \S+\] \[([\d/]+)(?:_\d+)?\] (?:\[__recompiles\] )?(.*)$")
RECOMPILING = re.compile(r"^Recompiling function (\S+) in (.+):(\d+)$")
# A check, then its comment (2.10+) or, without a comment, its hint (2.8-2.9).
REASON = re.compile(r"^    - (\S+): (.*?)(?:\s{2,}(?:#(.*)|\(HINT: .*))?$")
# The comment torch 2.10+ puts after a check: its source line, then where that line is.
LOCATED = re.compile(r"#\s*(\S+):(\d+) in (\S+)")
FRAME = re.compile(r'^    -   File "([^"]+)", line (\d+), in (\S+)$')
LIMIT = re.compile(r"^torch\._dynamo hit config\.(\w+) \((\d+)\)$")
LIMITED = re.compile(r"^   function: '(\S+)' \((.+):(\d+)\)$")


@dataclass
class LoggedReason:
    failed: str  # the compiled version whose check failed: "0/0"
    text: str  # the check as printed, without its padding and comment
    stack: list[tuple[str, int, str]] = field(default_factory=list)  # (path, line, function)
    # Where the check was installed, as its comment says (2.10+): (path as printed, line, function).
    located: tuple[str, int, str] | None = None
    hinted: bool = False  # torch added a hint to the check (an nn.Module's int attribute, 2.8+)


@dataclass
class LoggedRecompile:
    compile_id: str  # the new compilation's: "0/1"
    function: str  # the frame's code name, as torch printed it
    path: str
    line: int  # the frame's first line
    reasons: list[LoggedReason] = field(default_factory=list)


@dataclass
class LoggedLimit:
    compile_id: str
    limit: str  # "recompile_limit"
    value: int
    function: str = ""
    path: str = ""
    line: int = 0


@dataclass
class Logged:
    recompiles: list[LoggedRecompile] = field(default_factory=list)
    limits: list[LoggedLimit] = field(default_factory=list)


_cache: dict[Path, Logged] = {}
# What torch calls a resume function's values (2.13 boxes them in one list), which gbls names as the
# function does; and an object's address, another in each run.
INTERNAL = re.compile(r"__resume_frame_values\[\d+\]|___stack\d+")
ADDRESS = re.compile(r"\d{8,}")


def said_as_torch(ours: str, printed: str) -> bool:
    """Whether gbls's text of a check is the one torch printed: locals and globals by their names,
    Dynamo's helpers as the Python they compute, a resume function's values by any name that is not
    torch's, any object address."""
    unscoped = reasons.readable(printed)
    parts = re.split(f"({INTERNAL.pattern}|{ADDRESS.pattern})", unscoped)
    pattern = "".join(
        ".+" if INTERNAL.fullmatch(part) else r"\d+" if ADDRESS.fullmatch(part) else re.escape(part)
        for part in parts
    )
    return re.fullmatch(pattern, ours) is not None and not INTERNAL.search(ours)


def logged_recompiles(path: Path) -> Logged:
    if path not in _cache:
        _cache.update(parse(folder_log(path)))
    return _cache[path]


def parse(stderr: str) -> dict[Path, Logged]:
    """Each logged recompilation and limit, by the file the marker line before them named."""
    found: dict[Path, Logged] = {}
    current = Logged()
    for raw in stderr.splitlines():
        if raw.startswith(MARKER):
            current = found.setdefault(Path(raw[len(MARKER) :]), Logged())
            continue
        match = LINE.match(raw)
        if match:
            _feed(current, match.group(1), match.group(2))
    return found


def _feed(logged: Logged, compile_id: str, text: str) -> None:
    recompiling, limit = RECOMPILING.match(text), LIMIT.match(text)
    if recompiling:
        name, path, line = recompiling.groups()
        logged.recompiles.append(LoggedRecompile(compile_id, name, path, int(line)))
    elif limit:
        logged.limits.append(LoggedLimit(compile_id, limit.group(1), int(limit.group(2))))
    elif (limited := LIMITED.match(text)) and logged.limits:
        last = logged.limits[-1]
        last.function, last.path, last.line = limited.group(1), limited.group(2), int(limited.group(3))
    elif (frame := FRAME.match(text)) and logged.recompiles and logged.recompiles[-1].reasons:
        logged.recompiles[-1].reasons[-1].stack.append((frame.group(1), int(frame.group(2)), frame.group(3)))
    elif (reason := REASON.match(text)) and logged.recompiles and reason.group(1) != "User":
        where = LOCATED.search(reason.group(3) or "")
        located = (where.group(1), int(where.group(2)), where.group(3)) if where else None
        logged.recompiles[-1].reasons.append(
            LoggedReason(reason.group(1), reason.group(2).rstrip(), located=located, hinted="(HINT:" in text)
        )
