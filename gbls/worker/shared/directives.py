"""The ``# gbls:`` comment grammar, in one place for the worker and the server.

Two directives, each a comment of its own::

    # gbls: example(torch.randn(4, 8), dim=1)    one call with these arguments (above a target)
    x = f(y)  # gbls: ignore[GB0059, GB0124]     suppress these breaks on this line
    x = f(y)  # gbls: ignore                     suppress every break on this line

Examples sit in the comment block directly above a function, its decorators, a class or a
``torch.compile`` call (decorator lines may sit between). Standard library only: the worker
imports this too.
"""

from __future__ import annotations

import io
import re
import tokenize

EXAMPLE = re.compile(r"^\s*#\s*gbls:\s*example\((.*)\)\s*$")
IGNORE = re.compile(r"#\s*gbls:\s*ignore(\[([A-Za-z0-9_,\s]*)\])?")
DIRECTIVE = re.compile(r"#\s*gbls:")

# Codes by line; None: every break on that line.
Suppressions = dict[int, frozenset[str] | None]


def is_directive(comment: str) -> bool:
    """Whether a comment token says something to gbls (it then changes results, unlike other comments)."""
    return DIRECTIVE.match(comment) is not None


def example_sources(lines: list[str], line: int) -> list[tuple[int, str]]:
    """The ``# gbls: example(...)`` argument texts in the comment block above 1-based ``line``."""
    found = []
    index = line - 2
    while index >= 0:
        text = lines[index].strip()
        if not (text.startswith("#") or text.startswith("@")):
            break
        match = EXAMPLE.match(lines[index])
        if match:
            found.append((index + 1, match.group(1)))
        index -= 1
    found.reverse()
    return found


def suppressions(source: str) -> Suppressions:
    """``# gbls: ignore[...]`` comments of ``source`` by line (real comments only, not strings)."""
    return {line: codes for line, (codes, _, _) in suppression_comments(source).items()}


def suppression_comments(source: str) -> dict[int, tuple[frozenset[str] | None, int, int]]:
    """Each ``# gbls: ignore[...]`` comment of ``source`` by line: its codes, and the columns (in
    characters) where the directive starts and ends."""
    found: dict[int, tuple[frozenset[str] | None, int, int]] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                match = IGNORE.search(token.string)
                if match:
                    start = token.start[1] + match.start()
                    found[token.start[0]] = (_codes(match), start, token.start[1] + match.end())
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _codes(match: re.Match[str]) -> frozenset[str] | None:
    if match.group(1) is None:
        return None
    return frozenset(code.strip().upper() for code in match.group(2).split(",") if code.strip())


def is_suppressed(suppressed: Suppressions, line: int, code: str) -> bool:
    if line not in suppressed:
        return False
    codes = suppressed[line]
    return codes is None or code in codes


def without_suppression(text: str, codes: frozenset[str] | None) -> str:
    """Line ``text`` with ``codes`` taken out of its ``# gbls: ignore[...]`` comment; the comment gone
    once none is left (or ``codes`` is None: the whole comment)."""
    match = IGNORE.search(text)
    if match is None:
        return text
    listed = [c.strip() for c in (match.group(2) or "").split(",") if c.strip()]
    kept = [c for c in listed if codes is not None and c.upper() not in codes]
    if kept:
        return text[: match.start()] + f"# gbls: ignore[{', '.join(kept)}]" + text[match.end() :]
    before, rest = text[: match.start()], text[match.end() :]
    return before.rstrip() + rest.rstrip()


def with_suppression(text: str, code: str | None) -> str:
    """Line ``text`` with ``code`` (or every break, for None) added to its ``# gbls: ignore`` comment."""
    match = IGNORE.search(text)
    if match is None:
        comment = f"# gbls: ignore[{code}]" if code else "# gbls: ignore"
        return f"{text.rstrip()}  {comment}"
    codes = _codes(match)
    if code is None or codes is None:
        return text[: match.start()] + "# gbls: ignore" + text[match.end() :]
    listed = [c.strip() for c in match.group(2).split(",") if c.strip()]
    if code not in listed:
        listed.append(code)
    return text[: match.start()] + f"# gbls: ignore[{', '.join(listed)}]" + text[match.end() :]
