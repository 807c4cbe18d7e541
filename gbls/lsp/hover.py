"""Hover text, in markdown: a break (what to do first, then why, the chain, how the function splits),
a recompilation (which guard failed, how often, the recompile limit, the documented remedies) and a
compiled function's summary. ``function_report`` is also what the "show break report" command shows.

A break's hover is short enough for VS Code's hover at its default size for the common breaks: its
diagnostic's title is above it already, so it starts with what to do.
"""

from __future__ import annotations

from collections.abc import Callable

from ..engine import costs
from ..engine.model import (
    BreakReport,
    FileReport,
    FileView,
    FunctionReport,
    Provenance,
    RecompileReport,
    ShapeReport,
    StanceReport,
    costliest_first,
)
from ..engine.recompiles import remedies
from ..manual import page
from ..worker.shared.protocol import EAGER, Graph
from .markdown import Where, explanation, prose

# The compilations a hover lists; the report lists every one.
HOVER_ROWS = 8

# A break's preferred fix's title, if it has a fix (the fix policy's word, from the server), and
# why it has none otherwise ("" when nobody said).
FixOf = Callable[[BreakReport], tuple[str | None, str]]

# What each hint class torch gives means, for the hover.
CLASSES = {
    "user_error": "an error in the code",
    "dynamo_bug": "a Dynamo bug",
    "difficult": "hard to debug",
    "fundamental": "fundamental",
    "supportable": "something Dynamo could support",
    "caused_by_earlier_break": "possibly caused by an earlier break",
}


def no_fix(brk: BreakReport) -> tuple[None, str]:
    return None, ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def break_markdown(
    brk: BreakReport,
    function: FunctionReport | None,
    where: Where,
    fix: str | None = None,
    full: bool = False,
    unfixed: str = "",
) -> str:
    """What to do (the preferred fix, else Dynamo's first hint) and why (what broke, in torch's
    words, and Dynamo's explanation), the chain down to the cause, how the function splits;
    ``unfixed``: why there is no quick fix; ``full`` (the report): Dynamo's other hints too.
    Without them a hover fits VS Code's at its default size, under the diagnostic's own lines."""
    hints = [prose(hint) for hint in brk.hints]
    todo = prose(fix) if fix else (hints.pop(0) if hints else "")
    code = f"[{brk.code}]({brk.url})" if brk.url else brk.code
    hits = f", hit {brk.count} times" if brk.count > 1 else ""
    # What broke, in torch's words (the diagnostic above says it in gbls's), then why.
    why = f"**{brk.gb_type}** ({code}{hits}): {explanation(brk.explanation, where)}"
    parts = [f"**To do:** {todo.rstrip('.')}. {why}" if todo else why]
    if not fix and unfixed:
        parts.append(f"No quick fix: {unfixed}.")
    if brk.raises:
        parts.append(f"⛔ `{brk.raises.split(':')[0]}`: this break raises at run time.")
    # The user's own code goes without saying (the JSON and SARIF have its classes): the hover stays short.
    if brk.owner != "user" or "caused_by_earlier_break" in brk.cause.classes:
        kinds = ", ".join(CLASSES[kind] for kind in brk.cause.classes if kind in CLASSES)
        asks = f" · {brk.torch_asks}" if brk.torch_asks else ""
        parts.append(f"Who can act: {brk.who}{asks}" + (f" · torch classes it as {kinds}" if kinds else ""))
    if brk.nested:
        parts.append(f"Nested graph break: the graph {brk.nested}.")
    elif brk.own_frame:
        callee, caller = where.named(brk.split_frame), where.named(brk.chain[brk.cause.split - 1])
        parts.append(
            f"`{callee}` runs as a frame of its own: `{caller}`'s graph split at the call (an earlier "
            f"break in it), and this break splits `{callee}`'s graph."
        )
    if brk.eager:
        reason = brk.eager_reason or "Dynamo skipped the frame"
        parts.append(f"⚠ `{brk.function}` {brk.eager}: {prose(reason)}")
    if len(brk.chain) > 1 or brk.root.path != where.here:
        steps = [f"`{where.named(at)}` ({where.link(at.path, at.span.line)})" for at in brk.chain]
        splits = f" (the graph splits at step {brk.cause.split + 1})" if brk.cause.split else ""
        parts.append("**Chain:** " + " → ".join(steps) + f": the cause{splits}")
    if function is not None and function.graphs:
        parts.append(f"{_story_title(function, where)}: {split_story(function, brk, where)}")
    if brk.costs and full:  # the report's: the hover stays short
        parts.append(f"**Cost**: {break_cost(brk)}.")
    if hints and full:
        parts.append("**More hints**\n" + "\n".join(f"- {hint}" for hint in hints))
    if brk.cause.gaps:
        parts.append("_Not from your torch_: " + "; ".join(brk.cause.gaps) + ".")
    if brk.provenance is not None:
        parts.append(_imported(brk.provenance))
    return "\n\n".join(parts)


