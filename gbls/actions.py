"""Code actions, served from the diagnostics' ``data``: suppression comments and the fix catalogue."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from .diagnostics import to_range
from .fixes import Broken, Fix, fixes_for, fullgraph_fix
from .ranges import Span, char_to_utf16, line_text
from .report import FileReport

IGNORE = re.compile(r"#\s*gbls:\s*ignore(\[([A-Za-z0-9_,\s]*)\])?")

TextOf = Callable[[str], str | None]
SHOW_LOCATION = "gbls.showLocation"


def line_edit(source: str, line: int, new_text: str) -> lsp.TextEdit:
    """Replace 1-based ``line`` (without its newline) by ``new_text``."""
    old = line_text(source.splitlines(), line)
    return lsp.TextEdit(
        range=lsp.Range(lsp.Position(line - 1, 0), lsp.Position(line - 1, char_to_utf16(old, len(old)))),
        new_text=new_text,
    )


def suppressed_line(text: str, code: str | None) -> str:
    """``text`` with ``code`` (or every break, for None) added to its ``# gbls: ignore`` comment."""
    match = IGNORE.search(text)
    if match is None:
        comment = f"# gbls: ignore[{code}]" if code else "# gbls: ignore"
        return f"{text.rstrip()}  {comment}"
    if code is None or match.group(1) is None:
        return text[: match.start()] + "# gbls: ignore" + text[match.end() :]
    codes = [c.strip() for c in match.group(2).split(",") if c.strip()]
    if code not in codes:
        codes.append(code)
    return text[: match.start()] + f"# gbls: ignore[{', '.join(codes)}]" + text[match.end() :]


def _edit(path: str, source: str, line: int, code: str | None) -> lsp.WorkspaceEdit:
    new_text = suppressed_line(line_text(source.splitlines(), line), code)
    return lsp.WorkspaceEdit(changes={uris.from_fs_path(path) or path: [line_edit(source, line, new_text)]})


def suppression_actions(
    data: dict[str, Any], path: str, text_of: TextOf, diagnostic: lsp.Diagnostic
) -> list[lsp.CodeAction]:
    """Suppress this break (or every break) on the line where the graph splits."""
    source = text_of(path)
    if source is None:
        return []
    line = int(data["line"])
    code = data.get("gb_id")
    actions = []
    if code:
        actions.append(
            lsp.CodeAction(
                title=f"Suppress {code} on this line (# gbls: ignore[{code}])",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=_edit(path, source, line, code),
            )
        )
    actions.append(
        lsp.CodeAction(
            title="Suppress every graph break on this line (# gbls: ignore)",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_edit(path, source, line, None),
        )
    )
    return actions


def _uri(path: str) -> str:
    return uris.from_fs_path(path) or path


def fix_action(
    fix: Fix, text_of: TextOf, diagnostic: lsp.Diagnostic | None, preferred: bool, snippets: bool = False
) -> lsp.CodeAction:
    """``snippets``: the client takes snippet edits, so placeholders are left for the user to fill."""
    by_uri: dict[str, list[lsp.TextEdit | lsp.SnippetTextEdit]] = {}
    for edit in fix.edits:
        range_ = to_range(edit.span, (text_of(edit.path) or "").splitlines())
        change: lsp.TextEdit | lsp.SnippetTextEdit = (
            lsp.SnippetTextEdit(range_, lsp.StringValue(edit.text))
            if edit.snippet and snippets
            else lsp.TextEdit(range_, edit.plain_text)
        )
        by_uri.setdefault(_uri(edit.path), []).append(change)
    if any(isinstance(change, lsp.SnippetTextEdit) for changes in by_uri.values() for change in changes):
        workspace_edit = lsp.WorkspaceEdit(
            document_changes=[
                lsp.TextDocumentEdit(lsp.OptionalVersionedTextDocumentIdentifier(uri, version=None), changes)
                for uri, changes in by_uri.items()
            ]
        )
    else:
        workspace_edit = lsp.WorkspaceEdit(
            changes={
                uri: [c for c in changes if isinstance(c, lsp.TextEdit)] for uri, changes in by_uri.items()
            }
        )
    return lsp.CodeAction(
        title=fix.title,
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diagnostic] if diagnostic else None,
        is_preferred=preferred or None,
        edit=workspace_edit,
    )


def _go_to_root(broken: Broken, text_of: TextOf) -> lsp.Command:
    """A bare command, not a CodeAction: it edits nothing, and clients show it among the quick fixes."""
    root = broken.root
    lines = (text_of(root.path) or "").splitlines()
    where = f"{root.function} ({os.path.basename(root.path)}:{root.span.line})"
    return lsp.Command(
        title=f"Go to the root cause in {where}",
        command=SHOW_LOCATION,
        arguments=[_uri(root.path), to_range(root.span, lines)],
    )


def _overlaps(span: Span, range_: Span) -> bool:
    return (span.line, span.column) <= (range_.end_line, range_.end_column) and (
        range_.line,
        range_.column,
    ) <= (
        span.end_line,
        span.end_column,
    )


def code_actions(
    uri: str,
    diagnostics: list[lsp.Diagnostic],
    text_of: TextOf,
    report: FileReport | None = None,
    selection: Span | None = None,
    snippets: bool = False,
) -> list[lsp.CodeAction | lsp.Command]:
    """Fixes and suppressions for the gbls diagnostics in ``diagnostics``, and ``fullgraph=True`` for
    break-free compiled functions under ``selection``."""
    path = uris.to_fs_path(uri) or uri
    actions: list[lsp.CodeAction | lsp.Command] = []
    for diagnostic in diagnostics:
        data = diagnostic.data
        if (
            diagnostic.source != "gbls"
            or not isinstance(data, dict)
            or data.get("kind") not in ("break", "root-cause")
        ):
            continue
        broken = Broken.from_data(data)
        for index, fix in enumerate(fixes_for(broken, text_of)):
            actions.append(fix_action(fix, text_of, diagnostic, preferred=index == 0, snippets=snippets))
        if len(broken.chain) > 1 and data["kind"] == "break":
            actions.append(_go_to_root(broken, text_of))
        actions += suppression_actions(data, str(data.get("path", path)), text_of, diagnostic)
    source = text_of(path)
    if report is not None and selection is not None and source is not None:
        for function in report.functions:
            clean = function.analysed and function.breaks == 0 and len(function.graphs) == 1
            if (
                clean
                and not function.fullgraph
                and any(_overlaps(s, selection) for s in function.hover_spans)
            ):
                lock_in = fullgraph_fix(path, source, function.decorator, function.call)
                if lock_in is not None:
                    actions.append(fix_action(lock_in, text_of, None, preferred=False))
    return actions
