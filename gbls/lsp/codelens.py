"""Code lenses above each compiled function: "2 graphs · 1 break · 5 ops", or why it was not analysed."""

from __future__ import annotations

from lsprotocol import types as lsp

from ..engine.model import FileReport, FunctionReport

SHOW_REPORT = "gbls.showReport"


def lens_title(function: FunctionReport, breaks: int) -> str:
    if not function.analysed:
        return f"gbls: not analysed: {function.reason}"
    graphs = len(function.graphs)
    if breaks == 0 and graphs <= 1:
        return (
            f"gbls: fullgraph-clean · {graphs} graph" if graphs else "gbls: no graph (no tensor ops traced)"
        )
    text = f"gbls: {graphs} graph{'s' * (graphs != 1)} · {breaks} break{'s' * (breaks != 1)}"
    text += f" · {function.ops} ops"
    if function.suppressed:
        text += f" · {function.suppressed} suppressed"
    return text


def lenses(report: FileReport, uri: str) -> list[lsp.CodeLens]:
    """One lens per compiled function, on its first line (above the decorators)."""
    found = []
    for function in report.functions:
        breaks = sum(1 for b in report.breaks if b.function == function.qualname)
        line = min(span.line for span in function.hover_spans) - 1
        found.append(
            lsp.CodeLens(
                range=lsp.Range(lsp.Position(line, 0), lsp.Position(line, 0)),
                command=lsp.Command(
                    title=lens_title(function, breaks),
                    command=SHOW_REPORT,
                    arguments=[uri, function.qualname],
                ),
            )
        )
    return found
