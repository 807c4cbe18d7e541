"""A file's view as LSP diagnostics: one per break whose root cause is in the file, one per
recompilation problem, plus not-analysed and failure notes.

Also the split side: an Information where a break of another place splits a compiled function's
graph in this file ("the graph of `TinyNet` splits here: …"), pointing to the break.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

from lsprotocol import types as lsp
from pygls import uris

from ..engine.model import LIMIT_CODE, BreakReport, FileView, RecompileReport, imported_from
from ..engine.ranges import Span, char_to_utf16, line_text
from ..engine.reach import is_test_file, test_in
from ..manual import page
from ..settings import SEVERITIES, Settings, Severity
from ..worker.shared.lines import split_lines

SOURCE = "gbls"
SEVERITY = {
    "error": lsp.DiagnosticSeverity.Error,
    "warning": lsp.DiagnosticSeverity.Warning,
    "information": lsp.DiagnosticSeverity.Information,
    "hint": lsp.DiagnosticSeverity.Hint,
}
LinesOf = Callable[[str], list[str]]
FAILURE_SEVERITY = {"syntax": lsp.DiagnosticSeverity.Error, "timeout": lsp.DiagnosticSeverity.Warning}


def to_range(span: Span, lines: list[str]) -> lsp.Range:
    """A character span as an LSP range, whose columns count UTF-16 code units."""
    return lsp.Range(
        start=lsp.Position(span.line - 1, char_to_utf16(line_text(lines, span.line), span.column)),
        end=lsp.Position(span.end_line - 1, char_to_utf16(line_text(lines, span.end_line), span.end_column)),
    )


def to_span(range_: lsp.Range, lines: list[str]) -> Span:
    """An LSP range back as a character span."""

    def column(line: int, units: int) -> int:
        text = line_text(lines, line + 1)
        count = 0
        for index, character in enumerate(text):
            if count >= units:
                return index
            count += 2 if ord(character) > 0xFFFF else 1
        return len(text)

    return Span(
        range_.start.line + 1,
        column(range_.start.line, range_.start.character),
        range_.end.line + 1,
        column(range_.end.line, range_.end.character),
    )


def break_data(brk: BreakReport, kind: Literal["break", "split"] = "break") -> dict[str, Any]:
    """What finds the break again for a code action: its file and its key."""
    return {"kind": kind, "file": brk.path, "key": list(brk.key)}


def recompile_data(report: RecompileReport, path: str) -> dict[str, Any]:
    return {"kind": "recompile", "file": path, "key": list(report.key)}


def _location(path: str, span: Span, lines_of: LinesOf) -> lsp.Location:
    return lsp.Location(uri=uris.from_fs_path(path) or path, range=to_range(span, lines_of(path)))


def _related(brk: BreakReport, lines_of: LinesOf) -> list[lsp.DiagnosticRelatedInformation]:
    related = []
    last = len(brk.chain) - 1
    for index, location in enumerate(brk.chain):
        if index == brk.cause.split:
            text = f"the graph of {brk.split_graph} splits here"
        elif index == 0 and brk.nested:
            text = f"{brk.function} calls here: a nested graph break keeps its code in the graphs"
        elif index == 0:
            text = f"{brk.function} calls here: {brk.split_frame.function} runs as a frame of its own"
        elif index == last:
            text = f"root cause in {location.function}: {brk.gb_type}"
        else:
            text = f"via {location.function}"
        related.append(
            lsp.DiagnosticRelatedInformation(
                location=_location(location.path, location.span, lines_of), message=text
            )
        )
    for other in brk.paths:  # other ways to the same cause: where they differ from the chain
        for index, location in enumerate(other[:-1]):
            if location not in brk.chain:
                text = (
                    f"graph of {brk.function} also splits here"
                    if index == 0
                    else f"also via {location.function}"
                )
                related.append(
                    lsp.DiagnosticRelatedInformation(
                        location=_location(location.path, location.span, lines_of), message=text
                    )
                )
    if brk.called_at is not None:
        at = brk.called_at
        test = test_in(at.path, at.span.line, "\n".join(lines_of(at.path))) if is_test_file(at.path) else ""
        related.append(
            lsp.DiagnosticRelatedInformation(
                location=_location(at.path, at.span, lines_of),
                message=f"{brk.function} called here" + (f", by the test {test}" if test else ""),
            )
        )
    return related


def _guard_related(
    problem: RecompileReport, path: str, lines_of: LinesOf
) -> list[lsp.DiagnosticRelatedInformation] | None:
    """Where the failed check is, when that is not where the diagnostic is."""
    at = problem.guard_at
    if at is None or (at.path == path and at.span == problem.span):
        return None
    return [
        lsp.DiagnosticRelatedInformation(
            location=_location(at.path, at.span, lines_of),
            message=f"the guard is installed here, in {at.function}",
        )
    ]


def file_diagnostics(
    report: FileView, source: str, severity: Severity, lines_of: LinesOf
) -> list[lsp.Diagnostic]:
    """The analysed document's own diagnostics. ``lines_of(path)`` gives another file's lines."""
    lines = split_lines(source)
    level = SEVERITY.get(severity, lsp.DiagnosticSeverity.Warning)
    return [
        *(_break_diagnostic(brk, lines, level, lines_of) for brk in report.breaks),
        *_recompile_diagnostics(report, lines, level, lines_of),
        *_unanalysed_diagnostics(report, lines),
        *_run_diagnostics(report, lines),
    ]


def _break_diagnostic(
    brk: BreakReport, lines: list[str], level: lsp.DiagnosticSeverity, lines_of: LinesOf
) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=to_range(brk.span, lines),
        message=brk.message + imported_from(brk.provenance),
        # The program raises there (fullgraph=True, error_on_graph_break): always an error.
        severity=lsp.DiagnosticSeverity.Error if brk.raises else level,
        code=brk.code,
        code_description=lsp.CodeDescription(href=brk.url) if brk.url else None,
        source=SOURCE,
        related_information=_related(brk, lines_of),
        data=break_data(brk),
    )


def _recompile_diagnostics(
    report: FileView, lines: list[str], level: lsp.DiagnosticSeverity, lines_of: LinesOf
) -> list[lsp.Diagnostic]:
    found = []
    for problem in report.problems:
        found.append(
            lsp.Diagnostic(
                range=to_range(problem.span, lines),
                message=problem.message + imported_from(problem.provenance),
                # Past the limit Dynamo compiles the function no more: one step above the setting;
                # the program raises there (fullgraph=True): an error.
                severity=lsp.DiagnosticSeverity.Error
                if problem.raises
                else level
                if problem.limit is None
                else lsp.DiagnosticSeverity(max(1, level - 1)),
                code=problem.code,
                code_description=lsp.CodeDescription(href=page("recompilations")),
                source=SOURCE,
                related_information=_guard_related(problem, report.path, lines_of),
                data=recompile_data(problem, report.path),
            )
        )
        at = problem.raises_at
        if at is not None and at.path == report.path:
            found.append(
                lsp.Diagnostic(
                    range=to_range(at.span, lines),
                    message=problem.raise_message + imported_from(problem.provenance),
                    severity=lsp.DiagnosticSeverity.Error,
                    code=LIMIT_CODE,
                    code_description=lsp.CodeDescription(href=page("recompilations", "the-recompile-limit")),
                    source=SOURCE,
                    data=recompile_data(problem, report.path),
                )
            )
    return found


def _unanalysed_diagnostics(report: FileView, lines: list[str]) -> list[lsp.Diagnostic]:
    return [
        lsp.Diagnostic(
            range=to_range(function.span, lines),
            message=(
                f"{function.qualname}: {function.reason}"  # what the run is: no advice
                if function.untaken
                else f"{function.qualname} not analysed: {function.reason}. Declare inputs with "
                "`# gbls: example(...)` above it."
                # Inputs cannot help a function the program never reached, failed or cut.
                if "gbls: example" not in function.reason and not report.message and not report.cut
                else f"{function.qualname} not analysed: {function.reason}"
            ),
            severity=lsp.DiagnosticSeverity.Information,
            source=SOURCE,
            data={"kind": "not-analysed", "function": function.qualname},
        )
        for function in report.functions
        if not function.analysed
    ]


def _run_diagnostics(report: FileView, lines: list[str]) -> list[lsp.Diagnostic]:
    """How the analysis's program ran: a failure, a cut, the stances it set, calls only a GPU makes."""
    found = []
    if report.message and report.failure_span is not None:
        found.append(
            lsp.Diagnostic(
                range=to_range(report.failure_span, lines),
                message=f"gbls could not analyse this file: {report.message}",
                severity=FAILURE_SEVERITY.get(report.failure_kind, lsp.DiagnosticSeverity.Error),
                source=SOURCE,
                code=f"analysis-{report.failure_kind}",
                data={"kind": "failure", "failure": report.failure_kind},
            )
        )
    cut = report.cut
    here = cut.span_in(report.path) if cut is not None else None
    if cut is not None and here is not None:
        found.append(_note(here, lines, cut.message, "cut", page("runs", "a-program-that-runs-on"), "cut"))
    for stance in report.stances:
        found.append(
            _note(stance.span, lines, stance.message, "stance", page("recompilations", "stances"), "stance")
        )
    for call in report.cuda_only:
        found.append(_note(call.span, lines, call.message, "not-checkable", page("cuda"), "cuda-only"))
    return found


