"""A baseline: the graph breaks and recompilations a project already has, so that only new ones fail.

Each entry names a finding by its file (relative to the baseline's folder, so that the baseline
holds in every checkout), its compiled function, its type (the gb_type, or ``recompile`` /
``recompile-limit``) and the code at its root: the root cause's source text for a break (the
``print(...)`` call), the guarded code for a recompilation. No line number: an edit elsewhere in
the file moves a finding without making it new. Matching counts: two identical ``print`` calls
in one function are two entries, and a third one is new.

``gbls check --baseline`` and the pytest plugin (``gbls.testing``) both read and write it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from ..worker.shared.lines import split_lines
from .model import LIMIT_CODE, BreakReport, FileReport, RecompileReport
from .ranges import Span, line_text
from .sources import TextOf

FORMAT = 1  # the version of the file's format


class BaselineError(Exception):
    """A baseline file that cannot be read, or is not a baseline."""


@dataclass(frozen=True, order=True)
class Entry:
    path: str  # relative to the baseline's folder, with forward slashes
    function: str
    type: str  # the gb_type, or recompile / recompile-limit
    code: str  # the code at the root, its whitespace collapsed

    def describe(self) -> str:
        return f"{self.path}: {self.type} in {self.function} ({self.code})"

    def as_json(self) -> dict[str, str]:
        return {"path": self.path, "function": self.function, "type": self.type, "code": self.code}


def code_at(text: str, span: Span) -> str:
    """The source text of ``span``, whitespace collapsed; its whole line when the span is empty."""
    lines = split_lines(text)
    if span.line == span.end_line:
        code = line_text(lines, span.line)[span.column : span.end_column]
    else:
        first = line_text(lines, span.line)[span.column :]
        middle = [line_text(lines, line) for line in range(span.line + 1, span.end_line)]
        code = " ".join([first, *middle, line_text(lines, span.end_line)[: span.end_column]])
    return " ".join((code.strip() or line_text(lines, span.line)).split())


def relative(path: str, folder: str) -> str:
    return os.path.relpath(path, folder).replace(os.sep, "/")


def break_entry(path: str, brk: BreakReport, folder: str, text_of: TextOf) -> Entry:
    """``brk`` of the report of ``path``, as an entry of a baseline in ``folder``."""
    root = brk.root
    code = code_at(text_of(root.path) or "", root.span)
    return Entry(relative(path, folder), brk.function, brk.gb_type, code)


def recompile_entry(path: str, found: RecompileReport, folder: str, text_of: TextOf) -> Entry:
    kind = LIMIT_CODE if found.limit is not None else found.code
    return Entry(relative(path, folder), found.function, kind, code_at(text_of(path) or "", found.span))


def report_entries(report: FileReport, folder: str, text_of: TextOf) -> list[Entry]:
    """What fails ``gbls check`` or gets a diagnostic in ``report``: its breaks and its problems."""
    found = [break_entry(report.path, brk, folder, text_of) for brk in report.breaks]
    return found + [recompile_entry(report.path, r, folder, text_of) for r in report.problems]


def load(path: str) -> list[Entry]:
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise BaselineError(f"cannot read the baseline {path}: {error.strerror}") from None
    except ValueError as error:
        raise BaselineError(f"{path} is not a gbls baseline: {error}") from None
    if not isinstance(document, dict) or document.get("version") != FORMAT:
        raise BaselineError(f"{path} is not a gbls baseline of format version {FORMAT}")
    try:
        return [Entry(e["path"], e["function"], e["type"], e["code"]) for e in document["entries"]]
    except (KeyError, TypeError) as error:
        raise BaselineError(
            f"{path}: an entry is not as gbls writes them ({type(error).__name__}: {error})"
        ) from None


def dump(path: str, entries: Iterable[Entry]) -> None:
    document = {
        "version": FORMAT,
        "entries": [entry.as_json() for entry in sorted(entries)],
    }
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def is_new(found: list[Entry], left: Counter[Entry]) -> list[bool]:
    """For each of ``found``, whether it is new: not among the entries ``left``, which lose those matched."""
    new = []
    for entry in found:
        new.append(left[entry] <= 0)
        if left[entry] > 0:
            left[entry] -= 1
    return new


@dataclass(frozen=True)
class Applied:
    """Reports with their baselined findings left out, and what the baseline said about them."""

    path: str  # the baseline file
    reports: list[FileReport]
    matched: int  # findings the baseline holds
    removable: list[Entry]  # entries of the files analysed that no longer occur


def _analysed(reports: list[FileReport], folder: str) -> set[str]:
    """The files whose findings are complete: an analysis that failed may have missed some."""
    return {relative(report.path, folder) for report in reports if report.status == "ok"}


def apply(reports: list[FileReport], entries: list[Entry], path: str, text_of: TextOf) -> Applied:
    """Leave out of ``reports`` every finding that the baseline ``path`` with ``entries`` holds; an entry
    of a file not analysed is neither matched nor removable."""
    folder = os.path.dirname(os.path.abspath(path))
    left = Counter(entries)
    matched = 0
    kept = []
    for report in reports:
        new_breaks = is_new([break_entry(report.path, b, folder, text_of) for b in report.breaks], left)
        problems = report.problems
        new_problems = is_new([recompile_entry(report.path, r, folder, text_of) for r in problems], left)
        baselined = {id(r) for r, new in zip(problems, new_problems, strict=True) if not new}
        matched += new_breaks.count(False) + len(baselined)
        kept.append(
            dataclasses.replace(
                report,
                breaks=tuple(b for b, new in zip(report.breaks, new_breaks, strict=True) if new),
                recompiles=tuple(r for r in report.recompiles if id(r) not in baselined),
            )
        )
    analysed = _analysed(reports, folder)
    removable = [entry for entry in sorted(left.elements()) if entry.path in analysed]
    return Applied(path, kept, matched, removable)


def updated(entries: list[Entry], reports: list[FileReport], path: str, text_of: TextOf) -> list[Entry]:
    """The baseline ``path`` after analysing ``reports``: their findings, and the entries of the other
    files."""
    folder = os.path.dirname(os.path.abspath(path))
    analysed = _analysed(reports, folder)
    kept = [entry for entry in entries if entry.path not in analysed]
    for report in reports:
        if relative(report.path, folder) in analysed:
            kept += report_entries(report, folder, text_of)
    return kept
