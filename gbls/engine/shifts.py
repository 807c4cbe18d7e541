"""A report moved onto a text whose code tokens sit where they did, only on other lines: every
line in each file it names shifted by that file's line map (``cache`` and ``store`` reuse reports
so, ``incremental`` the parts of one)."""

from __future__ import annotations

import dataclasses

from ..worker.shared.protocol import Code, Frame, Graph, Recompile
from .model import BreakReport, FileReport, FunctionReport, Location, RecompileReport, ShapeReport
from .ranges import Span

Lines = dict[int, int]


def _span(span: Span, lines: Lines) -> Span:
    return dataclasses.replace(
        span, line=lines.get(span.line, span.line), end_line=lines.get(span.end_line, span.end_line)
    )


def _maybe(span: Span | None, lines: Lines) -> Span | None:
    return _span(span, lines) if span is not None else None


def _moved(line: int | None, lines: Lines) -> int | None:
    """A line moved by ``lines`` (None stays None)."""
    return None if line is None else lines.get(line, line)


def _graph(graph: Graph, lines: Lines) -> Graph:
    if not graph.first_line:
        return graph
    return dataclasses.replace(graph, first_line=lines.get(graph.first_line, graph.first_line))


def _location(location: Location, maps: dict[str, Lines]) -> Location:
    return dataclasses.replace(location, span=_span(location.span, maps.get(location.path, {})))


def shifted_break(brk: BreakReport, maps: dict[str, Lines]) -> BreakReport:
    """``brk`` moved by each file's line map."""
    return dataclasses.replace(
        brk,
        span=_span(brk.span, maps.get(brk.path, {})),
        chain=tuple(_location(location, maps) for location in brk.chain),
        split=_location(brk.split, maps) if brk.split is not None else None,
        called_at=_location(brk.called_at, maps) if brk.called_at is not None else None,
        paths=tuple(tuple(_location(location, maps) for location in path) for path in brk.paths),
    )


def _code(code: Code, maps: dict[str, Lines]) -> Code:
    return dataclasses.replace(code, line=maps.get(code.path, {}).get(code.line, code.line))


def _frame(frame: Frame, maps: dict[str, Lines]) -> Frame:
    return dataclasses.replace(frame, line=maps.get(frame.path, {}).get(frame.line, frame.line))


def _recompile(recompile: Recompile, maps: dict[str, Lines]) -> Recompile:
    guard = recompile.guard
    return dataclasses.replace(
        recompile,
        frame=_code(recompile.frame, maps),
        guard=dataclasses.replace(
            guard,
            chain=tuple(_frame(f, maps) for f in guard.chain),
            origin=_frame(guard.origin, maps) if guard.origin else None,
        )
        if guard
        else None,
    )


def shifted_recompile(report: RecompileReport, maps: dict[str, Lines]) -> RecompileReport:
    """``report`` moved by each file's line map."""
    return dataclasses.replace(
        report,
        frame=_code(report.frame, maps),
        recompiles=tuple(_recompile(r, maps) for r in report.recompiles),
        span=_span(report.span, maps.get(report.path, {})),
        guard_at=_location(report.guard_at, maps) if report.guard_at else None,
        origin=_location(report.origin, maps) if report.origin else None,
    )


def shifted_shape(found: ShapeReport, maps: dict[str, Lines]) -> ShapeReport:
    """``found`` moved by each file's line map."""
    return dataclasses.replace(
        found,
        shape=dataclasses.replace(found.shape, chain=tuple(_frame(f, maps) for f in found.shape.chain)),
        span=_span(found.span, maps.get(found.path, {})),
    )


def shifted_function(function: FunctionReport, maps: dict[str, Lines]) -> FunctionReport:
    """``function`` moved: its ranges are in its report's file, its graphs' lines in its code's file."""
    here = maps.get(function.path, {})
    return dataclasses.replace(
        function,
        line=here.get(function.line, function.line),
        span=_span(function.span, here),
        decorator=_maybe(function.decorator, here),
        call=_maybe(function.call, here),
        graphs=tuple(_graph(g, maps.get(function.target.path, {})) for g in function.graphs),
        costs=tuple(
            dataclasses.replace(c, resumes_at=_moved(c.resumes_at, maps.get(function.target.path, {})))
            for c in function.costs
        ),
        target=dataclasses.replace(
            function.target,
            reached=tuple(_code(code, maps) for code in function.reached),
        ),
    )


def shifted(report: FileReport, lines: Lines) -> FileReport:
    """``report`` with every line in its own file moved by ``lines``; other files are untouched."""
    return shifted_files(report, {report.path: lines})


def shifted_files(report: FileReport, maps: dict[str, Lines]) -> FileReport:
    """``report`` with every line in each file of ``maps`` moved by that file's map."""
    return dataclasses.replace(
        report,
        breaks=tuple(shifted_break(b, maps) for b in report.breaks),
        suppressed=tuple(shifted_break(b, maps) for b in report.suppressed),
        splits=tuple(shifted_break(b, maps) for b in report.splits),
        elsewhere=tuple(shifted_break(b, maps) for b in report.elsewhere),
        functions=tuple(shifted_function(f, maps) for f in report.functions),
        recompiles=tuple(shifted_recompile(r, maps) for r in report.recompiles),
        failure_span=_maybe(report.failure_span, maps.get(report.failure_path or report.path, {})),
        cuda_only=tuple(
            dataclasses.replace(call, span=_span(call.span, maps.get(report.path, {})))
            for call in report.cuda_only
        ),
        shapes=tuple(shifted_shape(s, maps) for s in report.shapes),
        stances=tuple(
            dataclasses.replace(
                s,
                stance=dataclasses.replace(
                    s.stance, line=maps.get(s.stance.path, {}).get(s.stance.line, s.stance.line)
                ),
                span=_span(s.span, maps.get(s.stance.path, {})),
            )
            for s in report.stances
        ),
    )
