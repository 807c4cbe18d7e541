"""Hover text, in markdown: a break (why, what to do, the chain, how the function splits) and a
compiled function's summary. ``function_report`` is also what the "show break report" command shows.
"""

from __future__ import annotations

import os

from pygls import uris

from ..engine.model import BreakReport, FileReport, FunctionReport, Location
from ..worker.protocol import EAGER, Graph


def _link(location: Location) -> str:
    uri = uris.from_fs_path(location.path) or location.path
    name = os.path.basename(location.path)
    return f"[`{location.function}` {name}:{location.span.line}]({uri}#L{location.span.line})"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def break_markdown(brk: BreakReport, function: FunctionReport | None) -> str:
    heading = f"**{brk.gb_type}**"
    code = f"[{brk.code}]({brk.url})" if brk.url else brk.code
    parts = [f"{heading} · {code}" + (f" · hit {brk.count} times" if brk.count > 1 else "")]
    if brk.eager:
        why = brk.cause.eager_reason or "Dynamo skipped the frame"
        parts.append(f"⚠ `{brk.function}` {brk.eager}: {why}")
    parts.append(brk.cause.explanation)
    if brk.cause.hints:
        parts.append("**Hints**\n" + "\n".join(f"- {hint}" for hint in brk.cause.hints))
    if len(brk.chain) > 1:
        steps = "\n".join(f"{index}. {_link(location)}" for index, location in enumerate(brk.chain, start=1))
        parts.append(
            f"**Inline chain** (the graph splits at step 1, the cause is step {len(brk.chain)})\n{steps}"
        )
    if function is not None and function.graphs:
        parts.append(f"**How `{function.qualname}` splits**\n" + split_story(function, brk))
    return "\n\n".join(parts)


def _own_frame(function: FunctionReport) -> str:
    return "forward" if function.kind == "module" else function.qualname.rsplit(".", 1)[-1]


def split_story(function: FunctionReport, breaks: BreakReport | tuple[BreakReport, ...]) -> str:
    """``graph 1 · 2 ops → break at line 9 … → graph 2 · 1 op``: the function's graphs in order."""
    own_breaks = (breaks,) if isinstance(breaks, BreakReport) else breaks
    own = _own_frame(function)
    items: list[tuple[int, int, str]] = []
    callee: list[Graph] = []
    number = 0
    for graph in function.graphs:
        if graph.frame != own:
            callee.append(graph)
            continue
        number += 1
        where = f" (line {graph.first_line})" if graph.first_line else ""
        items.append((graph.first_line or 0, 1, f"graph {number} · {_plural(graph.ops, 'op')}{where}"))
    for brk in own_breaks:
        eager = [g for g in callee if g.frame in brk.via]
        text = f"break at line {brk.span.line}: {brk.title}"
        if eager:
            frames = ", ".join(dict.fromkeys(f"`{g.frame}`" for g in eager))
            ops = sum(g.ops for g in eager)
            text += f" → eager call: {_plural(len(eager), 'graph')} in {frames} ({_plural(ops, 'op')})"
        items.append((brk.span.line, 0, text))
    items.sort()
    return " → ".join(text for _, _, text in items) or "no graph"


def function_markdown(function: FunctionReport, report: FileReport) -> str:
    kind = {"module": "compiled module", "method": "compiled method"}.get(function.kind, "compiled function")
    lines = [f"**`{function.qualname}`** · {kind}"]
    if not function.analysed:
        lines.append(f"Not analysed: {function.reason}.")
        lines.append("Declare inputs with a comment above it: `# gbls: example(torch.randn(4, 8))`")
        return "\n\n".join(lines)
    breaks = tuple(b for b in report.breaks if b.function == function.qualname)
    counts = " · ".join(
        (_plural(len(function.graphs), "graph"), _plural(len(breaks), "break"), _plural(function.ops, "op"))
    )
    if function.suppressed:
        counts += f" · {function.suppressed} suppressed"
    lines.append(counts)
    if not breaks and len(function.graphs) == 1:
        lines.append("fullgraph-clean: one graph, no break.")
    source = {
        "module": "calls the module makes",
        "example": "declared examples",
        "synthesized": "synthesized inputs",
    }
    target = function.target
    lines.append(f"Inputs ({source.get(target.input_source, 'unknown')}): `{target.inputs or 'none'}`")
    if function.graphs:
        lines.append("**Graphs**: " + split_story(function, breaks))
    if any(b.effect == EAGER and b.cause.eager_from is None for b in breaks):
        lines.append("⚠ Dynamo gives up on this function: it runs entirely in eager mode.")
    for line in sorted({b.cause.eager_from for b in breaks if b.cause.eager_from is not None}):
        lines.append(
            f"⚠ Dynamo gives up on the rest of this function: after line {line} it runs in eager mode."
        )
    return "\n\n".join(lines)


def function_report(report: FileReport, qualname: str | None) -> str:
    """The full break report of one function (or of every function), for the report command."""
    chosen = [f for f in report.functions if qualname in (None, f.qualname)]
    sections = [f"# gbls report: {os.path.basename(report.path)}"]
    if report.message:
        sections.append(f"**Analysis stopped**: {report.message}")
    for function in chosen:
        sections.append(f"## {function.qualname}\n\n" + function_markdown(function, report))
        for brk in report.breaks:
            if brk.function == function.qualname:
                sections.append(f"### line {brk.span.line}: {brk.title}\n\n" + break_markdown(brk, function))
    return "\n\n".join(sections)


def hover_markdown(report: FileReport, line: int, column: int) -> str | None:
    """Markdown for a 1-based line and 0-based character column, or None if nothing is there."""
    functions = {f.qualname: f for f in report.functions}
    for brk in report.breaks:
        if brk.span.contains(line, column):
            return break_markdown(brk, functions.get(brk.function))
    for function in report.functions:
        if any(span.contains(line, column) for span in function.hover_spans):
            return function_markdown(function, report)
    return None