def break_cost(brk: BreakReport) -> str:
    """``0.27 s of translation: 0/0 restarted for it, 1/0 translated the code after it``"""
    restarted = [c.compile_id for c in brk.costs if c.resumes_at is None]
    after = [c.compile_id for c in brk.costs if c.resumes_at is not None]
    said = []
    if restarted:
        said.append(f"{', '.join(restarted)} restarted for it")
    if after:
        said.append(f"{', '.join(after)} translated the code after it")
    return f"{costs.seconds(brk.seconds)} of translation: " + "; ".join(said)


def cost_table(function: FunctionReport, report: FileReport, limit: int | None = None) -> str:
    """Each compilation of ``function`` as a row: compile id, translation, guards, graphs and ops, why
    (and the restarts, and whether its graph was computed); at most ``limit`` rows, the costliest."""
    rows = costs.rows(function, report.recompiles_of(function.qualname))
    shown = (
        rows if limit is None or len(rows) <= limit else sorted(rows, key=lambda r: -r.cost.seconds)[:limit]
    )
    lines = ["| compile id | translation | guards | graphs · ops | why |", "| --- | --- | --- | --- | --- |"]
    for row in sorted(shown, key=lambda r: rows.index(r)):
        cost = row.cost
        why = (
            row.why
            + (f"; {row.restarts}" if row.restarts else "")
            + ("" if row.computed else "; not computed")
        )
        backend = f" ({costs.seconds(cost.backend_seconds)} backend)" if cost.backend_seconds >= 0.1 else ""
        lines.append(
            f"| {cost.compile_id} | {costs.seconds(cost.seconds)}{backend} | {cost.guards} | "
            f"{cost.graphs} · {cost.ops} | {prose(why)} |"
        )
    if len(shown) < len(rows):
        lines.append(f"\n{len(rows) - len(shown)} more in the report (the costliest are shown).")
    return "\n".join(lines)


def shape_line(found: ShapeReport, where: Where) -> str:
    at = where.line(found.path, found.span.line)
    return f"{found.message} ({at})"


def stance_markdown(found: StanceReport) -> str:
    return f'**`torch.compiler.set_stance("{found.stance.stance}")`**: {found.message.split(": ", 1)[1]}.'


def _imported(provenance: Provenance) -> str:
    """Where an imported finding comes from: not this analysis, but a real run's record."""
    ids = f"; compile ids {', '.join(provenance.compile_ids)}" if provenance.compile_ids else ""
    return f"_From a real run_: {provenance.said}{ids}."


