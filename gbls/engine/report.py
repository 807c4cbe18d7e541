"""Build a ``FileReport``: the worker's result placed on the file's compiled sites and source texts.

Pure functions from the result, the sites discovery found and the source texts to the model
(``model``): every break on its exact span, suppressed ones set apart, every compile site listed
whether or not it ran, every recompilation on the guard that failed (``recompiles``).

The result is the analysed code's word as much as the worker's (the code runs in the process that
captures): a position outside the file, a negative column, or a file that is no source file
(``/dev/zero``) is dropped here, and the file says that the analysed code tampered with the results.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import io
import os
import stat
import tokenize
from collections.abc import Callable, Sequence

from ..worker.shared import directives
from ..worker.shared.lines import split_lines
from ..worker.shared.protocol import ERROR, OK, Break, Code, Failure, Frame, Function, Graph, Result
from ..worker.shared.workspace import in_workspace
from . import costs
from .discovery import CompiledSite, definitions, name_span
from .model import (
    BreakReport,
    CudaOnlyReport,
    CutReport,
    FileReport,
    FunctionReport,
    Location,
    ShapeReport,
    StanceReport,
)
from .ranges import Span, byte_to_char, line_text, span_of, written
from .recompiles import frame_span, input_span, recompile_reports
from .sources import TextOf, parse
from .untaken import untaken

# Far past any real source, far below what LSP positions hold (2**31 - 1).
POSITION_LIMIT = 10_000_000
TAMPERED = (
    "the analysed code tampered with gbls's results ({}); what gbls captured is shown, but may be incomplete"
)


def is_source_path(path: str) -> bool:
    """An absolute path, or a pseudo-file of code without one (``<string>``): what a code object names."""
    if "\0" in path:
        return False
    return os.path.isabs(path) or (path.startswith("<") and path.endswith(">"))


def _not_a_source_file(path: str) -> bool:
    """``path`` exists but is a device, a pipe, a folder: no code comes from there."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _position_problem(line: int, column: int | None, end_column: int | None) -> bool:
    values = [line, column or 0, end_column or 0]
    return line < 1 or any(value < 0 or value > POSITION_LIMIT for value in values)


def _frame_problem(frame: Frame, path: str, lines: list[str]) -> str:
    """What is wrong with a frame of a reported break, or ""; ``lines``: the analysed file's."""
    if not is_source_path(frame.path):
        return f"a frame names {frame.path!r}, which is no file"
    if _position_problem(frame.line, frame.column, frame.end_column):
        return f"a frame is at line {frame.line}, column {frame.column} of {frame.path}"
    if frame.path == path:  # the text that ran is the one analysed: every position lies in it
        if frame.line > len(lines) or (frame.column or 0) > len(lines[frame.line - 1].encode("utf-8")):
            return f"a frame is at line {frame.line}, column {frame.column}, outside {os.path.basename(path)}"
    elif not frame.path.startswith("<") and _not_a_source_file(frame.path):
        return f"a frame names {frame.path}, which is not a source file"
    return ""


def _function_problem(function: Function, path: str, lines: list[str]) -> str:
    if function.path and not is_source_path(function.path):
        return f"a function is said to be in {function.path!r}"
    if function.line < 1 or function.line > POSITION_LIMIT:
        return f"a function is said to start at line {function.line}"
    if function.path == path and function.line > len(lines):
        return f"a function is said to start at line {function.line}, outside {os.path.basename(path)}"
    if function.call_path == path and not 0 <= function.call_line <= len(lines):
        return f"a function is said to be compiled at line {function.call_line} of {os.path.basename(path)}"
    return ""


