"""Code actions: a break's or recompilation report's fixes in the order the fix policy offers them
(``engine.fixes.policy``: the preferred one, as ``gbls check`` has it, first and marked preferred),
their suppressions, ``fullgraph=True`` for a clean function.

A diagnostic's ``data`` names the break's file and its key; the break itself is looked up in that
file's current view, so a code action always works on the break as last analysed.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any

from lsprotocol import types as lsp
from pygls import uris

from ..engine import run_remedy, runs
from ..engine.fixes import policy
from ..engine.fixes.catalogue import fullgraph_fix
from ..engine.fixes.edits import Fix
from ..engine.model import (
    RECOMPILE_CODE,
    BreakKey,
    BreakReport,
    FileReport,
    Location,
    RecompileKey,
    RecompileReport,
)
from ..engine.ranges import Span, char_to_utf16, line_text
from ..engine.sources import Sources
from ..worker.shared.directives import with_suppression
from ..worker.shared.lines import split_lines
from .diagnostics import to_range

SHOW_LOCATION = "gbls.showLocation"
# What editor.codeActionsOnSave asks for: "source.fixAll" takes every linter's, "source.fixAll.gbls" gbls's.
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.gbls"
ReportOf = Callable[[str], FileReport | None]
# The file whose analysis found a break shown in the file given: the one its fixes are made for.
AnalysedOf = Callable[[BreakReport, str], str]


def _uri(path: str) -> str:
    return uris.from_fs_path(path) or path


def line_edit(source: str, line: int, new_text: str) -> lsp.TextEdit:
    """Replace 1-based ``line`` (without its newline) by ``new_text``."""
    old = line_text(split_lines(source), line)
    return lsp.TextEdit(
        range=lsp.Range(lsp.Position(line - 1, 0), lsp.Position(line - 1, char_to_utf16(old, len(old)))),
        new_text=new_text,
    )


def _suppress(path: str, source: str, line: int, code: str | None) -> lsp.WorkspaceEdit:
    new_text = with_suppression(line_text(split_lines(source), line), code)
    return lsp.WorkspaceEdit(changes={_uri(path): [line_edit(source, line, new_text)]})


def suppression_actions(
    brk: BreakReport, where: Location, sources: Sources, diagnostic: lsp.Diagnostic
) -> list[lsp.CodeAction]:
    """Suppress this break (or every break) on the diagnostic's line ``where``: its root cause, or the
    place its graph splits (a comment on either line suppresses it)."""
    path, line = where.path, where.span.line
    source = sources.text(path)
    if source is None:
        return []
    actions = []
    if brk.gb_id:
        actions.append(
            lsp.CodeAction(
                title=f"Suppress {brk.gb_id} on this line (# gbls: ignore[{brk.gb_id}])",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=_suppress(path, source, line, brk.gb_id),
            )
        )
    actions.append(
        lsp.CodeAction(
            title="Suppress every graph break on this line (# gbls: ignore)",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_suppress(path, source, line, None),
        )
    )
    return actions


# What re-analysis made of a fix of a break: whether its verdict is known, and why it refused it
# (None: proven).
Verdicts = Callable[[Fix, BreakReport], tuple[bool, str | None]]
NO_CANDIDATE = "gbls's catalogue has no fix for this break in code of this shape"


def offer(
    brk: BreakReport, analysed: str, sources: Sources, folders: list[str], verdicts: Verdicts
) -> tuple[str | None, str]:
    """What the hover says to do about ``brk``, a break of the file ``analysed``: the title of its
    first quick fix (``policy.in_order``: the one fix all applies, else the first proven); else None,
    and why there is none."""
    ordered = policy.in_order(
        brk, analysed, sources, folders, lambda fix, b, _: verdicts(fix, b) == (True, None)
    )
    if ordered:
        return ordered[0].title, ""
    candidates = policy.for_break(brk, analysed, sources, folders)
    if not candidates:
        return None, NO_CANDIDATE
    refused = [(fix, why) for fix in candidates for known, why in [verdicts(fix, brk)] if known]
    if len(refused) < len(candidates):
        return None, "none of gbls's fixes for it is proven yet"
    fix, why = refused[0]
    return None, f"re-analysis refused every fix gbls has for it ({fix.title}: {why})"


def fix_action(
    fix: Fix,
    sources: Sources,
    diagnostic: lsp.Diagnostic | None,
    preferred: bool,
    snippets: bool = False,
    kind: str = lsp.CodeActionKind.QuickFix,
) -> lsp.CodeAction:
    """``snippets``: the client takes snippet edits, so placeholders are left for the user to fill."""
    by_uri: dict[str, list[lsp.TextEdit | lsp.SnippetTextEdit]] = {}
    for edit in fix.edits:
        range_ = to_range(edit.span, sources.lines(edit.path))
        source = sources.text(edit.path) or ""
        change: lsp.TextEdit | lsp.SnippetTextEdit = (
            lsp.SnippetTextEdit(range_, lsp.StringValue(edit.text_for(source, snippet=True)))
            if edit.snippet and snippets
            else lsp.TextEdit(range_, edit.text_for(source))
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
        kind=kind,
        diagnostics=[diagnostic] if diagnostic else None,
        is_preferred=preferred or None,
        edit=workspace_edit,
    )


def _go_to(location: Location, what: str, sources: Sources) -> lsp.Command:
    """A bare command, not a CodeAction: it edits nothing, and clients show it among the quick fixes."""
    where = f"{location.function} ({os.path.basename(location.path)}:{location.span.line})"
    return lsp.Command(
        title=f"Go to {what} in {where}",
        command=SHOW_LOCATION,
        arguments=[_uri(location.path), to_range(location.span, sources.lines(location.path))],
    )


def _named(data: Any, kinds: tuple[str, ...], report_of: ReportOf) -> tuple[FileReport, list[Any]] | None:
    """The current view of the file a gbls diagnostic's ``data`` names, and the key it gives."""
    if not isinstance(data, dict) or data.get("kind") not in kinds:
        return None
    key, path = data.get("key"), data.get("file")
    if not isinstance(path, str) or not isinstance(key, list):
        return None
    report = report_of(path)
    return (report, key) if report is not None else None