def recompile_markdown(found: RecompileReport, where: Where, shapes: tuple[ShapeReport, ...] = ()) -> str:
    """``shapes``: torch's decisions about the sizes of what the recompilations are about."""
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
        what += f", installed in `{at.function}` ({where.link(at.path, at.span.line)})"
    parts.append(what + ".")
    if guard is not None and guard.hint:
        parts.append(f"Dynamo's hint: {guard.hint}")
    spent = {cost.compile_id: cost for cost in found.costs}
    steps = [
        f"- {r.compile_id}: "
        + (
            f"`{r.guard.text}` failed (a check of {r.guard.failed})"
            if r.guard and r.guard.text
            else "no reason given"
        )
        + (f"; refused by `{r.limit}`" if r.limit else "")
        + (
            f" · {costs.seconds(spent[r.compile_id].seconds)}, {spent[r.compile_id].guards} guards"
            if r.compile_id in spent
            else ""
        )
        for r in found.recompiles
    ]
    total = f" ({costs.seconds(found.seconds)} of translation)" if found.costs else ""
    parts.append(f"**Recompilations**{total}\n" + "\n".join(steps))
    if shapes:
        parts.append("**Sizes**\n" + "\n".join(f"- {shape_line(shape, where)}" for shape in shapes))
    parts.append("**What to do**\n" + "\n".join(f"- {remedy}" for remedy in remedies(found)))
    if found.provenance is not None:
        parts.append(_imported(found.provenance))
    parts.append(f"[PyTorch: recompilation]({found.url}) · [gbls: recompilations]({page('recompilations')})")
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


def _story_title(function: FunctionReport, where: Where) -> str:
    """``**How `g` splits**``, naming the function's file when that is not the one at hand: the lines
    of its graphs are that file's."""
    elsewhere = f" (in {where.file(function.code_path)})" if function.code_path != where.here else ""
    return f"**How `{function.qualname}` splits**{elsewhere}"


def split_story(function: FunctionReport, breaks: BreakReport | tuple[BreakReport, ...], where: Where) -> str:
    """``graph 1 · 2 ops (line 8) → break at line 9 … → graph 2 · 1 op``: the function's graphs in
    order, by the lines of the function's file; a break placed elsewhere names its file."""
    own_breaks = (breaks,) if isinstance(breaks, BreakReport) else breaks
    own = _own_frame(function)
    lines = Where(function.code_path, where.folder, where.links, where.cells, where.qualname)
    items: list[tuple[int, int, str]] = []
    callee: list[Graph] = []
    told: set[str] = set()
    number = 0
    for graph in function.graphs:
        if graph.frame != own:
            callee.append(graph)
            continue
        number += 1
        at = f" ({lines.position(function.code_path, graph.first_line)})" if graph.first_line else ""
        # Before a break on its first line: that line computes what the graph splits on (a condition).
        items.append((graph.first_line or 0, 0, f"graph {number} · {_plural(graph.ops, 'op')}{at}"))
    for brk in own_breaks:
        # Where the function's own code splits: the chain's step in its file, else the analysed file's line.
        split = next((at for at in brk.chain if at.path == function.code_path), None)
        line = split.span.line if split else brk.span.line
        at = lines.position(function.code_path, line) if split else where.line(brk.path, brk.span.line)
        # One break's story (its hover) is about that break: its title is above it already.
        text = (
            f"**break at {at}**" if isinstance(breaks, BreakReport) else f"break at {at}: {prose(brk.title)}"
        )
        eager = [g for g in callee if g.frame in brk.via and g.frame not in told]
        told.update(g.frame for g in eager)  # two breaks in one callee: its graphs told once
        if eager:
            frames = ", ".join(dict.fromkeys(f"`{g.frame}`" for g in eager))
            ops = sum(g.ops for g in eager)
            text += f" → eager call: {_plural(len(eager), 'graph')} in {frames} ({_plural(ops, 'op')})"
        items.append((line if split else 0, 1, text))
    items.sort()
    return " → ".join(text for _, _, text in items) or "no graph"


