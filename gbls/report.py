"""A file's analysis as the editor and the CLI show it: breaks on exact spans, functions with summaries.

Pure functions from the worker's result, the file's compiled sites and the source texts to a
``FileReport``. Everything is in characters here (1-based lines, 0-based columns, end
exclusive); the LSP layer converts to UTF-16 and the CLI to 1-based columns.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

from .discovery import CompiledSite
from .ranges import Span, byte_to_char, line_text, span_of
from .worker.protocol import EAGER, OK, Break, Code, Frame, Function, Graph, Result

SourceOf = Callable[[str], str | None]

SUPPRESSION = re.compile(r"#\s*gbls:\s*ignore(?:\[([A-Za-z0-9_,\s]*)\])?")


@dataclass(frozen=True)
class Location:
    path: str
    function: str
    span: Span


@dataclass(frozen=True)
class BreakReport:
    function: str
    gb_type: str
    gb_id: str | None
    url: str | None
    explanation: str
    hints: tuple[str, ...]
    context: str
    count: int
    effect: str
    eager_reason: str
    span: Span
    chain: tuple[Location, ...]
    reason: str  # the root cause as written, shortened: "print", "x.sum().item", "x.sum() > 0"

    @property
    def code(self) -> str:
        return self.gb_id or "GB????"

    @property
    def via(self) -> tuple[str, ...]:
        return tuple(location.function for location in self.chain[1:])

    @property
    def root(self) -> Location:
        return self.chain[-1]

    @property
    def title(self) -> str:
        """``Failed to trace builtin operator (print)``"""
        return f"{self.gb_type} ({self.reason})" if self.reason else self.gb_type

    @property
    def message(self) -> str:
        text = self.title
        if self.via:
            text += f" (via {' → '.join(self.via)})"
        if self.effect == EAGER:
            why = f": {self.eager_reason.split(':')[0]}" if self.eager_reason else ""
            text += f"; {self.function} runs entirely in eager mode{why}"
        return text


@dataclass(frozen=True)
class FunctionReport:
    name: str
    qualname: str
    kind: str
    path: str
    line: int
    analysed: bool
    reason: str
    inputs: str
    input_source: str
    fullgraph: bool
    graphs: tuple[Graph, ...]
    breaks: int
    suppressed: int
    span: Span  # where its lens and hover anchor: the def name, or the compile call
    decorator: Span | None
    call: Span | None
    reached: tuple[Code, ...] = ()  # the code its results depend on

    @property
    def hover_spans(self) -> tuple[Span, ...]:
        return tuple(s for s in (self.span, self.decorator, self.call) if s is not None)

    @property
    def ops(self) -> int:
        return sum(graph.ops for graph in self.graphs)


@dataclass(frozen=True)
class FileReport:
    path: str
    status: str
    message: str
    failure_kind: str
    failure_span: Span | None
    functions: tuple[FunctionReport, ...]
    breaks: tuple[BreakReport, ...]
    suppressed: tuple[BreakReport, ...]
    output: str
    torch: str
    seconds: float


def failure_report(path: str, kind: str, message: str) -> FileReport:
    """A file that could not be analysed at all (unreadable, no worker): one message on its first line."""
    return FileReport(
        path=path,
        status="error",
        message=message,
        failure_kind=kind,
        failure_span=Span(1, 0, 1, 0),
        functions=(),
        breaks=(),
        suppressed=(),
        output="",
        torch="",
        seconds=0.0,
    )


def read_source(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    return decode_source(data)


def decode_source(data: bytes) -> str:
    """Source bytes as text, honouring a PEP 263 coding cookie; undecodable bytes are replaced."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError):
        return data.decode("utf-8", "replace")


def build(
    path: str, source: str, result: Result, sites: tuple[CompiledSite, ...], source_of: SourceOf
) -> FileReport:
    def text_of(other: str) -> str:
        return source if other == path else source_of(other) or ""

    every = sorted(
        (_break_report(path, brk, text_of, sites) for brk in result.breaks),
        key=lambda b: (b.span.line, b.span.column, b.gb_type),
    )
    ignored = suppressions(source)
    breaks = tuple(b for b in every if not is_suppressed(b, ignored))
    suppressed = tuple(b for b in every if is_suppressed(b, ignored))
    functions = _functions(path, source, result, sites, breaks, suppressed)
    failure = result.failure
    failure_span = None
    if failure is not None:
        failure_span = _failure_span(source, failure.line or 1, failure.column, failure.kind == "syntax")
    return FileReport(
        path=path,
        status=result.status,
        message=failure.message if failure else "",
        failure_kind=failure.kind if failure else "",
        failure_span=failure_span,
        functions=functions,
        breaks=breaks,
        suppressed=suppressed,
        output=result.output,
        torch=result.torch,
        seconds=result.seconds,
    )


def suppressions(source: str) -> dict[int, frozenset[str] | None]:
    """``# gbls: ignore[GB0059, GB0124]`` comments by line; ``None`` for a bare ``# gbls: ignore``."""
    found: dict[int, frozenset[str] | None] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                match = SUPPRESSION.search(token.string)
                if match:
                    codes = match.group(1)
                    found[token.start[0]] = (
                        frozenset(c.strip().upper() for c in codes.split(",") if c.strip()) if codes else None
                    )
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def is_suppressed(brk: BreakReport, ignored: dict[int, frozenset[str] | None]) -> bool:
    if brk.span.line not in ignored:
        return False
    codes = ignored[brk.span.line]
    return codes is None or brk.code in codes