def _break_of(data: Any, report_of: ReportOf) -> tuple[FileReport, BreakReport] | None:
    """The break a gbls diagnostic's ``data`` names, as its file's current view has it."""
    named = _named(data, ("break", "split"), report_of)
    if named is None or len(named[1]) != 6:
        return None
    line, column, split_line, split_column = (int(value) for value in named[1][2:])
    key: BreakKey = (str(named[1][0]), str(named[1][1]), line, column, split_line, split_column)
    found = named[0].find(key)
    return (named[0], found) if found else None


def _recompile_of(data: Any, report_of: ReportOf) -> tuple[FileReport, RecompileReport] | None:
    """The recompilation report a gbls diagnostic's ``data`` names, as its file's current view has it."""
    named = _named(data, ("recompile",), report_of)
    if named is None or len(named[1]) != 5:
        return None
    key: RecompileKey = (
        str(named[1][0]),
        str(named[1][1]),
        int(named[1][2]),
        int(named[1][3]),
        str(named[1][4]),
    )
    found = named[0].find_recompile(key)
    return (named[0], found) if found else None


# Which fixes of a recompilation report may be offered: the editor's, those proven for it.
KeepRecompile = Callable[[Fix, RecompileReport], bool]


def recompile_actions(
    found: RecompileReport,
    report: FileReport,
    sources: Sources,
    diagnostic: lsp.Diagnostic,
    keep: KeepRecompile | None = None,
) -> list[lsp.CodeAction]:
    offered = [
        fix for fix in policy.for_recompile(found, report, sources) if keep is None or keep(fix, found)
    ]
    actions = [
        fix_action(fix, sources, diagnostic, preferred=index == 0) for index, fix in enumerate(offered)
    ]
    source = sources.text(report.path)
    if source is not None:
        actions.append(
            lsp.CodeAction(
                title=f"Suppress this recompilation report on this line (# gbls: ignore[{RECOMPILE_CODE}])",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=_suppress(report.path, source, found.span.line, RECOMPILE_CODE),
            )
        )
    return actions


def _position(text: str, offset: int) -> lsp.Position:
    before = text[:offset]
    last = before[before.rfind("\n") + 1 :]
    return lsp.Position(before.count("\n"), char_to_utf16(last, len(last)))


def _insert(path: str, text: str | None, offset: int, new: str) -> lsp.WorkspaceEdit:
    """Insert ``new`` at ``offset`` of the file ``path`` of text ``text`` (None: create the file)."""
    uri = _uri(path)
    if text is None:
        change = lsp.TextEdit(lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)), new)
        document = lsp.OptionalVersionedTextDocumentIdentifier(uri, version=None)
        return lsp.WorkspaceEdit(
            document_changes=[
                lsp.CreateFile(uri=uri, options=lsp.CreateFileOptions(ignore_if_exists=True)),
                lsp.TextDocumentEdit(document, [change]),
            ]
        )
    at = _position(text, offset)
    return lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(lsp.Range(at, at), new)]})