def function_markdown(function: FunctionReport, report: FileReport, where: Where, full: bool = False) -> str:
    """``full`` (the report): every compilation, not only the costliest."""
    kind = {"module": "compiled module", "method": "compiled method"}.get(function.kind, "compiled function")
    lines = [f"**`{function.qualname}`** · {kind}"]
    untranslated = _untranslated(function, report)
    if untranslated:
        return "\n\n".join([*lines, *untranslated])
    breaks = costliest_first(report.breaks_of(function.qualname))
    counts = " · ".join(
        (_plural(len(function.graphs), "graph"), _plural(len(breaks), "break"), _plural(function.ops, "op"))
    )
    if function.recompiled:
        counts = f"{_plural(function.compilations, 'compilation')} · {counts}"
    if function.suppressed:
        counts += f" · {function.suppressed} suppressed"
    lines.append(counts)
    if len(function.target.frames) > 1:
        lines.append("**Compilations**, frame by frame as torch counts them: " + _frames_told(function))
    if target_processes := function.target.processes:
        lines.append(f"Compiled in {', '.join(target_processes)} of the program.")
    if not breaks and len(function.graphs) == 1:
        lines.append("fullgraph-clean: one graph, no break.")
    source = {
        "module": "calls the module makes",
        "example": "declared examples",
        "synthesized": "synthesized inputs",
    }
    target = function.target
    lines.append(f"Inputs ({source.get(target.input_source, 'unknown')}): `{target.inputs or 'none'}`")
    if function.not_computed:
        lines.append(f"Values: {function.not_computed}.")
    spent = costs.summary(function, report.recompiles_of(function.qualname))
    if spent:
        lines.append(f"**Cost**: {spent}.\n\n" + cost_table(function, report, None if full else HOVER_ROWS))
    if report.cut is not None:
        lines.append(f"The run was {report.cut.message}.")
    lines += _graphs_told(function, breaks, where)
    lines += [_recompile_summary(found) for found in report.recompiles_of(function.qualname)]
    shapes = report.shapes_of(function.qualname)
    if shapes:
        lines.append("**Sizes**\n" + "\n".join(f"- {shape_line(shape, where)}" for shape in shapes))
    return "\n\n".join(lines)


def _untranslated(function: FunctionReport, report: FileReport) -> list[str]:
    """Why the function has no graphs of its own to tell: the program never takes it, no inputs
    reached it, or it is traced inline in another; nothing if it has."""
    if function.untaken:  # what the run is: inputs would not make it so
        return [f"{prose(function.reason[0].upper() + function.reason[1:])}."]
    if not function.analysed:
        lines = [f"Not analysed: {prose(function.reason)}."]
        if report.cut is None:  # inputs cannot help a function the program was cut before
            # No shape of gbls's guessing: a GPT's forward takes token ids, not torch.randn(4, 8).
            lines.append(
                "Declare inputs with a comment above it: `# gbls: example(...)`, the arguments as the code "
                "that calls it passes them"
            )
        return lines
    if function.target.inlined:
        outer = function.target.inlined
        return [
            f"Traced inline in `{outer}`: its code is part of `{outer}`'s graphs, its breaks `{outer}`'s."
        ]
    return []


def _graphs_told(function: FunctionReport, breaks: tuple[BreakReport, ...], where: Where) -> list[str]:
    """How the function's graphs split, which break to fix first, and where Dynamo gives up."""
    lines = []
    if function.graphs:
        elsewhere = f" (in {where.file(function.code_path)})" if function.code_path != where.here else ""
        lines.append(f"**Graphs**{elsewhere}: " + split_story(function, breaks, where))
    if len(breaks) > 1:
        order = " → ".join(f"{where.line(brk.path, brk.span.line)} ({prose(brk.title)})" for brk in breaks)
        lines.append(f"**Fix first**: {order}")
    if any(b.effect == EAGER and b.cause.eager_from is None for b in breaks):
        lines.append("⚠ Dynamo gives up on this function: it runs entirely in eager mode.")
    for line in sorted({b.cause.eager_from for b in breaks if b.cause.eager_from is not None}):
        after = where.line(function.code_path, line)
        lines.append(f"⚠ Dynamo gives up on the rest of this function: after {after} it runs in eager mode.")
    return lines


def _frames_told(function: FunctionReport) -> str:
    """``g``: 2 compilations · ``g`` after its break at line 7: 3 compilations · ``helper`` (called
    from ``g``): 1 compilation"""
    told = []
    for frame in function.target.frames:
        name = f"`{frame.frame}`"
        if frame.resumes_at is not None:
            name += f" after its break at line {frame.resumes_at}"
        if not frame.own:
            name += f" (called from `{function.name}`)"
        told.append(f"{name}: {_plural(frame.compilations, 'compilation')}")
    return " · ".join(told)