def checked(path: str, source: str, result: Result) -> Result:
    """``result`` without what cannot be true of ``source``; a tampered failure if anything was dropped."""
    lines = split_lines(source)
    problems: list[str] = []
    breaks = []
    for brk in result.breaks:
        located = (*brk.chain, *(frame for other in brk.paths for frame in other))
        found = [problem for problem in (_frame_problem(f, path, lines) for f in located) if problem]
        if found or not brk.chain:
            problems += found or ["a break without a chain"]
        else:
            breaks.append(brk)
    recompiles = []
    for recompile in result.recompiles:
        code = recompile.frame
        guard = recompile.guard
        frames = [
            Frame(code.path, code.name, code.line),
            *(guard.chain if guard else ()),
            *((guard.origin,) if guard and guard.origin else ()),
        ]
        found = [problem for problem in (_frame_problem(f, path, lines) for f in frames) if problem]
        if found:
            problems += found
        else:
            recompiles.append(recompile)
    functions = []
    for function in result.functions:
        problem = _function_problem(function, path, lines)
        if problem:
            problems.append(problem)
        else:
            functions.append(function)
    shapes = []
    for shape in result.shapes:
        found = [problem for problem in (_frame_problem(f, path, lines) for f in shape.chain) if problem]
        problems += found
        if not found:
            shapes.append(shape)
    stances = []
    for stance in result.stances:
        problem = _frame_problem(Frame(stance.path, "set_stance", stance.line), path, lines)
        if problem:
            problems.append(problem)
        else:
            stances.append(stance)
    cuda_only = []
    for call in result.cuda_only:
        problem = _frame_problem(Frame(path, call.call, call.line, call.column, call.end_column), path, lines)
        if problem:
            problems.append(problem)
        else:
            cuda_only.append(call)
    graphs = tuple(
        g
        if g.first_line is None or 0 < g.first_line <= POSITION_LIMIT
        else dataclasses.replace(g, first_line=None)
        for g in result.graphs
    )
    failure = result.failure
    if failure is not None and (
        (failure.line is not None and not 0 < failure.line <= len(lines))
        or (failure.column is not None and not 0 <= failure.column <= POSITION_LIMIT)
    ):
        failure = dataclasses.replace(failure, line=None, column=None)  # said where it cannot be
    status = result.status
    if problems:
        note = TAMPERED.format(problems[0] + (f", and {len(problems) - 1} more" if len(problems) > 1 else ""))
        if failure is None:
            failure, status = Failure("tampered", note), ERROR
        else:
            failure = dataclasses.replace(failure, message=f"{failure.message} ({note})")
    return dataclasses.replace(
        result,
        breaks=tuple(breaks),
        recompiles=tuple(recompiles),
        functions=tuple(functions),
        cuda_only=tuple(cuda_only),
        graphs=graphs,
        failure=failure,
        status=status,
        shapes=tuple(shapes),
        stances=tuple(stances),
    )


def build(
    path: str,
    source: str,
    result: Result,
    sites: tuple[CompiledSite, ...],
    text_of: TextOf,
    roots: Sequence[str] = (),
    origin: str = "",
) -> FileReport:
    """The analysis of ``path`` (``source``, the text that ran; for a run its script), every finding
    in the workspace file it belongs to; ``roots``: the workspace folders, whose files are the user's;
    ``origin``: the run's name, "" for the file's own analysis."""
    result = checked(path, source, result)
    texts = {path: source}

    def text(other: str) -> str:
        if other not in texts:
            texts[other] = (text_of(other) if is_source_path(other) else None) or ""
        return texts[other]

    def own(other: str) -> bool:
        return other == path or in_workspace(other, roots)

    by_id = {site.id: site for site in sites}
    every = sorted(
        (
            dataclasses.replace(
                _break_report(path, brk, text, own, by_id, result), costs=costs.of_break(brk, result.costs)
            )
            for brk in result.breaks
        ),
        key=lambda b: (b.path, b.span.line, b.span.column, b.gb_type),
    )
    ignores = {other: directives.suppressions(text(other)) for other in {b.path for b in every}}
    ignores |= {b.split.path: directives.suppressions(text(b.split.path)) for b in every if b.split}

    def suppressed_here(brk: BreakReport) -> bool:
        places = [(brk.path, brk.span.line)] + ([(brk.split.path, brk.split.span.line)] if brk.split else [])
        return any(directives.is_suppressed(ignores[where], line, brk.code) for where, line in places)

    breaks = tuple(b for b in every if not suppressed_here(b))
    suppressed = tuple(b for b in every if suppressed_here(b))
    functions = _functions(path, source, result, sites, breaks, suppressed, text, own)
    failure = result.failure
    failure_span = None
    failure_path = failure.path if failure is not None and failure.path else ""
    if failure is not None:
        failure_span = _failure_span(
            text(failure_path or path), failure.line or 1, failure.column, failure.kind == "syntax"
        )
    return FileReport(
        path=path,
        status=result.status,
        cut=_cut(path, source, result, text),
        elided=result.elided,
        message=failure.message if failure else "",
        failure_kind=failure.kind if failure else "",
        failure_span=failure_span,
        functions=functions,
        breaks=breaks,
        suppressed=suppressed,
        output=result.output,
        torch=result.torch,
        seconds=result.seconds,
        notes=result.notes,
        recompiles=recompile_reports(
            path, result.recompiles, functions, text, own, result.shapes, result.features
        ),
        failure_path=failure_path,
        executed=result.executed,
        origin=origin,
        cuda_only=tuple(
            CudaOnlyReport(call.call, span_of(source, call.line, call.column, call.end_column), call.skipped)
            for call in result.cuda_only
        ),
        outcome=result.outcome,
        shapes=_shapes(result, functions, text, own),
        stances=tuple(
            StanceReport(stance, _failure_span(text(stance.path), stance.line, None, False))
            for stance in result.stances
            if stance.stance != "default" and own(stance.path)
        ),
    )