def run_actions(
    path: str, diagnostic: lsp.Diagnostic, report_of: ReportOf, sources: Sources, folders: list[str]
) -> list[lsp.CodeAction]:
    """For a script that stopped for want of arguments, data or its package, or that the budget cut
    before it ran compiled code (``run_remedy``): add a run of it, prefilled from the README, to
    ``.vscode/launch.json`` or to ``pyproject.toml``."""
    report = report_of(path)
    data = diagnostic.data
    kind = data.get("kind") if isinstance(data, dict) else None
    if report is None or kind not in ("failure", "cut"):
        return []
    if report.executed[:1] != (path,):  # the failure of another file's analysis: this is no script of it
        return []
    inside = [f for f in folders if path.startswith(f.rstrip(os.sep) + os.sep)]
    folder = max(inside, key=len) if inside else os.path.dirname(path)
    if kind == "cut":  # cut before it ran compiled code: a smaller run may get there within the budget
        if any(f.analysed for f in report.functions):
            return []
    elif not run_remedy.needs_a_run(report.failure_kind, report.message, folder):
        return []
    run = run_remedy.suggested(folder, path, as_module=report.failure_kind == "import")
    target = ["-m", run.module] if run.module else [os.path.relpath(run.script, folder)]
    command = shlex.join(["python", *target, *run.args])
    actions = []
    launch = os.path.join(folder, runs.LAUNCH)
    text = sources.text(launch)
    found = run_remedy.launch_insertion(text, run, folder)
    if found is not None:
        actions.append(
            lsp.CodeAction(
                title=f"Add a run to .vscode/launch.json: {command}",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                is_preferred=True,
                edit=_insert(launch, text, *found),
            )
        )
    pyproject = os.path.join(folder, runs.PYPROJECT)
    text = sources.text(pyproject)
    actions.append(
        lsp.CodeAction(
            title=f"Add a run to pyproject.toml ([[tool.gbls.run]]): {command}",
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_insert(pyproject, text, *run_remedy.pyproject_insertion(text, run, folder)),
        )
    )
    return actions


def code_actions(
    path: str,
    diagnostics: list[lsp.Diagnostic],
    sources: Sources,
    report_of: ReportOf,
    folders: list[str],
    selection: Span | None = None,
    snippets: bool = False,
    keep: policy.Keep | None = None,
    keep_recompile: KeepRecompile | None = None,
    analysed_of: AnalysedOf = lambda brk, path: path,
) -> list[lsp.CodeAction | lsp.Command]:
    """Fixes and suppressions for the gbls diagnostics in ``diagnostics``, and ``fullgraph=True`` for
    break-free compiled functions of ``path`` under ``selection``. Fixes only edit the analysed file
    (``analysed_of``: that of the analysis that found the break) and files in the workspace
    ``folders``, and are those ``keep`` keeps (the proven ones), the one fix all applies first."""
    actions: list[lsp.CodeAction | lsp.Command] = []
    for diagnostic in diagnostics:
        if diagnostic.source == "gbls":
            actions += run_actions(path, diagnostic, report_of, sources, folders)
        recompiled = _recompile_of(diagnostic.data, report_of) if diagnostic.source == "gbls" else None
        if recompiled is not None:
            actions += recompile_actions(recompiled[1], recompiled[0], sources, diagnostic, keep_recompile)
        found = _break_of(diagnostic.data, report_of) if diagnostic.source == "gbls" else None
        if found is None:
            continue
        brk = found[1]
        proven = keep or (lambda fix, b, analysed: True)
        for index, fix in enumerate(policy.in_order(brk, analysed_of(brk, path), sources, folders, proven)):
            actions.append(fix_action(fix, sources, diagnostic, preferred=index == 0, snippets=snippets))
        at_split = isinstance(diagnostic.data, dict) and diagnostic.data["kind"] == "split"
        if at_split:
            actions.append(_go_to(Location(brk.path, brk.root.function, brk.span), "the root cause", sources))
        elif brk.split is not None:
            actions.append(_go_to(brk.split, f"where the graph of {brk.split_graph} splits", sources))
        here = brk.split if at_split and brk.split is not None else Location(brk.path, brk.function, brk.span)
        actions += suppression_actions(brk, here, sources, diagnostic)
    source = sources.text(path)
    report = report_of(path)
    if report is not None and selection is not None and source is not None:
        for function in report.functions:
            clean = function.analysed and function.breaks == 0 and len(function.graphs) == 1
            if (
                clean
                and not function.target.fullgraph
                and any(s.touches(selection) for s in function.hover_spans)
            ):
                lock_in = fullgraph_fix(path, source, function.decorator, function.call)
                if lock_in is not None:
                    actions.append(fix_action(lock_in, sources, None, preferred=False))
    return actions


