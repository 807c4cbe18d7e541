"""Inlay hints (``textDocument/inlayHint``): where a compiled function's graph ends and the next one
begins (``graph 2 of 3``, after the break that splits it), and at a call that compiled a function
again and again (a multiplication sign and 4: the compilations that call made). Off with the
``inlayHints`` setting.

Clients ask for hints when they show a document; one that asked is asked to ask again
(``workspace/inlayHint/refresh``) once per burst of publications, where it supports that.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from lsprotocol import types as lsp

from ..engine.model import FileView, FunctionReport
from ..engine.ranges import Span
from ..runtime.session import Session
from ..worker.shared.lines import split_lines
from ..worker.shared.protocol import Frame, Graph
from .diagnostics import to_range

if TYPE_CHECKING:
    from .features import GblsServer

TIMES = "\N{MULTIPLICATION SIGN}"


class Asked:
    """Whether the client asks for inlay hints (then it is told when they change)."""

    def __init__(self) -> None:
        self.asking = False
        self._refresh: asyncio.Handle | None = None

    def changed(self, ls: GblsServer) -> None:
        if not self.asking or self._refresh is not None or not ls.capabilities.inlay_refresh:
            return

        def send() -> None:
            self._refresh = None
            ls.workspace_inlay_hint_refresh(None)  # the answer says nothing: not awaited

        self._refresh = asyncio.get_running_loop().call_soon(send)


def _first_graphs(function: FunctionReport) -> list[Graph]:
    """The graphs of the function's own code in its first compilation of each frame (its resume
    functions' too), in the order of their lines: the graphs one call runs through."""
    own = "forward" if function.kind == "module" else function.name
    graphs = [
        g
        for g in function.graphs
        if g.frame == own and g.first_line is not None and (not g.compile_id or g.compile_id.endswith("/0"))
    ]
    return sorted(graphs, key=lambda g: g.first_line or 0)


def split_hints(view: FileView, lines: list[str]) -> list[lsp.InlayHint]:
    """``graph 2 of 3`` after each break that splits a function of this file's."""
    found = []
    breaks = [*view.breaks, *view.splits, *view.elsewhere]
    for function in view.functions:
        graphs = _first_graphs(function)
        if len(graphs) < 2 or function.code_path != view.path:
            continue
        splits = {
            (b.splits_at.span.line, b.splits_at.span.end_column): b
            for b in breaks
            if b.function == function.qualname and b.splits_at.path == view.path
        }
        for (line, column), brk in sorted(splits.items()):
            after = [g for g in graphs if (g.first_line or 0) > line]
            if not after:
                continue
            number = graphs.index(after[0]) + 1
            position = to_range(Span(line, column, line, column), lines).end
            found.append(
                lsp.InlayHint(
                    position=position,
                    label=f"graph {number} of {len(graphs)}",
                    padding_left=True,
                    tooltip=f"`{function.qualname}`'s graph {number} of {len(graphs)} begins after this "
                    f"break: {brk.title}",
                )
            )
    return found


def call_hints(view: FileView, lines: list[str], session: Session) -> list[lsp.InlayHint]:
    """The compilations (a multiplication sign and their number) at each call of this file that
    compiled a function more than once: its first compilation, if that call made it, and each
    recompilation it made."""
    made: dict[tuple[Frame, str], list[str]] = {}
    for _, analysed in session.results():
        report = analysed.report
        for function in report.functions:
            first = function.target.called_at
            if first is not None and first.path == view.path and function.analysed:
                made.setdefault((first, function.qualname), []).append("first compilation")
        for found in report.recompiles:
            for recompile in found.recompiles:
                at = recompile.called_at
                if at is not None and at.path == view.path and not recompile.limit:
                    made.setdefault((at, found.function), []).append(f"recompiled for {found.changed or '?'}")
    by_line: dict[tuple[int, int | None, str], list[str]] = {}
    for (frame, qualname), reasons in made.items():
        by_line.setdefault((frame.line, frame.end_column, qualname), []).extend(reasons)
    hints = []
    for (line, end, qualname), reasons in sorted(by_line.items(), key=lambda item: (item[0][0], item[0][2])):
        if len(reasons) < 2 or not 0 < line <= len(lines):
            continue
        column = len(lines[line - 1].encode("utf-8")) if end is None else end
        text = lines[line - 1].encode("utf-8")[:column].decode("utf-8", "replace")
        position = to_range(Span(line, len(text), line, len(text)), lines).end
        kinds = ", ".join(dict.fromkeys(reasons))
        hints.append(
            lsp.InlayHint(
                position=position,
                label=f"{TIMES}{len(reasons)}",
                padding_left=True,
                tooltip=f"`{qualname}` compiled {len(reasons)} times from this call: {kinds}",
            )
        )
    return hints


def inlay_hints(view: FileView, source: str, session: Session, wanted: lsp.Range) -> list[lsp.InlayHint]:
    lines = split_lines(source)
    found = split_hints(view, lines) + call_hints(view, lines, session)
    return [hint for hint in found if wanted.start.line <= hint.position.line <= wanted.end.line]
