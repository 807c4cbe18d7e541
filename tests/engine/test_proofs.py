"""Fixes proven by re-analysis: each candidate applied to a copy and analysed again by the real worker,
the verdict checked against torch's own log of the fixed file."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import torch

from gbls.engine.fixes import branches, policy
from gbls.engine.fixes.catalogue import enable_flag
from gbls.engine.fixes.edits import Fix, apply
from gbls.engine.fixes.verdict import Undecided
from gbls.engine.model import BreakReport, FileReport, failure_report
from gbls.engine.sources import Sources, read_source
from gbls.runtime.proofs import Proofs, proven_fixes

from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch

HAS_NESTED = hasattr(torch._dynamo.config, "nested_graph_breaks")


def proofs_by(analyse_file: Analyse) -> Proofs:
    async def reanalyse(path: str, text: str, workspace: str) -> FileReport:
        return await analyse_file(Path(path), text)

    return Proofs(reanalyse)


def copied(tmp_path: Path, fixture: str) -> Path:
    path = tmp_path / Path(fixture).name
    shutil.copy(FIXTURES / fixture, path)
    return path


def fixed_copy(tmp_path: Path, path: Path, fix: Fix) -> Path:
    """The fixed text in a file of its own, for torch's log of it."""
    fixed = tmp_path / "fixed" / path.name
    fixed.parent.mkdir()
    fixed.write_text(apply(path.read_text(), list(fix.edits)))
    return fixed


async def only_break(analyse_file: Analyse, path: Path, gb_id: str) -> tuple[FileReport, BreakReport]:
    report = await analyse_file(path)
    assert_agrees_with_torch(report, path)
    (brk,) = [b for b in report.breaks if b.gb_id == gb_id]
    return report, brk