def _shapes(
    result: Result,
    functions: tuple[FunctionReport, ...],
    text: Callable[[str], str],
    own: Callable[[str], bool],
) -> tuple[ShapeReport, ...]:
    """Each decision about a size on the line that decided it: the workspace's innermost frame of the
    code that needed its value, else the input in its function's ``def``, else the function."""
    by_name = {function.qualname: function for function in functions}
    found = []
    for shape in result.shapes:
        function = by_name.get(shape.function)
        mine = [frame for frame in shape.chain if own(frame.path) and is_source_path(frame.path)]
        if shape.reason == "code" and mine:
            frame = mine[-1]
            # Without columns (before torch 2.13) the line is the place: what on it needed the value, it
            # does not say.
            span = frame_span(frame, text(frame.path), "")
            line = line_text(split_lines(text(frame.path)), span.line)
            code = (line[span.column : span.end_column] if span.end_line == span.line else line).strip()
            found.append(ShapeReport(shape, frame.path, span, code if len(code) <= 40 else code[:37] + "..."))
            continue
        if function is None:
            continue
        own_frame = "forward" if function.kind == "module" else function.name
        code_path = function.code_path
        declared = (
            input_span(Code(code_path, function.target.line, own_frame), shape.subject, text(code_path))
            if own(code_path)
            else None
        )
        if declared is not None:
            found.append(ShapeReport(shape, code_path, declared))
        else:
            found.append(ShapeReport(shape, function.path, function.span))
    return tuple(found)


def _cut(path: str, source: str, result: Result, text: TextOf) -> CutReport | None:
    """Where the budget ended the program, on the lines of its file and of the script, if it did."""
    cut = result.cut
    if cut is None:
        return None
    where = cut.path or path

    def line_span(code: str, line: int | None) -> Span | None:
        return _failure_span(code, line, None, False) if line and 0 < line <= len(split_lines(code)) else None

    script_span = line_span(source, cut.script_line) if where != path else None
    return CutReport(
        cut.seconds, where, line_span(text(where) or "", cut.line), path, script_span, cut.tracing
    )


def _failure_span(source: str, line: int, column: int | None, point: bool) -> Span:
    text = line_text(split_lines(source), line)
    if point and column is not None:
        start = min(byte_to_char(text, column), max(len(text) - 1, 0))
        return Span(line, start, line, min(start + 1, max(len(text), start + 1)))
    start = len(text) - len(text.lstrip())
    return Span(line, start, line, max(len(text), start))


def _location(frame: Frame, text: TextOf) -> Location:
    return Location(
        frame.path,
        frame.function,
        span_of(text(frame.path) or "", frame.line, frame.column, frame.end_column),
    )


