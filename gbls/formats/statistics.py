"""``--statistics``: what each compiled function cost to compile, as Dynamo measured it, costliest
first: its compilations, their translation time, the most guards one of its compiled versions
checks, its graphs and ops, its breaks, and what recompiling cost and for what."""

from __future__ import annotations

from ..engine import costs
from ..engine.model import FileReport
from .common import relative

HEADER = ("compiled function", "compilations", "translation", "guards", "graphs", "ops", "breaks")


def render(reports: list[FileReport]) -> str:
    """A table, one row per analysed compiled function with measured compilations, the costliest
    first; each row's total in words below the table."""
    rows: list[tuple[float, tuple[str, ...], str]] = []
    for report in reports:
        for function in report.functions:
            if not function.costs:
                continue
            recompiles = report.recompiles_of(function.qualname)
            place = f"{relative(function.path)}:{function.line} {function.qualname}"
            cells = (
                place,
                str(function.compilations),
                costs.seconds(function.seconds),
                str(max(cost.guards for cost in function.costs)),
                str(len(function.graphs)),
                str(function.ops),
                str(len(report.breaks_of(function.qualname))),
            )
            rows.append((function.seconds, cells, costs.summary(function, recompiles)))
    if not rows:
        return "No compilation measured.\n"
    rows.sort(key=lambda row: -row[0])
    widths = [
        max(len(cells[index]) for cells in [HEADER, *(row[1] for row in rows)])
        for index in range(len(HEADER))
    ]

    def line(cells: tuple[str, ...]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join(
            [first, *(cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True))]
        )

    total = sum(row[0] for row in rows)
    lines = [line(HEADER), *(line(cells) for _, cells, _ in rows)]
    functions = costs.plural(len(rows), "compiled function")
    lines.append(f"Translation in all: {costs.seconds(total)}, in {functions}.")
    lines += [said for _, _, said in rows]
    return "\n".join(lines) + "\n"
