"""What a fix is: edits to source files, where gbls may make them, and how they apply."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...worker.shared.lines import newline_of, split_lines
from ...worker.shared.workspace import installed
from ..ranges import Span

if TYPE_CHECKING:
    from ..model import BreakReport
    from ..sources import Sources


@dataclass(frozen=True)
class Edit:
    """Replace ``span`` (characters; an empty span inserts) of ``path`` by ``text``.

    A ``snippet`` edit's text has LSP snippet placeholders (``${1:x}``) for the editor to fill in;
    ``plain_text`` gives it with each placeholder's default, for clients without snippet edits.
    """

    path: str
    span: Span
    text: str
    snippet: bool = False

    @property
    def plain_text(self) -> str:
        if not self.snippet:
            return self.text
        text = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", self.text)
        return re.sub(r"\\([$}\\])", r"\1", text)

    def text_for(self, source: str, snippet: bool = False) -> str:
        """The new text with ``source``'s line endings: a CRLF file stays CRLF."""
        text = self.text if snippet else self.plain_text
        newline = newline_of(source)
        return text if newline == "\n" else text.replace("\n", newline)


# What re-analysis must show for a fix to be proven: its break "gone", the graph joined there; or, for
# the workarounds that keep the split and make it cost less: for the one that runs code eagerly, the
# break gone and one "skip" of the disabled function in its place; for a custom op whose fake is a
# "stub" left to write, the break gone and one break at the op's call, where Dynamo runs the stub; for
# the one that moves the split into the callee (nested graph breaks), the compiled function in "fewer"
# graphs. A recompilation's fix: the function recompiles fewer times ("fewer_recompiles"), or hits its
# recompile limit no more ("under_limit").
Proof = Literal["gone", "skip", "stub", "fewer", "fewer_recompiles", "under_limit"]
# What a fix changes of what the program does, which its title says: nothing (""): its compiled calls'
# results, its printed output and how it ends stay as they were; or its "output", some lines of which
# it no longer prints (a print removed, or left out of compiled code).
Changes = Literal["", "output"]


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    safe: bool = False  # it keeps what the code computes for any input, not only the analysed run's
    proof: Proof = "gone"
    changes: Changes = ""
    # The compiled functions whose calls the fixed program makes as calls of another it compiles in
    # their place, (was, now): a generator's, by the function that consumes it; a function's whose
    # checks run before compiled code, by its compiled rest.
    compiled_as: tuple[tuple[str, str], ...] = ()
    # Of those others, the ones whose result a check then reads in Python, raising where the original
    # raised from compiled code: they return on the calls where the original raised, which the
    # program never sees (what it prints and how it ends are compared as ever).
    checked_after: tuple[str, ...] = ()
    # Where those others took the place of a function that returned a tuple of more (what Python then
    # computes after them: a timer's reading), how many of its first items they return: one, that
    # item itself; several, a tuple of them. 0: they return what the function returned.
    returns_first: int = 0

    @property
    def removes(self) -> bool:
        """Whether it removes its break (the graph joins there): a workaround keeps the split, and is
        never counted as a fix, nor applied by ``gbls check --fix`` or fix-all."""
        return self.proof == "gone"


def editable(fix: Fix, analysed: str, folders: list[str]) -> bool:
    """Whether gbls may make ``fix`` for a break of the file ``analysed``: each edit in that file or a
    file inside a workspace folder, never in an installed package.

    A break's frames are the analysed code's word (it runs where gbls captures): a path outside
    the workspace is never edited on it.
    """

    def inside(path: str) -> bool:
        path = os.path.normpath(path)
        if installed(path) or not os.path.isabs(path):
            return False
        if path == os.path.normpath(analysed):
            return True
        return any(path.startswith(os.path.join(os.path.normpath(folder), "")) for folder in folders)

    return all(inside(edit.path) for edit in fix.edits)


def apply(source: str, edits: list[Edit]) -> str:
    """``source`` with non-overlapping ``edits`` applied, snippets with their placeholders' defaults,
    every byte outside them kept (line endings too)."""
    lines = split_lines(source, keepends=True)
    starts = [0]
    for text in lines:
        starts.append(starts[-1] + len(text))

    def offset(line: int, column: int) -> int:
        return starts[min(line - 1, len(lines))] + column

    result = source
    for edit in sorted(edits, key=lambda e: (e.span.line, e.span.column), reverse=True):
        start, end = (
            offset(edit.span.line, edit.span.column),
            offset(edit.span.end_line, edit.span.end_column),
        )
        result = result[:start] + edit.text_for(source) + result[end:]
    return result


# A catalogue entry: the break, the analysed file, the request's sources → a fix, if the code allows one.
Maker = Callable[["BreakReport", str, "Sources"], Fix | None]
