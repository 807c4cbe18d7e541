"""Fixable means fixable, everywhere: what ``gbls check`` marks ``[*]`` and counts, the JSON's
applicability, what ``--fix`` (and ``--unsafe-fixes``) applies, the editor's fix all, its preferred
quick fix and the hover's "To do" all come from the same proof verdicts (``policy.applied``), on the
fix fixtures: real analyses, each candidate proven by re-analysis with the real worker."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from gbls.engine import views
from gbls.engine.fixes import policy
from gbls.engine.fixes.edits import Fix
from gbls.engine.fixes.verdict import Undecided
from gbls.engine.model import BreakReport
from gbls.engine.sources import Sources, read_source
from gbls.formats import json as json_format
from gbls.formats import text as text_format
from gbls.lsp.actions import FIX_ALL, code_actions, fix_action, fix_all, offer
from gbls.lsp.diagnostics import file_diagnostics
from gbls.runtime.proofs import proven_fixes

from ..support import FIXTURES
from ..support.worker import Analyse
from .test_proofs import proofs_by

# Every fixture of a break fix: safe fixes (a flag, a graph_break() removed), unsafe ones (a branch
# rewritten, a print or a warning reordered or removed, a logger's call), one in another file (a
# decorator dropped in fix_helpers.py), a leaf function, none (a Python value).
FIXTURES_WITH_FIXES = [
    "branch_cond.py",
    "branch_skeleton.py",
    "branch_where.py",
    "disabled.py",
    "explicit_break.py",
    "fix_all.py",
    "ifexp_where.py",
    "item_call.py",
    "leaf_logging.py",
    "logger_call.py",
    "logger_method.py",
    "nonzero_call.py",
    "print_call.py",
    "propagated.py",
    "return_cond.py",
    "return_scalar.py",
    "warn_call.py",
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("fixable")
    shutil.copytree(FIXTURES / "fixes", copy, dirs_exist_ok=True)
    return copy


def _edits(action: lsp.CodeAction) -> set[tuple[str, int, int, int, int, str]]:
    assert action.edit is not None and action.edit.changes is not None
    return {
        (
            uri,
            e.range.start.line,
            e.range.start.character,
            e.range.end.line,
            e.range.end.character,
            e.new_text,
        )
        for uri, edits in action.edit.changes.items()
        for e in edits
    }


@pytest.mark.parametrize("name", FIXTURES_WITH_FIXES)
async def test_every_layer_reads_the_same_verdicts(analyse_file: Analyse, folder: Path, name: str) -> None:
    path = folder / name
    report = await analyse_file(path)
    assert report.status == "ok" and report.breaks, report.message
    sources, folders = Sources(read_source), [str(folder)]
    proofs = proofs_by(analyse_file)
    # The CLI's: each break's candidates proven in order until one passes.
    applied, _ = await proven_fixes(proofs, [report], sources, folders, False)
    unsafe, _ = await proven_fixes(proofs, [report], sources, folders, True)
    # The editor's: every candidate proven, workarounds too.
    for brk in report.breaks:
        for fix in policy.for_break(brk, str(path), sources, folders):
            try:
                await proofs.prove(fix, brk, report, sources)
            except Undecided:
                pass

    def proven(fix: Fix, brk: BreakReport, analysed: str) -> bool:
        return proofs.holds(fix, brk, sources)

    assert applied == policy.applied([report], sources, folders, proven)
    assert unsafe == policy.applied([report], sources, folders, proven, unsafe=True)
    assert all(fix.safe and fix.removes for fix in applied.values())
    assert all(fix.removes for fix in unsafe.values()) and applied.keys() <= unsafe.keys()

    # gbls check: `[*]` on exactly the breaks --fix fixes, and their count.
    said = text_format.render([report], applied).splitlines()
    marked = {line.split(": ")[1].split()[0] for line in said if " [*] " in line}
    assert marked == {brk.code for brk in report.breaks if (report.path, brk.key) in applied}
    count = [line for line in said if line.endswith("fixable with `gbls check --fix`.")]
    assert count == ([f"[*] {len(applied)} fixable with `gbls check --fix`."] if applied else [])
    # The JSON: "safe" exactly where --fix applies the fix ("unsafe" where --unsafe-fixes does).
    preferred = policy.preferred([report], sources, folders)
    for fixes in (applied, unsafe):
        (file,) = json.loads(json_format.render([report], "", preferred, fixes))["files"]
        for brk, shown in zip(report.breaks, file["breaks"], strict=True):
            taken = fixes.get((report.path, brk.key))
            applicability = shown["fix"]["applicability"] if shown["fix"] else None
            if taken is None:
                assert applicability in ("display-only", None)
            else:
                assert shown["fix"]["message"] == taken.title
                assert applicability == ("safe" if taken.safe else "unsafe")

    # --fix's edits are fix all's.
    edits, fixed_breaks = policy.safe_edits([report], applied)
    every = fix_all(str(path), [report], sources, folders, proven)
    if not fixed_breaks:
        assert every is None
    else:
        assert every is not None and every.kind == FIX_ALL
        expected_edits = tuple(edit for in_file in edits.values() for edit in in_file)
        fixed = Fix("", expected_edits, safe=True)
        assert _edits(every) == _edits(fix_action(fixed, sources, None, preferred=False))

    # Ctrl+.: the proven fixes, the one --fix applies preferred and first; the hover's "To do" is it.
    view = views.by_file(report)[str(path)]
    source = sources.text(str(path)) or ""
    for diagnostic in file_diagnostics(view, source, "warning", sources.lines):
        data = diagnostic.data
        if not (isinstance(data, dict) and data.get("kind") == "break"):
            continue
        (brk,) = [b for b in report.breaks if list(b.key) == data["key"]]
        actions = code_actions(str(path), [diagnostic], sources, {str(path): view}.get, folders, keep=proven)
        offered = [
            a
            for a in actions
            if isinstance(a, lsp.CodeAction) and a.edit is not None and not a.title.startswith("Suppress")
        ]
        assert all(
            proven(fix, brk, str(path))
            for fix in policy.for_break(brk, str(path), sources, folders)
            if fix.title in {a.title for a in offered}
        )
        taken = applied.get((report.path, brk.key))
        if taken is not None:
            assert (offered[0].title, offered[0].is_preferred) == (taken.title, True)
        todo, _ = offer(brk, str(path), sources, folders, functools.partial(proofs.known, sources=sources))
        assert todo == (offered[0].title if offered else None)