def _break_report(
    path: str,
    brk: Break,
    text: TextOf,
    own: Callable[[str], bool],
    sites: dict[str, CompiledSite],
    result: Result,
) -> BreakReport:
    """A break where it belongs: on its root cause's last frame in the workspace (the ``print`` in a
    helper of ``model.py``), beside the place its compiled function's graph splits: ``chain[0]``, or
    with nested graph breaks the innermost frame of the workspace at or above ``brk.split``."""
    functions = result.functions
    chain = tuple(_location(frame, text) for frame in brk.chain)
    mine = [location for location in chain if own(location.path)]
    splits = [location for location in chain[: brk.split + 1] if own(location.path)]
    function = next((f for f in functions if f.qualname == brk.function and f.site), None)
    site = sites.get(function.site) if function else None
    owner = function or next((f for f in functions if f.qualname == brk.function), None)
    # Refused before its first instruction, Dynamo names only the function's first line (and on
    # Python 3.10 every frame lacks a column, so the line tells the refusals apart).
    first = brk.chain[0]
    whole_function = (
        len(brk.chain) == 1 and first.column is None and (owner is None or first.line == owner.line)
    )
    reason = (
        short_reason(text(chain[-1].path) or "", chain[-1].span, brk.chain[-1].column is None)
        if chain
        else ""
    )
    root = chain[-1] if chain and brk.chain[-1].column is not None else None
    call = written(text(root.path) or "", root.span) if root else ""
    # Where the workspace called the compiled code (``model(batch)`` in train.py), when the chain
    # does not pass there.
    called_at = None
    if (
        brk.called_at is not None
        and own(brk.called_at.path)
        and brk.called_at.path not in {c.path for c in chain}
    ):
        called_at = _location(brk.called_at, text)
    paths = tuple(tuple(_location(frame, text) for frame in other) for other in brk.paths)
    if mine and not (whole_function and site is not None):
        home = mine[-1]
        split = splits[-1] if splits and splits[-1] != home else None
        return BreakReport(
            cause=brk,
            path=home.path,
            span=home.span,
            chain=chain,
            reason=reason,
            split=split,
            called_at=called_at,
            features=result.features,
            paths=paths,
            call=call,
        )
    # The code is not in the workspace (a library model compiled here), or Dynamo refused the whole
    # function before its first instruction: the break sits on the compile site.
    anchor = (site.name_span if site.decorator_span else site.call_span or site.name_span) if site else None
    if anchor is not None:
        where, span = path, char_span(text(path) or "", anchor)
    elif owner is not None and owner.call_path and own(owner.call_path) and owner.call_line:
        where = owner.call_path
        span = _failure_span(text(where) or "", owner.call_line, None, False)
    elif called_at is not None:  # a library's own compiled function: where the workspace called it
        where, span = called_at.path, called_at.span
    else:
        where, span = path, Span(1, 0, 1, 0)
    if whole_function:
        reason = ""
    return BreakReport(
        cause=brk,
        path=where,
        span=span,
        chain=chain,
        reason=reason,
        called_at=called_at,
        features=result.features,
        paths=paths,
        call=call,
    )


def short_reason(source: str, span: Span, whole_line: bool = False) -> str:
    """The root cause's code, short: the callee of a call, or the expression itself. ``whole_line``:
    the span is its line (Python 3.10 has no columns), so the code is the statement's expression."""
    lines = split_lines(source)
    if span.line != span.end_line:
        text = line_text(lines, span.line)[span.column :]
    else:
        text = line_text(lines, span.line)[span.column : span.end_column]
    text = text.strip()
    node = _statement_expression(text) if whole_line else None
    if node is None:
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            node = None
    if isinstance(node, ast.Call):
        text = ast.unparse(node.func)
    elif node is not None and whole_line:
        text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _statement_expression(line: str) -> ast.expr | None:
    """The expression a one-line statement evaluates: an assignment's value, an ``if``'s test, …"""
    try:
        comments = [
            t for t in tokenize.generate_tokens(io.StringIO(line).readline) if t.type == tokenize.COMMENT
        ]
        code = line[: comments[0].start[1]].rstrip() if comments else line
        tree = ast.parse(code + (" pass" if code.endswith(":") else ""))
    except (SyntaxError, tokenize.TokenError):
        return None
    statement = tree.body[-1] if tree.body else None
    if isinstance(statement, (ast.If, ast.While)):
        return statement.test
    if isinstance(statement, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return)):
        return statement.value
    return None


def char_span(source: str, span: Span) -> Span:
    """A span of UTF-8 byte columns (as the AST and discovery give them) in characters."""
    lines = split_lines(source)
    return Span(
        span.line,
        byte_to_char(line_text(lines, span.line), span.column),
        span.end_line,
        byte_to_char(line_text(lines, span.end_line), span.end_column),
    )