def _note(span: Span, lines: list[str], message: str, code: str, href: str, kind: str) -> lsp.Diagnostic:
    return lsp.Diagnostic(
        range=to_range(span, lines),
        message=message,
        severity=lsp.DiagnosticSeverity.Information,
        source=SOURCE,
        code=code,
        code_description=lsp.CodeDescription(href=href),
        data={"kind": kind},
    )


def split_diagnostics(report: FileView, source: str, lines_of: LinesOf) -> list[lsp.Diagnostic]:
    """Where a break whose root cause is elsewhere splits a compiled function's graph in this file."""
    lines = split_lines(source)
    found = []
    for brk in report.splits:
        assert brk.split is not None
        via = f" (via {' → '.join(brk.via)})" if brk.via else ""
        effect = f"; {brk.function} {brk.eager}" if brk.eager else ""
        where = f"{os.path.basename(brk.path)}:{brk.span.line}"
        found.append(
            lsp.Diagnostic(
                range=to_range(brk.split.span, lines),
                message=f"the graph of `{brk.split_graph}` splits here: {brk.title} at {where}{via}{effect}"
                + imported_from(brk.provenance),
                severity=lsp.DiagnosticSeverity.Information,
                code=brk.code,
                code_description=lsp.CodeDescription(href=brk.url) if brk.url else None,
                source=SOURCE,
                related_information=[
                    lsp.DiagnosticRelatedInformation(
                        location=_location(brk.path, brk.span, lines_of),
                        message=f"root cause in {brk.root.function}: {brk.gb_type}",
                    )
                ],
                data=break_data(brk, "split"),
            )
        )
    return found


# The diagnostics whose severity comes from the ``severity`` setting, which a code's override replaces.
SET_BY_SEVERITY = ("break", "recompile")


def as_set(diagnostics: list[lsp.Diagnostic], settings: Settings) -> list[lsp.Diagnostic]:
    """``diagnostics`` as the settings want them: those of an ignored code left out, and each whose
    severity comes from ``severity`` at its code's own severity, if it has one (a recompile limit hit
    stays one step above it)."""
    kept = []
    base = SEVERITY[settings.severity]
    for diagnostic in diagnostics:
        code = diagnostic.code if isinstance(diagnostic.code, str) else None
        if code in settings.ignore:
            continue
        data = diagnostic.data
        if code is not None and isinstance(data, dict) and data.get("kind") in SET_BY_SEVERITY:
            placed = SEVERITIES[(diagnostic.severity or base) - 1]
            diagnostic.severity = SEVERITY[settings.severity_of(code, placed)]
        kept.append(diagnostic)
    return kept
