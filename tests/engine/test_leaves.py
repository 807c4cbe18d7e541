"""``@leaf_function`` and a ``logging.Logger`` method made reorderable (or, before torch 2.14, its call
made through a function of the module's registered so), as fixes where the user's torch offers them
(found by feature detection): each proven by re-analysis, and the fixed file checked against torch's
own log (the break gone)."""

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
    reordered = [fix for fix in offered if fix.title.startswith("Run logger.info() after the graph")]
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


async def test_a_loggers_call_through_a_function_made_reorderable(
    analyse_file: Analyse, tmp_path: Path
) -> None:
    """Before torch 2.14, which takes a plain function in reorderable_logging_functions but no logger's
    method, ``logger.info(...)`` becomes a call of a function of the module's that calls it: Dynamo
    calls it after the graph, and its own code, disabled, is not compiled (no break there either)."""
    path = tmp_path / "logger_method.py"
    shutil.copy(FIXTURES / "fixes" / "logger_method.py", path)
    report = await analyse_file(path)
    (brk,) = report.breaks
    offered = policy.for_break(brk, str(path), Sources(read_source), [str(tmp_path)])
    through = [fix for fix in offered if fix.title.startswith("Log with logger_info()")]
    if "reorderable_logger_methods" in brk.features:
        assert not through  # the method itself is registered there
        return
    (fix,) = through
    assert offered[0] == fix  # before the fixes that drop the line
    assert await proofs_by(analyse_file).prove(fix, brk, report, Sources(read_source)) is None
    fixed = fixed_copy(tmp_path, path, fix)
    text = fixed.read_text()
    assert '    logger_info("scaled %s", y)\n' in text
    assert "torch._dynamo.config.reorderable_logging_functions.add(logger_info)\n" in text
    assert logged_breaks(fixed) == []  # none in step, none in the function or the logging it calls
