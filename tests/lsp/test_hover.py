"""Hovers and the break report, from real analyses: what to do first, Dynamo's snippet fenced,
places named for the reader, every hint in the report, and short enough for VS Code's hover."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from gbls.engine import views
from gbls.engine.model import FileReport
from gbls.engine.sources import Sources, read_source
from gbls.lsp.actions import offer
from gbls.lsp.diagnostics import file_diagnostics
from gbls.lsp.hover import function_report, hover_markdown
from gbls.lsp.markdown import Where

from ..support import FIXTURES
from ..support.torchlog import logged_breaks, logged_compiles
from ..support.worker import Analyse

# VS Code's hover at its default size, in a 1280 by 900 window (as tests/test_vscode.py's end-to-end
# test measures it): 750 px wide, about 100 characters of its 13 px font a line; 250 px high, which
# holds 10 lines at 19 px with the margins between paragraphs. Above gbls's markdown it shows the
# diagnostic: its message and a line per related location.
WIDTH = 100
BUDGET = 10


def shown_lines(markdown: str) -> int:
    """The lines ``markdown`` takes in the hover: each paragraph wrapped at ``WIDTH`` characters of
    what is shown (a link's text, not its target), a fenced block a line per line and one for its
    padding."""
    shown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown).replace("**", "").replace("\\", "")
    lines = 0
    for block in shown.split("\n\n"):
        if block.startswith("```"):
            lines += block.count("\n")  # its lines between the fences, and the padding
        else:
            lines += sum(math.ceil(len(line) / WIDTH) for line in block.split("\n"))
    return lines


def hover(report: FileReport, path: Path, code: str, where: Where | None = None) -> str:
    """The hover of the break ``code`` in the file ``path`` as the server shows it there (on the
    break, or where it splits a graph of the file), with the fix the server would name."""
    view = views.by_file(report)[str(path)]
    (brk,) = [b for b in view.breaks + view.splits if b.code == code]
    at = brk.span if brk.path == str(path) else brk.split.span if brk.split else brk.span
    sources = Sources(read_source)
    markdown = hover_markdown(
        view,
        at.line,
        at.column,
        where or Where(str(path), str(FIXTURES)),
        lambda b: offer(b, str(path), sources, [str(FIXTURES)], lambda fix, brk: (True, None)),
        tuple(f for f in report.functions if f.path != str(path)),  # as the server's compiled_elsewhere
    )
    assert markdown is not None
    return markdown


@pytest.mark.parametrize(
    "name, code",
    [
        ("lsp/main.py", "GB0059"),  # a print two calls down
        ("engine/print_body.py", "GB0059"),
        ("engine/branch_item.py", "GB0170"),  # with Dynamo's snippet
        ("engine/branch_item.py", "GB0124"),
        ("engine/explicit_break.py", "GB0025"),
    ],
)
async def test_the_common_breaks_fit_vs_codes_hover_at_its_default_size(
    analyse_file: Analyse, name: str, code: str
) -> None:
    path = FIXTURES / name
    report = await analyse_file(path)
    lines = Sources(read_source).lines
    (brk,) = [b for b in report.breaks if b.code == code]
    where = Path(brk.path)  # the root cause's file: its diagnostic and its hover are there
    (diagnostic,) = [
        d
        for d in file_diagnostics(views.by_file(report)[brk.path], where.read_text(), "warning", lines)
        if d.code == code
    ]
    above = 1 + len(diagnostic.related_information or [])
    markdown = hover(report, where, code)
    assert above + shown_lines(markdown) <= BUDGET, markdown


async def test_the_hover_leads_with_what_to_do_then_why(analyse_file: Analyse) -> None:
    path = FIXTURES / "lsp" / "main.py"
    report = await analyse_file(path)
    markdown = hover(report, path, "GB0059")
    gb0059 = "[GB0059](https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html)"
    # What broke, in torch's words, beside its GB id: the diagnostic above says it in gbls's.
    why = f"**Failed to trace builtin operator** ({gb0059}): "
    # Before any proof: the first fix offered, the one that keeps the output.
    # (Markdown's escape before the underscore that starts a word.)
    reorder = (
        "Let Dynamo print after the graph: the same output "
        "(torch.\\_dynamo.config.reorderable_logging_functions)"
    )
    assert markdown.startswith(f"**To do:** {reorder}. {why}")
    # The chain links to each step (VS Code opens file: links from hovers), other files by their name.
    helpers = (FIXTURES / "lsp" / "helpers.py").as_uri()
    assert f"`middle` ([lsp/helpers.py:7]({helpers}#L7))" in markdown
    assert "**How `g` splits**: graph 1 · 1 op (line 8) → **break at line 9** → " in markdown
    # Without a fix to name, Dynamo's first hint says what to do.
    (brk,) = report.breaks
    assert brk.split is not None  # g's graph splits in main.py, at its call of the helpers
    at = brk.split.span
    view = views.by_file(report)[str(path)]
    bare = hover_markdown(view, at.line, at.column, Where(str(path), str(FIXTURES)))
    first = brk.cause.hints[0].rstrip(".")
    assert bare is not None and bare.startswith(f"**To do:** {first}. **Failed to trace builtin operator**")


async def test_dynamos_snippet_is_a_fenced_block_naming_files_in_the_workspace(analyse_file: Analyse) -> None:
    path = FIXTURES / "engine" / "branch_item.py"
    markdown = hover(await analyse_file(path), path, "GB0170")
    assert (
        "The branch condition involves a tensor computed as follows:\n\n```python\n"
        '# File "engine/branch_item.py", line 6, in branchy, code: if x.sum() > 0:\n'
        "gt = gt(sum_1, 0)\n```"
    ) in markdown
    assert str(FIXTURES) not in markdown


async def test_a_story_in_another_file_names_it(analyse_file: Analyse) -> None:
    """``train.py`` compiles ``TinyNet`` of ``model.py``: the graphs' lines are model.py's. On the
    print in model.py the hover tells how TinyNet splits (it is compiled elsewhere: the server's
    ``compiled_elsewhere``); on the compile site in train.py it names model.py for its lines."""
    folder = FIXTURES / "lsp" / "stories"
    path = folder / "train.py"
    report = await analyse_file(path)
    model = folder / "model.py"
    on_the_print = hover(report, model, "GB0059", Where(str(model), str(folder)))
    assert (
        "**How `TinyNet` splits**: graph 1 · 1 op (line 11) → **break at line 12** → graph 2 · 1 op (line 13)"
        in on_the_print
    )
    view = views.by_file(report)[str(path)]
    (function,) = view.functions
    site = function.hover_spans[0]
    on_the_site = hover_markdown(view, site.line, site.column, Where(str(path), str(folder)))
    assert on_the_site is not None
    assert (
        "**Graphs** (in model.py): graph 1 · 1 op (line 11) → break at line 12: Failed to trace builtin "
        "operator (print) → graph 2 · 1 op (line 13)"
    ) in on_the_site


async def test_the_report_has_every_hint_and_no_links(analyse_file: Analyse) -> None:
    """VS Code shows the report in its markdown preview, which does not follow file: links."""
    path = FIXTURES / "lsp" / "main.py"
    report = await analyse_file(path)
    markdown = function_report(
        views.by_file(report)[report.path], "g", Where(str(path), str(FIXTURES), links=False)
    )
    (brk,) = report.breaks
    assert "](file:" not in markdown
    assert (
        "**Chain:** `g` (line 9) → `middle` (lsp/helpers.py:7) → `helper` (lsp/helpers.py:2): the cause"
        in markdown
    )
    assert "**More hints**\n" + "\n".join(f"- {hint}" for hint in brk.cause.hints[1:]) in markdown


async def test_a_break_without_a_fix_says_why(analyse_file: Analyse) -> None:
    """An exception raised past what the compiled function computed (GB0088: its check reads ``y``,
    and the return computes ``y * 2``): no fix of gbls's fits it, and its hover says so."""
    path = FIXTURES / "hover" / "unfixed_exception.py"
    markdown = hover(await analyse_file(path), path, "GB0088")
    assert "No quick fix: gbls's catalogue has no fix for this break in code of this shape." in markdown


async def test_a_callee_run_as_a_frame_of_its_own_is_said_so_not_nested(analyse_file: Analyse) -> None:
    """torch's log has the .item() break in summarize's own resume function (the helper translated as
    a frame of its own after its print split forward at the call): the hover says that, never
    "nested graph break" (off here). In a folder of its own: torch's log runs every file of the folder
    (fixtures/lsp's slow.py sleeps for a minute)."""
    path = FIXTURES / "hover" / "own_frame.py"
    (item,) = [b for b in logged_breaks(path) if b.gb_ids[:1] == ["GB0124"] or "item" in b.text]
    (frame,) = [c for c in logged_compiles(path) if c.compile_id == f"{item.frame_id}/{item.compile_id}"]
    assert frame.function.startswith("torch_dynamo_resume_in_summarize")  # not forward's frame
    report = await analyse_file(path)
    where = Where(str(path), str(FIXTURES), links=False, qualname=Sources(read_source).qualname)
    markdown = hover(report, path, "GB0124", where)
    assert "`summarize` runs as a frame of its own: `Net.forward`'s graph split at the call" in markdown
    assert "nested" not in markdown.lower()
    # The chain names methods with their classes, as the server's hovers do.
    assert (
        "**Chain:** `Net.forward` (line 21) → `summarize` (line 11): the cause (the graph splits" in markdown
    )


async def test_a_callee_run_as_a_frame_of_its_own_is_the_graph_its_break_splits(
    analyse_file: Analyse,
) -> None:
    """The diagnostic's related line where the graph splits names the graph the hover says the break
    splits (``summarize``'s, its frame of its own, where torch's log has the break in summarize's
    resume function: see the test above), not the compiled module's."""
    path = FIXTURES / "hover" / "own_frame.py"
    report = await analyse_file(path)
    view = views.by_file(report)[str(path)]
    lines = Sources(read_source).lines
    (item,) = [d for d in file_diagnostics(view, path.read_text(), "warning", lines) if d.code == "GB0124"]
    related = [info.message for info in item.related_information or []]
    (brk,) = [b for b in view.breaks if b.code == "GB0124"]
    graph = "summarize" if brk.own_frame else "Net"  # torch 2.6 translates summarize inline
    assert [message for message in related if "splits here" in message] == [
        f"the graph of {graph} splits here"
    ]
    said = hover(
        report, path, "GB0124", Where(str(path), str(FIXTURES), qualname=Sources(read_source).qualname)
    )
    assert ("this break splits `summarize`'s graph" in said) == bool(brk.own_frame)
