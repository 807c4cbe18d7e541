"""``# gbls: ignore[...]`` comments in the editor: a hover on one says what it hides (each break or
recompilation, in its own words), and one that hides nothing gets an information diagnostic (faded,
as an unused import is) with the quick fix that takes it out.

A suppression hides nothing only where the analysis would have seen what it hides: a file whose
analysis ran to its end (not cut, not failed), on a line of code Dynamo translated (a function it
translated or inlined). Elsewhere nothing is said of it.
"""

from __future__ import annotations

import ast
from typing import Any

from lsprotocol import types as lsp

from ..engine.model import RECOMPILE_CODE, BreakReport, FileView, RecompileReport
from ..engine.ranges import Span, line_text
from ..engine.sources import parse
from ..runtime.session import Session
from ..worker.shared.directives import suppression_comments, without_suppression
from ..worker.shared.lines import split_lines
from .diagnostics import SOURCE, to_range
from .markdown import prose

UNUSED = "unused-suppression"
Hidden = list[BreakReport | RecompileReport]


def hidden(view: FileView, session: Session, line: int) -> Hidden:
    """What the suppression on ``line`` of the view's file hides: breaks whose cause or split is there
    (from every analysis: a break of another file splits here), recompilations placed there."""
    found: Hidden = []
    for _, analysed in session.results():
        for brk in analysed.report.suppressed:
            places = [(brk.path, brk.span.line)] + (
                [(brk.split.path, brk.split.span.line)] if brk.split else []
            )
            if (view.path, line) in places and brk not in found:
                found.append(brk)
    found += [r for r in view.recompiles if r.suppressed and r.span.line == line]
    return found


def _code(finding: BreakReport | RecompileReport) -> str:
    return RECOMPILE_CODE.upper() if isinstance(finding, RecompileReport) else finding.code


def _translated_lines(view: FileView, source: str) -> set[int]:
    """The lines of the functions of the view's file that Dynamo translated or inlined."""
    codes = {(code.line, code.name) for f in view.functions for code in f.reached if code.path == view.path}
    codes |= {(f.target.line, f.name) for f in view.functions if f.analysed and f.code_path == view.path}
    tree = parse(source)
    lines: set[int] = set()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if (first, node.name) in codes:
                lines.update(range(first, (node.end_lineno or node.lineno) + 1))
    return lines


def unused(view: FileView, source: str, session: Session) -> list[tuple[int, Span, frozenset[str] | None]]:
    """Each suppression that hides nothing: its line, its span, and the codes that hide nothing (None:
    the whole comment, a bare ``ignore`` or every code of it)."""
    if view.status != "ok" or view.message or view.cut is not None or not view.translated:
        return []
    comments = suppression_comments(source)
    if not comments:
        return []
    translated = _translated_lines(view, source)
    found = []
    for line, (codes, start, end) in comments.items():
        if line not in translated:
            continue
        used = {_code(finding) for finding in hidden(view, session, line)}
        idle: frozenset[str] | None
        if codes is None:
            idle = None if not used else frozenset()
        else:
            idle = frozenset(code for code in codes if code not in used) if used else None
        if idle is None or idle:
            found.append((line, Span(line, start, line, end), idle))
    return found


def unused_diagnostics(view: FileView, source: str, session: Session) -> list[lsp.Diagnostic]:
    lines = split_lines(source)
    found = []
    for line, span, idle in unused(view, source, session):
        what = (
            "this suppression hides nothing"
            if idle is None
            else f"{', '.join(sorted(idle))} hide nothing here"
        )
        found.append(
            lsp.Diagnostic(
                range=to_range(span, lines),
                message=f"{what}: no break or recompilation of the analysis is on this line",
                severity=lsp.DiagnosticSeverity.Information,
                source=SOURCE,
                code=UNUSED,
                tags=[lsp.DiagnosticTag.Unnecessary],
                data={
                    "kind": UNUSED,
                    "file": view.path,
                    "line": line,
                    "codes": sorted(idle) if idle else None,
                },
            )
        )
    return found


def hover(view: FileView, source: str, session: Session, line: int, column: int) -> str | None:
    """What the suppression under the cursor hides, each finding in its own words; None off one."""
    found = suppression_comments(source).get(line)
    if found is None or not found[1] <= column <= found[2]:
        return None
    codes, start, end = found
    comment = line_text(split_lines(source), line)[start:end]
    findings = hidden(view, session, line)
    if not findings:
        return f"**`{comment}`** hides nothing the last analysis found on this line."
    items = [
        f"- **{_code(f)}** in `{f.function}`: {prose(f.message)}"
        + (
            f" (cause in {f.root.function}, line {f.span.line} of its file)"
            if isinstance(f, BreakReport) and f.path != view.path
            else ""
        )
        for f in findings
    ]
    idle = sorted(codes - {_code(f) for f in findings}) if codes is not None else []
    tail = f"\n\n{', '.join(idle)} hide nothing here." if idle else ""
    return f"**`{comment}`** hides:\n" + "\n".join(items) + tail


def actions(path: str, source: str | None, diagnostic: lsp.Diagnostic, uri: str) -> list[lsp.CodeAction]:
    """The quick fix of an unused suppression's diagnostic: the codes that hide nothing taken out."""
    data: Any = diagnostic.data
    if diagnostic.source != SOURCE or not isinstance(data, dict) or data.get("kind") != UNUSED:
        return []
    line, codes = data.get("line"), data.get("codes")
    if source is None or not isinstance(line, int) or data.get("file") != path:
        return []
    lines = split_lines(source)
    if not 0 < line <= len(lines):
        return []
    idle = frozenset(codes) if isinstance(codes, list) else None
    text = line_text(lines, line)
    new = without_suppression(text, idle)
    if new == text:
        return []
    edit = lsp.TextEdit(range=to_range(Span(line, 0, line, len(text)), lines), new_text=new)
    title = (
        "Remove the unused suppression"
        if idle is None
        else f"Remove {', '.join(sorted(idle))} from the suppression"
    )
    return [
        lsp.CodeAction(
            title=title,
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=True,
            edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
        )
    ]
