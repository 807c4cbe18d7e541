"""Which breaks matter and whose they are: torch's own class of each hint, who can act on a break
(the user's code, a library, PyTorch), and a function's breaks in the order to fix them."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from gbls.engine.model import BreakReport, FileReport, Location, costliest_first
from gbls.engine.ranges import Span
from gbls.formats import json as json_format
from gbls.formats import sarif
from gbls.lsp.hover import break_markdown
from gbls.lsp.markdown import Where
from gbls.settings import Settings
from gbls.worker.shared.protocol import EAGER, Break, Frame, HintClass

from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.worker import Analyse

# Feature detection, as the worker does it: torch 2.9+ classes its hints (graph_break_hints), 2.6 not.
HINTS_MODULE = "torch._dynamo.graph_break_hints"
CLASS_LISTS = (
    ("USER_ERROR", "user_error"),
    ("DYNAMO_BUG", "dynamo_bug"),
    ("DIFFICULT", "difficult"),
    ("FUNDAMENTAL", "fundamental"),
    ("SUPPORTABLE", "supportable"),
    ("CAUSED_BY_EARLIER_GRAPH_BREAK", "caused_by_earlier_break"),
)


def classes_of_logged(hints: list[str]) -> tuple[str, ...]:
    """The classes torch's own lists give the hints its log printed (their first lines)."""
    if importlib.util.find_spec(HINTS_MODULE) is None:
        return ()
    known = importlib.import_module(HINTS_MODULE)
    return tuple(
        name
        for attribute, name in CLASS_LISTS
        if any(hint.splitlines()[0].strip() in hints for hint in getattr(known, attribute))
    )


async def test_hint_classes_are_those_torch_gives_the_hints_it_logs(analyse_file: Analyse) -> None:
    fixture = FIXTURES / "engine" / "branch_item.py"
    report = await analyse_file(fixture)
    logged = logged_breaks(fixture)
    for brk in report.breaks:
        entries = [e for e in logged if brk.gb_id in e.gb_ids or brk.gb_type in e.gb_types]
        expected = classes_of_logged(entries[0].hints) if entries else ()  # torch 2.6 logs text only
        assert brk.cause.classes == expected, (brk.gb_type, entries)
        assert brk.owner == "user" and brk.who == "your code"
    branch = next(brk for brk in report.breaks if brk.gb_id == "GB0170")
    if branch.cause.classes:
        assert branch.cause.classes == ("fundamental",)
        hover = break_markdown(branch, None, Where(branch.path, str(FIXTURES)))
        assert "Who can act" not in hover and "classes" not in hover  # your code: the hover stays short
        result = sarif.render([report], Settings())
        tags = [r["properties"]["tags"] for r in json.loads(result)["runs"][0]["results"]]
        assert ["fundamental", "owner:user"] in tags
    document = json.loads(json_format.render([report], "", {}))
    found = document["files"][0]["breaks"]
    assert [b["classes"] for b in found] == [list(b.cause.classes) for b in report.breaks]
    assert all(b["owner"] == {"kind": "user", "library": None} for b in found)


def made(
    function: str,
    path: str,
    line: int,
    classes: tuple[HintClass, ...] = (),
    eager: bool = False,
    eager_from: int | None = None,
    count: int = 1,
) -> BreakReport:
    location = Location(path, function, Span(line, 4, line, 9))
    cause = Break(
        function,
        "a graph break",
        "GB0059",
        None,
        "",
        (),
        "",
        (Frame(path, function, line, 4, 9),),
        count=count,
        effect=EAGER if eager else "split",
        eager_from=eager_from,
        classes=classes,
    )
    return BreakReport(cause, path, location.span, (location,), "print")


def test_who_can_act_on_a_break(tmp_path: Path) -> None:
    mine = str(tmp_path / "model.py")
    library = "/venv/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py"
    torch_file = "/venv/lib/python3.11/site-packages/torch/nn/functional.py"
    assert (made("f", mine, 3).owner, made("f", mine, 3).who) == ("user", "your code")
    assert (made("f", library, 3).owner, made("f", library, 3).who) == ("library", "the library transformers")
    assert made("f", torch_file, 3).who == "PyTorch"
    # torch says Dynamo could trace it, or is wrong about it: PyTorch's to act on, wherever it is.
    assert made("f", mine, 3, classes=("supportable",)).owner == "pytorch"
    assert made("f", library, 3, classes=("dynamo_bug",)).owner == "pytorch"
    assert made("f", mine, 3, classes=("fundamental",)).owner == "user"
    # The hover says whose it is when it is not the user's own, with torch's classes.
    where = Where(mine, str(tmp_path))
    bug = break_markdown(made("f", library, 3, classes=("dynamo_bug",)), None, where)
    assert "Who can act: PyTorch · torch classes it as a Dynamo bug" in bug
    assert "Who can act: the library transformers" in break_markdown(made("f", library, 3), None, where)


def test_a_functions_breaks_in_the_order_to_fix_them(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    split = made("f", path, 3)
    hit_twice = made("f", path, 9, count=2)
    rest_eager = made("f", path, 12, eager=True, eager_from=10)
    all_eager = made("f", path, 15, eager=True)
    in_lines = (split, hit_twice, rest_eager, all_eager)
    assert costliest_first(in_lines) == (all_eager, rest_eager, hit_twice, split)
    report = FileReport(path, "ok", "", "", None, (), in_lines, (), "", "", 0.0)
    ranks = [b["rank"] for b in json.loads(json_format.render([report], "", {}))["files"][0]["breaks"]]
    assert ranks == [4, 3, 2, 1]
