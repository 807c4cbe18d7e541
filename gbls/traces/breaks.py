"""A graph break as torch writes it into a trace (``dynamo_graph_break_reason``) or its
``TORCH_LOGS=graph_breaks`` log: the same text in both.

    Graph break in user code at /w/f.py:5
    Graph Break Reason: Encountered graph break when attempting to trace CALL: ...:   (2.10+)

    Failed to trace builtin operator
      Explanation: ...
      Hint: ...
    <Stack variable source attribution: ... (2.13+)>
    User code traceback:
      File "/w/f.py", line 17, in g
        z = normalize(y)
            ^^^^^^^^^^^^
      File "/w/f.py", line 5, in log_stats
        print("mean", x.mean())

    Traceback (most recent call last):            (Dynamo's own, in a trace)

torch 2.6 writes ``Reason: Unsupported: <one line>``; 2.7-2.9 put the gb_type on the reason's line;
2.10 and later first say what Dynamo did, then the message after a blank line. From 2.10 the
traceback starts above the compiled frame (the eager frames that called it); carets mark columns
from 2.13 (Python 3.11+), and are left out where they would cover the whole line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..worker.shared.messages import NESTED_BREAK_SEPARATOR, message_key

# "(user stack suppressed due to duplicate graph break)": a log writes a break's stack once per place.
HEADER = re.compile(r"^Graph break (\(user stack suppressed[^)]*\) )?in user code at (.*):(\d+)$")
REASON = re.compile(r"^(?:Graph Break )?Reason: (.*)$")
FRAME = re.compile(r'^ {1,2}File "([^"]+)", line (\d+), in (\S+)$')
CARETS = re.compile(r"^\s*[~^]+\s*$")
TRACEBACK = "User code traceback:"
ATTRIBUTION = "Stack variable source attribution:"
GB_LINK = re.compile(r"/gb/gb(\d+)\.html")


@dataclass(frozen=True)
class Written:
    """One frame of a break's traceback as torch wrote it."""

    path: str
    name: str  # the code's name, resume functions as torch wrote them
    line: int
    code: str  # the source line as the run read it, stripped ("" if torch printed none)
    caret: int | None = None  # where the carets start, in characters of ``code``; None: no carets


@dataclass(frozen=True)
class LoggedBreak:
    reason: str  # what Dynamo did about it (2.10+), the first line
    messages: tuple[str, ...]  # each structured message's text (without its link), the root cause first
    gb_ids: tuple[str | None, ...]  # the GB id torch's link names for each message, if it printed one
    frames: tuple[Written, ...]  # outermost first
    at: tuple[str, int] = ("", 0)  # the innermost frame's file and line, as the first line says
    suppressed: bool = False  # a log left its stack out: it wrote the same place's stack before


def parse(text: str) -> LoggedBreak | None:
    """The break a ``dynamo_graph_break_reason`` payload (or its log lines) says; None if it is not one."""
    lines = text.split("\n")
    header = HEADER.match(lines[0].strip()) if lines else None
    if header is None:
        return None
    reason_lines: list[str] = []
    index = 1
    while index < len(lines) and lines[index].strip() not in (TRACEBACK, ATTRIBUTION):
        reason_lines.append(lines[index])
        index += 1
    while index < len(lines) and lines[index].strip() != TRACEBACK:
        index += 1  # the attribution of stack variables, which names lines but no frames
    action, body = _reason(reason_lines)
    parts = [message_key(part) for part in body.split(NESTED_BREAK_SEPARATOR)]
    gb_ids = []
    for part in body.split(NESTED_BREAK_SEPARATOR):
        link = GB_LINK.search(part)
        gb_ids.append(f"GB{link.group(1)}" if link else None)
    at = (header.group(2), int(header.group(3)))
    frames = frames_of(lines[index + 1 :])
    return LoggedBreak(action, tuple(parts), tuple(gb_ids), frames, at, bool(header.group(1)))


def _reason(lines: list[str]) -> tuple[str, str]:
    """What Dynamo did (2.10+, else ""), and the message text."""
    first = REASON.match(lines[0]) if lines else None
    if first is None:
        return "", "\n".join(lines).strip("\n")
    rest = [first.group(1), *lines[1:]]
    while rest and not rest[-1].strip():
        rest.pop()
    if len(rest) > 2 and not rest[1].strip():  # 2.10+: what Dynamo did, a blank line, the message
        return rest[0].strip(), "\n".join(rest[2:]).strip("\n")
    body = "\n".join(rest)
    return "", body[len("Unsupported: ") :] if body.startswith("Unsupported: ") else body


def frames_of(lines: list[str]) -> tuple[Written, ...]:
    """The frames a traceback's lines list (``  File "...", line N, in f``), up to its first other line."""
    frames: list[Written] = []
    index = 0
    while index < len(lines):
        found = FRAME.match(lines[index])
        if found is None:
            break  # the blank line before Dynamo's own traceback, or the end
        path, line, name = found.group(1), int(found.group(2)), found.group(3)
        index += 1
        code, caret = "", None
        if index < len(lines) and lines[index].startswith("    ") and not FRAME.match(lines[index]):
            printed = lines[index]
            code = printed.strip()
            index += 1
            if index < len(lines) and CARETS.match(lines[index]) and lines[index].strip():
                marks = lines[index]
                caret = (len(marks) - len(marks.lstrip())) - (len(printed) - len(printed.lstrip()))
                index += 1
        frames.append(Written(path, name, line, code, caret))
    return tuple(frames)
