"""What an analysis depends on, so that an edit that cannot change it reuses it.

A file's *code key* is its token stream without comments and blank lines, but with each token's
columns: two texts with the same key differ only by comment or blank lines, so every code token
sits on the same columns and only line numbers move. ``# gbls:`` comments stay in the key: they
declare inputs and suppress breaks. A cached report is then shifted line by line onto the new
text (``shifts``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tokenize
from typing import Any

from ..worker.shared.directives import is_directive
from .model import FileReport
from .shifts import shifted
from .sources import TextOf

Key = tuple[tuple[int, str, int, int], ...]
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


def code_key(source: str) -> tuple[Key, tuple[int, ...]] | None:
    """The code key and, for each of its tokens, the line it starts on; None if it does not tokenize."""
    tokens = []
    lines = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in SKIPPED and not (token.type == tokenize.COMMENT and is_directive(token.string)):
                continue
            if token.type == tokenize.NEWLINE:  # it follows a trailing comment, if there is one
                tokens.append((token.type, "", 0, 0))
            else:
                tokens.append((token.type, token.string, token.start[1], token.end[1]))
            lines.append(token.start[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return tuple(tokens), tuple(lines)


def line_map(old: tuple[int, ...], new: tuple[int, ...]) -> dict[int, int]:
    """Old line → new line, for the lines that hold code tokens (same key, so the same tokens)."""
    return dict(zip(old, new, strict=True))


def digest(text: str | None) -> str:
    return hashlib.sha1((text or "").encode("utf-8", "surrogatepass")).hexdigest()


@dataclasses.dataclass(frozen=True)
class Entry:
    """A report, and what it was computed from."""

    key: Key
    lines: tuple[int, ...]
    settings: Any  # whatever of the settings and the worker changes results
    dependencies: tuple[tuple[str, str], ...]  # (path, digest) of the other files it read
    report: FileReport


def entry(
    source: str,
    settings: Any,
    dependencies: list[str],
    text_of: TextOf,
    report: FileReport,
) -> Entry | None:
    key = code_key(source)
    if key is None:
        return None
    return Entry(
        key[0], key[1], settings, tuple((path, digest(text_of(path))) for path in dependencies), report
    )


def reuse(cached: Entry | None, source: str, settings: Any, text_of: TextOf) -> FileReport | None:
    """The cached report moved onto ``source``, when nothing it depends on changed."""
    if cached is None or cached.settings != settings:
        return None
    if any(digest(text_of(path)) != value for path, value in cached.dependencies):
        return None
    current = code_key(source)
    if current is None or current[0] != cached.key:
        return None
    return shifted(cached.report, line_map(cached.lines, current[1]))
