"""Code actions, served from the diagnostics' ``data``: suppression comments and the fix catalogue."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from .ranges import char_to_utf16, line_text

IGNORE = re.compile(r"#\s*gbls:\s*ignore(\[([A-Za-z0-9_,\s]*)\])?")

TextOf = Callable[[str], str | None]


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


def code_actions(uri: str, diagnostics: list[lsp.Diagnostic], text_of: TextOf) -> list[lsp.CodeAction]:
    path = uris.to_fs_path(uri) or uri
    actions: list[lsp.CodeAction] = []
    for diagnostic in diagnostics:
        data = diagnostic.data
        if diagnostic.source != "gbls" or not isinstance(data, dict):
            continue
        if data.get("kind") in ("break", "root-cause"):
            actions += suppression_actions(data, str(data.get("path", path)), text_of, diagnostic)
    return actions
