"""Hover text, in markdown: a break (why, what to do, the chain, how the function splits), a
recompilation (which guard failed, how often, the recompile limit, the documented remedies) and a
compiled function's summary. ``function_report`` is also what the "show break report" command shows.
"""

from __future__ import annotations

import os

from pygls import uris

from ..engine.model import BreakReport, FileReport, FunctionReport, Location, Provenance, RecompileReport
from ..engine.recompiles import remedies
from ..worker.shared.protocol import EAGER, Graph


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
    if brk.cause.gaps:
        parts.append("_Not from your torch_: " + "; ".join(brk.cause.gaps) + ".")
    if brk.provenance is not None:
        parts.append(_imported(brk.provenance))
    return "\n\n".join(parts)


def _imported(provenance: Provenance) -> str:
    """Where an imported finding comes from: not this analysis, but a real run's record."""
    ids = f"; compile ids {', '.join(provenance.compile_ids)}" if provenance.compile_ids else ""
    return f"_From a real run_: {provenance.said}{ids}."


def recompile_markdown(found: RecompileReport) -> str:
    times = "once" if found.count == 1 else f"{found.count} times"
    parts = [f"**{found.who} recompiled {times}** · [{found.code}]({found.url})"]
    limit = found.limit
    if limit is not None:
        parts.append(
            f"⚠ At compilation {limit.compile_id} it hit `torch._dynamo.config.{limit.limit}` "
            f"({limit.limit_value}): from then on Dynamo compiles `{found.frame.name}` no more, and a call "
            "that none of its compiled versions fits runs in eager mode."
        )
    guard = found.guard
    what = found.failed[0].upper() + found.failed[1:]
    at = found.guard_at
    if at is not None and (at.path != found.frame.path or at.span != found.span):
        what += f", installed at {_link(at)}"
    parts.append(what + ".")
    if guard is not None and guard.hint:
        parts.append(f"Dynamo's hint: {guard.hint}")
    steps = [
        f"- {r.compile_id}: "
        + (
            f"`{r.guard.text}` failed (a check of {r.guard.failed})"
            if r.guard and r.guard.text
            else "no reason given"
        )
        + (f"; refused by `{r.limit}`" if r.limit else "")
        for r in found.recompiles
    ]
    parts.append("**Recompilations**\n" + "\n".join(steps))
    parts.append("**What to do**\n" + "\n".join(f"- {remedy}" for remedy in remedies(found)))
    if found.provenance is not None:
        parts.append(_imported(found.provenance))
    parts.append(f"[PyTorch: recompilation]({found.url})")
    return "\n\n".join(parts)


def _recompile_summary(found: RecompileReport) -> str:
    if not found.settled:
        return "⚠ " + found.message
    if found.dynamic:
        return (
            f"Recompiled once: {found.failed}; the new graph is dynamic in it (automatic dynamic shapes), "
            "so further calls reuse it. No problem."
        )
    return f"Recompiled once: {found.failed}. Once is no problem."


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
    breaks = report.breaks_of(function.qualname)
    counts = " · ".join(
        (_plural(len(function.graphs), "graph"), _plural(len(breaks), "break"), _plural(function.ops, "op"))
    )
    if function.compilations > 1:
        counts = f"{_plural(function.compilations, 'compilation')} · {counts}"
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
    lines += [_recompile_summary(found) for found in report.recompiles_of(function.qualname)]
    return "\n\n".join(lines)


def function_report(report: FileReport, qualname: str | None) -> str:
    """The full break report of one function (or of every function), for the report command."""
    chosen = [f for f in report.functions if qualname in (None, f.qualname)]
    sections = [f"# gbls report: {os.path.basename(report.path)}"]
    if report.message:
        sections.append(f"**Analysis stopped**: {report.message}")
    for function in chosen:
        sections.append(f"## {function.qualname}\n\n" + function_markdown(function, report))
        for brk in report.breaks_of(function.qualname):
            where = (
                f"line {brk.span.line}"
                if brk.path == report.path
                else f"{os.path.basename(brk.path)}:{brk.span.line}"
            )
            sections.append(f"### {where}: {brk.title}\n\n" + break_markdown(brk, function))
        for found in report.recompiles_of(function.qualname):
            if not found.settled:
                title = f"line {found.span.line}: recompiled {found.count} times"
                sections.append(f"### {title}\n\n" + recompile_markdown(found))
    return "\n\n".join(sections)


def hover_markdown(report: FileReport, line: int, column: int) -> str | None:
    """Markdown for a 1-based line and 0-based character column, or None if nothing is there."""
    functions = {f.qualname: f for f in report.functions}
    for brk in report.breaks:
        if brk.span.contains(line, column):
            return break_markdown(brk, functions.get(brk.function))
    for brk in report.splits:
        if brk.split is not None and brk.split.span.contains(line, column):
            return break_markdown(brk, functions.get(brk.function))
    for found in report.problems:
        if found.span.contains(line, column):
            return recompile_markdown(found)
    for function in report.functions:
        if any(span.contains(line, column) for span in function.hover_spans):
            return function_markdown(function, report)
    return None
