"""What an analysis depends on, so that an edit that cannot change it reuses it.

A file's *code key* is its token stream without comments and blank lines, but with each token's
columns: two texts with the same key differ only by comment or blank lines, so every code token
sits on the same columns and only line numbers move. ``# gbls:`` comments stay in the key: they
declare inputs and suppress breaks. A cached report is then shifted line by line onto the new text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import tokenize
from typing import Any

from ..worker.shared.directives import is_directive
from ..worker.shared.protocol import Code, Frame, Graph, Recompile
from .model import BreakReport, FileReport, FunctionReport, Location, RecompileReport, ShapeReport
from .ranges import Span
from .sources import TextOf

Key = tuple[tuple[int, str, int, int], ...]
SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}


def code_key(source: str) -> tuple[Key, tuple[int, ...]] | None:
    """The code key and, for each of its tokens, the line it starts on; None if it does not tokenize."""
    tokens = []
    lines = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in SKIPPED and not (token.type == tokenize.COMMENT and is_directive(token.string)):
                continue
            if token.type == tokenize.NEWLINE:  # it follows a trailing comment, if there is one
                tokens.append((token.type, "", 0, 0))
            else:
                tokens.append((token.type, token.string, token.start[1], token.end[1]))
            lines.append(token.start[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return tuple(tokens), tuple(lines)


def line_map(old: tuple[int, ...], new: tuple[int, ...]) -> dict[int, int]:
    """Old line → new line, for the lines that hold code tokens (same key, so the same tokens)."""
    return dict(zip(old, new, strict=True))


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


def digest(text: str | None) -> str:
    return hashlib.sha1((text or "").encode("utf-8", "surrogatepass")).hexdigest()


@dataclasses.dataclass(frozen=True)
class Entry:
    """A report, and what it was computed from."""

    key: Key
    lines: tuple[int, ...]
    settings: Any  # whatever of the settings and the worker changes results
    dependencies: tuple[tuple[str, str], ...]  # (path, digest) of the other files it read
    report: FileReport


def entry(
    source: str,
    settings: Any,
    dependencies: list[str],
    text_of: TextOf,
    report: FileReport,
) -> Entry | None:
    key = code_key(source)
    if key is None:
        return None
    return Entry(
        key[0], key[1], settings, tuple((path, digest(text_of(path))) for path in dependencies), report
    )


def reuse(cached: Entry | None, source: str, settings: Any, text_of: TextOf) -> FileReport | None:
    """The cached report moved onto ``source``, when nothing it depends on changed."""
    if cached is None or cached.settings != settings:
        return None
    if any(digest(text_of(path)) != value for path, value in cached.dependencies):
        return None
    current = code_key(source)
    if current is None or current[0] != cached.key:
        return None
    return shifted(cached.report, line_map(cached.lines, current[1]))
