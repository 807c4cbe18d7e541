"""Code lenses above each compiled function: "3 compilations · 2 graphs · 1 break · 5 ops · translated
in 0.41 s", or why it was not analysed."""

from __future__ import annotations

from lsprotocol import types as lsp

from ..engine.costs import seconds
from ..engine.model import FileView, FunctionReport

SHOW_REPORT = "gbls.showReport"


def lens_title(
    function: FunctionReport, breaks: int, limit_hit: bool = False, cut: float | None = None
) -> str:
    """``cut``: the budget after which the program was cut, if it was."""
    if function.untaken:
        return f"gbls: {function.reason}"
    if not function.analysed:
        return f"gbls: not analysed: {function.reason}"
    if function.target.inlined:
        return f"gbls: traced inline in {function.target.inlined}"
    graphs = len(function.graphs)
    compilations = function.compilations
    several = f"{compilations} compilations · " if function.recompiled else ""
    after = (
        (f" · translated in {seconds(function.seconds)}" if function.costs else "")
        + (" · shapes only, not computed" if function.elided else "")
        + (f" · run cut at {cut:g} s" if cut is not None else "")
    )
    limit = " · recompile limit hit" if limit_hit else ""
    # One graph per compilation, and no break (a suppressed one splits the graph all the same).
    if breaks == 0 and not function.suppressed and graphs <= max(compilations, 1):
        if not graphs:
            return "gbls: no graph (no tensor ops traced)" + after
        return f"gbls: fullgraph-clean · {several}{graphs} graph{'s' * (graphs != 1)}{limit}{after}"
    text = f"gbls: {several}{graphs} graph{'s' * (graphs != 1)} · {breaks} break{'s' * (breaks != 1)}"
    text += f" · {function.ops} ops"
    if function.suppressed:
        text += f" · {function.suppressed} suppressed"
    return text + limit + after


def lenses(report: FileView, uri: str) -> list[lsp.CodeLens]:
    """One lens per compiled function, on its first line (above the decorators)."""
    found = []
    cut = report.cut.seconds if report.cut is not None else None
    for function in report.functions:
        breaks = len(report.breaks_of(function.qualname))
        limit_hit = any(r.limit is not None for r in report.recompiles_of(function.qualname))
        line = min(span.line for span in function.hover_spans) - 1
        found.append(
            lsp.CodeLens(
                range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
                command=lsp.Command(
                    title=lens_title(function, breaks, limit_hit, cut),
                    command=SHOW_REPORT,
                    arguments=[uri, function.qualname],
                ),
            )
        )
    return found
