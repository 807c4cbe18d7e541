"""Lines of source exactly as Python counts them: only "\r\n", "\r" and "\n" end a line.

``str.splitlines`` also splits at form feeds, U+2028, U+0085 and a few more, which Python's
tokenizer (and LSP) keep inside a line: every line number after one would be off. Shared by the
worker and the server.
"""

from __future__ import annotations

import re

_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str, keepends: bool = False) -> list[str]:
    """``text`` split into lines as Python reads them (no empty last line, as ``str.splitlines``)."""
    lines = []
    start = 0
    for match in _BREAK.finditer(text):
        lines.append(text[start : match.end() if keepends else match.start()])
        start = match.end()
    if start < len(text):
        lines.append(text[start:])
    return lines


def newline_of(text: str) -> str:
    """The line ending ``text`` uses (its first one), "\n" if it has none."""
    match = _BREAK.search(text)
    return match.group() if match else "\n"
