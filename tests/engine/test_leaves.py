"""``@leaf_function`` and a ``logging.Logger`` method made reorderable, as fixes where the user's torch
offers them (found by feature detection): each proven by re-analysis, and the fixed file checked
against torch's own log (the break gone)."""

from __future__ import annotations

import shutil
from pathlib import Path

from gbls.engine.fixes import policy
from gbls.engine.sources import Sources, read_source

from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.worker import Analyse
from .test_proofs import fixed_copy, proofs_by


async def test_a_logging_helper_as_a_leaf_function(analyse_file: Analyse, tmp_path: Path) -> None:
    path = tmp_path / "leaf_logging.py"
    shutil.copy(FIXTURES / "fixes" / "leaf_logging.py", path)
    report = await analyse_file(path)
    (brk,) = report.breaks
    offered = policy.for_break(brk, str(path), Sources(read_source), [str(tmp_path)])
    leaves = [fix for fix in offered if "@leaf_function" in fix.title]
    if "leaf_function" not in brk.features:
        assert not leaves  # this torch has none: never offered
        return
    (leaf,) = leaves
    assert leaf.title == (
        "Make log_stats a leaf function (@leaf_function): one call in the graph, run eagerly at each "
        "call, its fake returning nothing"
    )
    assert await proofs_by(analyse_file).prove(leaf, brk, report, Sources(read_source)) is None
    fixed = fixed_copy(tmp_path, path, leaf)
    assert "@log_stats.register_fake" in fixed.read_text()
    assert not [entry for entry in logged_breaks(fixed) if entry.at[0] == str(fixed)]


async def test_a_logger_method_made_reorderable(analyse_file: Analyse, tmp_path: Path) -> None:
    path = tmp_path / "logger_method.py"
    shutil.copy(FIXTURES / "fixes" / "logger_method.py", path)
    report = await analyse_file(path)
    (brk,) = report.breaks
    offered = policy.for_break(brk, str(path), Sources(read_source), [str(tmp_path)])
    reordered = [fix for fix in offered if "reorderable_logging_functions" in fix.title]
    if "reorderable_logger_methods" not in brk.features:
        assert not reordered  # before torch 2.14 a logger's method breaks whatever the config says
        return
    (fix,) = reordered
    assert [edit.text for edit in fix.edits] == [
        "torch._dynamo.config.reorderable_logging_functions.add(logger.info)\n"
    ]
    assert fix.edits[0].span.line == 6  # after `logger = logging.getLogger(__name__)`
    assert await proofs_by(analyse_file).prove(fix, brk, report, Sources(read_source)) is None
    fixed = fixed_copy(tmp_path, path, fix)
    assert not [entry for entry in logged_breaks(fixed) if entry.at[0] == str(fixed)]