def _failure_span(source: str, line: int, column: int | None, point: bool) -> Span:
    text = line_text(source.splitlines(), line)
    if point and column is not None:
        start = min(byte_to_char(text, column), max(len(text) - 1, 0))
        return Span(line, start, line, min(start + 1, max(len(text), start + 1)))
    start = len(text) - len(text.lstrip())
    return Span(line, start, line, max(len(text), start))


def _location(frame: Frame, text_of: Callable[[str], str]) -> Location:
    return Location(
        frame.path, frame.function, span_of(text_of(frame.path), frame.line, frame.column, frame.end_column)
    )


def _break_report(
    path: str, brk: Break, text_of: Callable[[str], str], sites: tuple[CompiledSite, ...]
) -> BreakReport:
    chain = tuple(_location(frame, text_of) for frame in brk.chain)
    in_file = [location for location in chain if location.path == path]
    site = next((s for s in sites if s.qualname == brk.function), None)
    whole_function = len(brk.chain) == 1 and brk.chain[0].column is None
    reason = short_reason(text_of(chain[-1].path), chain[-1].span) if chain else ""
    if in_file and not (whole_function and site is not None):
        span = in_file[0].span
    else:
        # Dynamo refused the whole function before its first instruction: point at its name.
        anchor = (
            (site.name_span if site.decorator_span else site.call_span or site.name_span) if site else None
        )
        span = _char_span(text_of(path), anchor) if anchor else Span(1, 0, 1, 0)
        reason = ""
    return BreakReport(
        function=brk.function,
        gb_type=brk.gb_type,
        gb_id=brk.gb_id,
        url=brk.url,
        explanation=brk.explanation,
        hints=brk.hints,
        context=brk.context,
        count=brk.count,
        effect=brk.effect,
        eager_reason=brk.eager_reason,
        span=span,
        chain=chain,
        reason=reason,
    )


def short_reason(source: str, span: Span) -> str:
    """The root cause's code, short: the callee of a call, or the expression itself."""
    lines = source.splitlines()
    if span.line != span.end_line:
        text = line_text(lines, span.line)[span.column :]
    else:
        text = line_text(lines, span.line)[span.column : span.end_column]
    text = text.strip()
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        node = None
    if isinstance(node, ast.Call):
        text = ast.unparse(node.func)
    return text if len(text) <= 40 else text[:37] + "..."


def _char_span(source: str, span: Span) -> Span:
    lines = source.splitlines()
    return Span(
        span.line,
        byte_to_char(line_text(lines, span.line), span.column),
        span.end_line,
        byte_to_char(line_text(lines, span.end_line), span.end_column),
    )


def _site_for(function: Function, sites: tuple[CompiledSite, ...]) -> CompiledSite | None:
    for site in sites:
        if function.kind == "module" or site.kind == "module":
            if function.kind == site.kind and function.name == site.name:
                return site
        elif function.name == site.name and function.line in (site.first_line, site.line):
            return site
    return None


def _functions(
    path: str,
    source: str,
    result: Result,
    sites: tuple[CompiledSite, ...],
    breaks: tuple[BreakReport, ...],
    suppressed: tuple[BreakReport, ...],
) -> tuple[FunctionReport, ...]:
    reports: list[FunctionReport] = []
    used: set[CompiledSite] = set()
    for function in result.functions:
        site = _site_for(function, sites)
        if site is not None:
            if site in used:
                continue
            used.add(site)
        graphs = tuple(g for g in result.graphs if g.function == function.qualname)
        reports.append(_function_report(path, source, function, site, graphs, breaks, suppressed))
    for site in sites:
        if site not in used and not any(_site_for(f, (site,)) for f in result.functions):
            used.add(site)
            reason = "the analysis stopped before reaching it" if result.status != OK else "it never ran"
            stub = Function(site.name, site.qualname, path, site.first_line, site.kind, reason=reason)
            reports.append(_function_report(path, source, stub, site, (), breaks, suppressed))
    reports.sort(key=lambda report: report.span.line)
    return tuple(reports)


def _function_report(
    path: str,
    source: str,
    function: Function,
    site: CompiledSite | None,
    graphs: tuple[Graph, ...],
    breaks: tuple[BreakReport, ...],
    suppressed: tuple[BreakReport, ...],
) -> FunctionReport:
    decorator = call = None
    if site is not None:
        anchor = site.call_span if site.call_span and not site.decorator_span else site.name_span
        span = _char_span(source, anchor)
        decorator = _char_span(source, site.decorator_span) if site.decorator_span else None
        call = _char_span(source, site.call_span) if site.call_span else None
        line = site.line
    else:
        text = line_text(source.splitlines(), function.line)
        start = len(text) - len(text.lstrip())
        span = Span(function.line, start, function.line, len(text))
        line = function.line
    return FunctionReport(
        name=function.name,
        qualname=function.qualname,
        kind=function.kind,
        path=os.path.abspath(function.path or path),
        line=line,
        analysed=function.analysed,
        reason=function.reason,
        inputs=function.inputs,
        input_source=function.input_source,
        fullgraph=function.fullgraph,
        graphs=graphs,
        breaks=sum(1 for b in breaks if b.function == function.qualname),
        suppressed=sum(1 for b in suppressed if b.function == function.qualname),
        span=span,
        decorator=decorator,
        call=call,
        reached=function.reached,
    )
