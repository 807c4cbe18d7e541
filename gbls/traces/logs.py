"""A saved ``TORCH_LOGS=graph_breaks,recompiles`` log, read into the compilations a trace holds.

Each line of a message carries the same prefix: the rank under ``torchrun`` (``[rank3]:``), the
glog header, the compile id (``[0/1]``, ``[0/1_1]`` for a restart) and the log's name (the
header ``V1202 01:28:05.009000 10797 torch/_dynamo/guards.py:5396]`` is left out here)::

    [0/0] [__graph_breaks] Graph break in user code at /w/f.py:7
    [0/1] [__recompiles] Recompiling function twice in /w/f.py:4
    [0/1] [__recompiles]     triggered by the following guard failure(s):
    [0/1] [__recompiles]     - 0/0: tensor 'x' dtype mismatch. expected Float, actual Double
    [0/8] torch._dynamo hit config.recompile_limit (8)
    [0/8]    function: 'total' (/w/limit.py:4)

A log says less than a trace: no record of the frames Dynamo translated without a break, nor of
whether it produced code for them. A compilation's code is the one its recompilation names, else
the frame of its breaks' tracebacks that was compiled (``Compilation.path`` stays empty until
``translate`` finds it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .breaks import parse as parse_break
from .compilations import Compilation

LINE = re.compile(
    r"^(?:\[rank(?P<rank>\d+)\]:)?[VIWEC]\d{4} \d\d:\d\d:\d\d\.\d+ (?P<pid>\d+) (?P<at>\S+:\d+)\]"
    r"(?: \[(?P<frame>\d+)/(?P<compile>\d+)(?:_\d+)?\])?(?: \[__(?P<log>\w+)\])?(?: (?P<text>.*))?$"
)
OPENERS = ("Graph break ", "Recompiling function", "torch._dynamo hit config.")
RECOMPILING = re.compile(r"^Recompiling function (\S+) in (.+):(\d+)$")
REASON = re.compile(r"^\s*- (?:(\d+/\d+: .*)|(.*))$")
LIMIT = re.compile(r"^torch\._dynamo hit config\.(\w+) \((\d+)\)")
LIMITED = re.compile(r"^\s*function: '([^']+)' \((.+):(\d+)\)")


@dataclass
class Message:
    rank: int | None
    compile_id: str
    log: str
    text: list[str]


def is_log(lines: list[str]) -> bool:
    """Whether ``lines`` hold a graph-break or recompilation log line."""
    return any(
        (found := LINE.match(line)) is not None and found.group("log") in ("graph_breaks", "recompiles")
        for line in lines
    )


def messages(lines: list[str]) -> list[Message]:
    """The log's messages: consecutive lines with one prefix, each opener starting a new one."""
    found: list[Message] = []
    last: tuple[str | None, ...] | None = None
    for line in lines:
        match = LINE.match(line.rstrip("\r\n"))
        if match is None or match.group("frame") is None:
            last = None
            continue
        text = match.group("text") or ""
        key = tuple(match.group(name) for name in ("rank", "pid", "at", "frame", "compile", "log"))
        if key != last or text.startswith(OPENERS):
            rank = match.group("rank")
            compile_id = f"{match.group('frame')}/{match.group('compile')}"
            found.append(Message(int(rank) if rank else None, compile_id, match.group("log") or "", []))
        found[-1].text.append(text)
        last = key
    return found


def read(lines: list[str]) -> dict[int | None, list[Compilation]]:
    """Each rank's compilations, as far as its log says."""
    ranks: dict[int | None, dict[str, Compilation]] = {}
    for message in messages(lines):
        compilation = ranks.setdefault(message.rank, {}).setdefault(
            message.compile_id, Compilation(message.compile_id)
        )
        first = message.text[0] if message.text else ""
        if message.log == "graph_breaks" and first.startswith(OPENERS[0]):
            logged = parse_break("\n".join(message.text))
            if logged is not None:
                compilation.breaks.append(logged)
        elif message.log == "recompiles" and (named := RECOMPILING.match(first)):
            compilation.name, compilation.path, compilation.line = (
                named.group(1),
                named.group(2),
                int(named.group(3)),
            )
            compilation.reasons = _reasons(message.text[1:])
        elif (limit := LIMIT.match(first)) is not None:
            compilation.limit = (limit.group(1), int(limit.group(2)))
            function = next((m for m in map(LIMITED.match, message.text[1:]) if m), None)
            if function is not None and not compilation.path:
                compilation.name, compilation.path = function.group(1), function.group(2)
                compilation.line = int(function.group(3))
    return {rank: list(found.values()) for rank, found in ranks.items()}


def _reasons(lines: list[str]) -> list[str]:
    """The failed checks a recompilation lists (``- 0/0: …``); a check's further lines (its user
    stack, 2.12+) are written ``- …`` too."""
    found: list[str] = []
    for line in lines:
        match = REASON.match(line)
        if match is None:
            continue
        if match.group(1):
            found.append(match.group(1))
        elif found:
            found[-1] += "\n" + (match.group(2) or "")
    return found