def _functions(
    path: str,
    source: str,
    result: Result,
    sites: tuple[CompiledSite, ...],
    breaks: tuple[BreakReport, ...],
    suppressed: tuple[BreakReport, ...],
    text: TextOf,
    own: Callable[[str], bool],
) -> tuple[FunctionReport, ...]:
    by_id = {site.id: site for site in sites}
    reports: list[FunctionReport] = []
    # A generic call (a decorator's) is its functions' compile site: each is on its own def.
    used = {
        site.id
        for site in sites
        if site.generic
        and any(
            f.call_path == path and site.line <= f.call_line <= site.end_line
            for f in result.functions
            if f.analysed
        )
    }
    for function in result.functions:
        if function.site:
            if function.site in used:
                continue
            used.add(function.site)
        graphs = tuple(g for g in result.graphs if g.function == function.qualname)
        site = by_id.get(function.site)
        report = _function_report(path, source, function, site, graphs, breaks, suppressed, text, own)
        elided = tuple(e for e in result.elided if e.function == function.qualname)
        spent = tuple(c for c in result.costs if c.function == function.qualname)
        reports.append(dataclasses.replace(report, elided=elided, costs=spent))
    ran = [by_id[f.site].line for f in result.functions if f.analysed and f.site in by_id]
    for site in sites:
        if site.id not in used:
            branch = ""
            if result.cut is not None:
                reason = f"the program was cut after {result.cut.seconds:g} s, before it reached it"
            elif result.status != OK:
                reason = "the analysis stopped before reaching it"
            else:
                branch = untaken(source, site.line, ran)
                reason = f"not compiled in this run: {branch}" if branch else "it never ran"
            stub = Function(
                site.name, site.qualname, path, site.first_line, site.kind, reason=reason, site=site.id
            )
            report = _function_report(path, source, stub, site, (), breaks, suppressed, text, own)
            reports.append(dataclasses.replace(report, untaken=branch))
    reports.sort(key=lambda report: (report.path, report.span.line))
    return tuple(reports)


@functools.lru_cache(maxsize=8)
def _definitions(source: str) -> dict[tuple[str, int], Span]:
    """The span of each ``def``'s name in ``source`` (byte columns), by the name and its code's first line."""
    return {key: name_span(node) for key, node in definitions(parse(source)).items()}


def _function_report(
    path: str,
    source: str,
    function: Function,
    site: CompiledSite | None,
    graphs: tuple[Graph, ...],
    breaks: tuple[BreakReport, ...],
    suppressed: tuple[BreakReport, ...],
    text: TextOf,
    own: Callable[[str], bool],
) -> FunctionReport:
    """A compiled function on its compile site in the analysed file; else on its own ``def`` in the
    workspace; else where the workspace compiled it, or called it; else on the analysed file's first
    line."""
    decorator = call = None
    where = path
    if site is not None:
        anchor = site.call_span if site.call_span and not site.decorator_span else site.name_span
        span = char_span(source, anchor)
        decorator = char_span(source, site.decorator_span) if site.decorator_span else None
        call = char_span(source, site.call_span) if site.call_span else None
        line = site.line
    else:
        line = 1
        if function.path and own(function.path):
            where, line = function.path, function.line
        elif function.call_path and own(function.call_path) and function.call_line:
            where, line = function.call_path, function.call_line
        elif function.called_at is not None and own(function.called_at.path):
            where, line = function.called_at.path, function.called_at.line
        code = line_text(split_lines(text(where) or ""), line)
        start = len(code) - len(code.lstrip())
        span = Span(line, start, line, len(code))
        # On its own def: the name where it is written, not its first decorator's line.
        source_there = text(where) or ""
        found = _definitions(source_there).get((function.name, line)) if where == function.path else None
        if found is not None:
            line, span = found.line, char_span(source_there, found)
    return FunctionReport(
        target=function,
        path=where,
        line=line,
        graphs=graphs,
        breaks=sum(1 for b in breaks if function.qualname in b.functions),
        suppressed=sum(1 for b in suppressed if function.qualname in b.functions),
        span=span,
        decorator=decorator,
        call=call,
    )