def fix_all(
    path: str,
    reports: list[FileReport],
    sources: Sources,
    folders: list[str],
    keep: policy.Keep,
    is_open: Callable[[str], bool] = lambda path: True,
    annotations: bool = False,
) -> lsp.CodeAction | None:
    """What ``gbls check --fix`` changes for ``path``: the fix ``--fix`` applies (``policy.applied``,
    of the fixes ``keep`` says are proven) of each break of ``reports`` shown in ``path`` (its edits
    wherever they are: the flag a break in ``model.py`` needs goes into the ``train.py`` that
    compiles it), and of each break elsewhere whose edits are all in ``path``; as one action of kind
    ``source.fixAll.gbls``, None if there is none.

    A file it changes that is not open (``is_open``), which an editor would change and save unseen,
    is named in its title; where the client takes change annotations (``annotations``), its edits
    are annotated as needing confirmation, so that the client says so before changing it.

    A fix checks the code's shape where the break is in the text as it is now (the call it removes,
    the ``.item()`` it is about), so a report older than an edit cannot make it edit the wrong code.
    """
    fixes = policy.applied(reports, sources, folders, keep)
    shown = {(report.path, brk.key) for report in reports for brk in report.breaks if brk.path == path}
    here = {
        key: fix for key, fix in fixes.items() if key in shown or all(edit.path == path for edit in fix.edits)
    }
    edits, _ = policy.safe_edits(reports, here)
    if not edits:
        return None
    taken = tuple(edit for in_file in edits.values() for edit in in_file)
    closed = [edited for edited in edits if edited != path and not is_open(edited)]
    names = ", ".join(os.path.basename(edited) for edited in closed)
    title = "gbls: apply the safe fixes (as gbls check --fix)" + (
        f", changing {names} (not open)" * bool(closed)
    )
    action = fix_action(Fix(title, taken, safe=True), sources, None, preferred=False, kind=FIX_ALL)
    if closed and annotations:
        action.edit = _confirmed(action.edit, {_uri(edited) for edited in closed}, names)
    return action


NOT_OPEN = "gbls.notOpen"


def _confirmed(edit: lsp.WorkspaceEdit | None, closed: set[str], names: str) -> lsp.WorkspaceEdit:
    """``edit`` (of plain text edits) with its edits of the files ``closed`` (``names``) annotated
    as needing the user's confirmation: the client shows them before it changes those files."""
    assert edit is not None and edit.changes is not None
    return lsp.WorkspaceEdit(
        document_changes=[
            lsp.TextDocumentEdit(
                lsp.OptionalVersionedTextDocumentIdentifier(uri, version=None),
                [
                    lsp.AnnotatedTextEdit(annotation_id=NOT_OPEN, range=e.range, new_text=e.new_text)
                    for e in changes
                ]
                if uri in closed
                else list(changes),
            )
            for uri, changes in edit.changes.items()
        ],
        change_annotations={
            NOT_OPEN: lsp.ChangeAnnotation(
                label=f"gbls fix all changes {names}, which is not open",
                needs_confirmation=True,
                description="the fix of a break shown in this file is made in the file that compiles it",
            )
        },
    )


def requested_actions(
    path: str,
    context: lsp.CodeActionContext,
    selection: Span,
    sources: Sources,
    report_of: ReportOf,
    reports: Callable[[], list[FileReport]],
    folders: list[str],
    snippets: bool,
    keep: policy.Keep,
    keep_recompile: KeepRecompile | None = None,
    analysed_of: AnalysedOf = lambda brk, path: path,
    is_open: Callable[[str], bool] = lambda path: True,
    annotations: bool = False,
) -> list[lsp.CodeAction | lsp.Command]:
    """The actions a code action request for ``selection`` of ``path`` asks for: quick fixes (see
    ``code_actions``) and fix all (of every report of ``reports()``), as ``context.only`` has it."""
    only = context.only or []

    def asked(kind: str) -> bool:
        """Whether ``only`` has ``kind``, or a kind that holds it ("source" holds "source.fixAll")."""
        return any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)

    found: list[lsp.CodeAction | lsp.Command] = []
    if not only or asked(lsp.CodeActionKind.QuickFix.value):
        found += code_actions(
            path,
            list(context.diagnostics),
            sources,
            report_of,
            folders,
            selection,
            snippets,
            keep,
            keep_recompile,
            analysed_of,
        )
    if asked(FIX_ALL):  # a source action: only on request (on save, or from the Source Action menu)
        every = fix_all(path, reports(), sources, folders, keep, is_open, annotations)
        found += [every] if every is not None else []
    return found