def function_report(
    report: FileView,
    qualname: str | None,
    where: Where,
    fix_of: FixOf = no_fix,
    compiled_elsewhere: tuple[tuple[FunctionReport, FileReport], ...] = (),
) -> str:
    """The full break report of one function (or of every function), for the report command.
    ``compiled_elsewhere``: the functions compiled in other files whose breaks are in this one, each
    with the analysis that ran it: their sections list those breaks."""
    chosen = [f for f in report.functions if qualname in (None, f.qualname)]
    sections = [f"# gbls report: {where.file(report.path)}"]
    if report.torch:  # a folder of its own may have its own interpreter, and torch
        sections.append(f"Analysed with torch {report.torch}.")
    if report.message:
        sections.append(f"**Analysis stopped**: {report.message}")
    if report.cut is not None:
        sections.append(f"**Run cut**: {report.cut.message}.")
    for function in chosen:
        sections.append(f"## {function.qualname}\n\n" + function_markdown(function, report, where, full=True))
        sections += _break_sections(report.breaks_of(function.qualname), function, where, fix_of)
        for found in report.recompiles_of(function.qualname):
            if not found.settled:
                title = f"{where.line(report.path, found.span.line)}: recompiled {found.count} times"
                shapes = _shapes_of(report, found)
                sections.append(f"### {title}\n\n" + recompile_markdown(found, where, shapes))
    for function, analysis in compiled_elsewhere:
        if qualname not in (None, function.qualname):
            continue
        run = f", by the run `{analysis.origin}`" if analysis.origin else ""
        site = f"Compiled at {where.line(function.path, function.span.line)}{run}."
        summary = function_markdown(function, analysis, where)
        sections.append(f"## {function.qualname}\n\n{site}\n\n{summary}")
        here = tuple(b for b in analysis.breaks_of(function.qualname) if b.path == report.path)
        sections += _break_sections(here, function, where, fix_of)
    return "\n\n".join(sections)


def _break_sections(
    breaks: tuple[BreakReport, ...], function: FunctionReport, where: Where, fix_of: FixOf
) -> list[str]:
    sections = []
    for brk in costliest_first(breaks):
        title = f"{where.line(brk.path, brk.span.line)}: {prose(brk.title)}"
        fix, unfixed = fix_of(brk)
        markdown = break_markdown(brk, function, where, fix, full=True, unfixed=unfixed)
        sections.append(f"### {title}\n\n{markdown}")
    return sections


def _shapes_of(report: FileReport, found: RecompileReport) -> tuple[ShapeReport, ...]:
    """torch's decisions about the sizes a recompilation's checks are on."""
    guard = found.guard
    if guard is None or guard.kind != "shape":
        return ()
    return tuple(s for s in report.shapes_of(found.function) if s.shape.subject == guard.subject)


def hover_markdown(
    report: FileView,
    line: int,
    column: int,
    where: Where,
    fix_of: FixOf = no_fix,
    compiled_elsewhere: tuple[FunctionReport, ...] = (),
) -> str | None:
    """Markdown for a 1-based line and 0-based character column, or None if nothing is there.
    ``compiled_elsewhere``: the functions compiled in other files whose breaks are in this one (a
    model's, compiled in ``train.py``): a break's hover tells their chain and how they split."""
    functions = {f.qualname: f for f in (*compiled_elsewhere, *report.functions)}
    at = [brk for brk in report.breaks if brk.span.contains(line, column)]
    at += [b for b in report.splits if b.split is not None and b.split.span.contains(line, column)]
    if at:
        fix, unfixed = fix_of(at[0])
        return break_markdown(at[0], functions.get(at[0].function), where, fix, unfixed=unfixed)
    for found in report.problems:
        if found.span.contains(line, column):
            return recompile_markdown(found, where, _shapes_of(report, found))
        if found.raises_at is not None and found.raises_at.span.contains(line, column):
            return f"⛔ {prose(found.raise_message)}.\n\n" + recompile_markdown(
                found, where, _shapes_of(report, found)
            )
    for shape in report.shapes:
        if shape.span.contains(line, column):
            return shape_line(shape, where)
    for stance in report.stances:
        if stance.span.contains(line, column):
            return stance_markdown(stance)
    for function in report.functions:
        if any(span.contains(line, column) for span in function.hover_spans):
            return function_markdown(function, report, where)
    return None