async def test_an_early_return_of_a_python_value_gets_no_torch_cond(
    analyse_file: Analyse, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``return x.item() + 1`` is a float: the catalogue does not offer torch.cond for it, and had it
    done so, re-analysis would have refused it (the fixed program no longer runs as it did)."""
    path = copied(tmp_path, "fixes/return_scalar.py")
    report, brk = await only_break(analyse_file, path, "GB0170")
    sources = Sources(read_source)
    offered = policy.for_break(brk, str(path), sources, [str(tmp_path)])
    assert not any("torch.cond" in fix.title for fix in offered)
    monkeypatch.setattr(branches, "may_be_tensor", lambda value: True)
    unchecked = branches.return_rewrite(brk, str(path), sources)
    assert unchecked is not None
    verdict = await proofs_by(analyse_file).prove(unchecked, brk, report, sources)
    assert verdict is not None and verdict != "the break is still there after it", verdict


async def test_the_proven_early_return_rewrite_leaves_no_break_in_torchs_log(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    path = copied(tmp_path, "fixes/return_cond.py")
    report, brk = await only_break(analyse_file, path, "GB0170")
    sources = Sources(read_source)
    chosen, refused = await proven_fixes(proofs_by(analyse_file), [report], sources, [str(tmp_path)], True)
    fix = chosen[(str(path), brk.key)]
    assert fix.title.startswith("Rewrite the early return with torch.cond") and not refused
    assert logged_breaks(fixed_copy(tmp_path, path, fix)) == []
    safe_only, _ = await proven_fixes(proofs_by(analyse_file), [report], sources, [str(tmp_path)], False)
    assert safe_only == {}  # the rewrite is unsafe: not in fix-all


async def test_a_checkpointed_side_effect_is_not_offered_nested_graph_breaks(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """Nesting does not change torch's break count for a break inside a higher-order operator: the
    hatch is not offered, and forced on, re-analysis refuses it (torch's log agrees)."""
    path = copied(tmp_path, "hatches/checkpointed.py")
    report, brk = await only_break(analyse_file, path, "GB0067")
    sources = Sources(read_source)
    offered = policy.for_break(brk, str(path), sources, [str(tmp_path)])
    assert not any("nested graph breaks" in fix.title for fix in offered)
    if not HAS_NESTED:
        return
    flag = enable_flag(str(path), sources, "nested_graph_breaks", safe=False)
    assert flag is not None
    forced = dataclasses.replace(flag, proof="fewer")
    verdict = await proofs_by(analyse_file).prove(forced, brk, report, sources)
    assert verdict == "forward is in as many graphs after it"

    def unsuppressed(path: Path) -> int:
        return len([entry for entry in logged_breaks(path) if not entry.suppressed])

    assert unsuppressed(fixed_copy(tmp_path, path, forced)) == unsuppressed(path) == 1


async def test_a_warning_in_compiled_code_is_reordered_after_the_graph(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """GB0007, a call of a function Dynamo skips (``warnings.warn``): registered as reorderable logging,
    as torch's hint says, it warns after the graph runs; proven, unsafe, and preferred to its removal."""
    path = copied(tmp_path, "fixes/warn_call.py")
    report, brk = await only_break(analyse_file, path, "GB0007")
    sources = Sources(read_source)
    chosen, _ = await proven_fixes(proofs_by(analyse_file), [report], sources, [str(tmp_path)], True)
    fix = chosen[(str(path), brk.key)]
    assert fix.title.startswith("Let Dynamo warn after the graph") and not fix.safe
    assert logged_breaks(fixed_copy(tmp_path, path, fix)) == []


async def test_the_eager_fallback_is_proven_by_one_clean_skip(analyse_file: Analyse, tmp_path: Path) -> None:
    path = copied(tmp_path, "hatches/deep_print.py")
    report, brk = await only_break(analyse_file, path, "GB0059")
    sources = Sources(read_source)
    offered = policy.for_break(brk, str(path), sources, [str(tmp_path)])
    (eager,) = [fix for fix in offered if fix.title.startswith("Stop compiling report")]
    proofs = proofs_by(analyse_file)
    assert await proofs.prove(eager, brk, report, sources) is None
    assert proofs.known(eager, brk, sources) == (True, None)  # worked out once, kept
    logged = logged_breaks(fixed_copy(tmp_path, path, eager))
    assert [entry.gb_types[0] for entry in logged if not entry.suppressed] == [
        "Skip calling `torch.compiler.disable()`d function"
    ]


async def test_a_library_call_that_breaks_in_several_places_moves_out_whole(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """A diffusers scheduler's step breaks in several places, all at one line of the user's compiled
    step: nothing gbls may edit is in the library, so the last resort moves the call into a function
    of its own run eagerly; each break's proof passes (counted apart though they share the line),
    and torch's log of the fixed file has the one clean skip. A workaround: ``--fix`` never applies it."""
    path = copied(tmp_path, "library_frames/ddpm_denoise_step.py")
    report = await analyse_file(path)
    sources = Sources(read_source)
    proofs = proofs_by(analyse_file)
    moved = []
    for brk in report.breaks:
        offered = policy.for_break(brk, str(path), sources, [str(tmp_path)])
        moving = [fix for fix in offered if fix.title.startswith("Stop compiling `scheduler.step")]
        for fix in moving:
            assert not fix.removes and await proofs.prove(fix, brk, report, sources) is None
        moved += moving
    assert len(moved) >= 2  # each break's, proven apart (five on torch 2.13)
    chosen, _ = await proven_fixes(proofs, [report], sources, [str(tmp_path)], True)
    assert not set(moved) & set(chosen.values())
    (fix,) = set(moved)
    logged = logged_breaks(fixed_copy(tmp_path, path, fix))
    assert [entry.gb_types[0] for entry in logged if not entry.suppressed] == [
        "Skip calling `torch.compiler.disable()`d function"
    ]


async def test_a_re_analysis_stopped_by_a_limit_neither_proves_nor_refuses(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """On a busy machine the fixed text's analysis can run out of time: that says nothing of the fix,
    which is neither refused nor kept undecided; the next proof analyses it again and proves it."""
    path = copied(tmp_path, "fixes/print_call.py")
    report, brk = await only_break(analyse_file, path, "GB0059")
    sources = Sources(read_source)
    (fix, *_) = policy.for_break(brk, str(path), sources, [str(tmp_path)])
    timed_out = [True]

    async def reanalyse(path: str, text: str, workspace: str) -> FileReport:
        if timed_out.pop() if timed_out else False:
            return failure_report(path, "timeout", "the analysis ran past its 20 s")
        return await analyse_file(Path(path), text)

    proofs = Proofs(reanalyse)
    with pytest.raises(Undecided, match="ran past"):
        await proofs.prove(fix, brk, report, sources)
    assert proofs.known(fix, brk, sources) == (False, None)  # not refused, not kept
    assert await proofs.prove(fix, brk, report, sources) is None
    # gbls check --fix: the fix it could not tell about is passed over for the next one proven.
    timed_out.append(True)
    chosen, refused = await proven_fixes(Proofs(reanalyse), [report], sources, [str(tmp_path)], True)
    assert chosen[(str(path), brk.key)] != fix and not refused
