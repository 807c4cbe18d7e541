"""``gbls import`` against gbls's own analysis: each fixture run by plain ``python`` with
``TORCH_TRACE`` and ``TORCH_LOGS=graph_breaks,recompiles`` (the run's own torch writes both), its
trace and its log imported, and the result compared with the analysis of the same fixture on the
same torch: the same root causes and split sites, chains, counts, GB ids, and recompilations.

The runs are real ``python fixture.py`` runs (the default inductor backend), two at a time; a
representative subset of the engine and recompilation fixtures keeps the module to about 80 s of
CPU (about 45 s on two idle cores).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import torch

from gbls.cli import main
from gbls.engine import views
from gbls.engine.model import BreakReport, FileReport, FileView, Location, RecompileReport
from gbls.engine.sources import read_source
from gbls.traces.load import Imported, load
from gbls.traces.report import reports

from ..support import FIXTURES
from ..support.worker import Analyse, analysed

# Each kind of finding once: a break in the compiled function, one in a callee in another file, a
# compiled module, a data-dependent branch and an item() in one function; recompilations on a
# value, and on shapes up to the limit. (deep_helpers, loop_break, two_callers, recompiles/shapes
# and recompiles/resumed agree too; left out to keep the module near a minute.)
FIXTURES_RUN = [
    "engine/print_body.py",
    "engine/cross_module.py",
    "engine/compiled_module.py",
    "engine/branch_item.py",
    "recompiles/switch.py",
    "recompiles/limit.py",
]
UNRECORDED = {"Attempt to trace generator"}  # loop_break.py's generator: see ``recorded``
TWO_RANKS = FIXTURES / "traces" / "two_ranks.py"


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each fixture run as ``python fixture.py`` in its folder, with its trace and its log: the
    folder that holds ``trace/`` and ``log.txt``."""
    root = tmp_path_factory.mktemp("traced")

    def run(name: str) -> tuple[str, Path]:
        fixture = FIXTURES / name
        out = root / name.replace("/", "-")
        out.mkdir()
        environment = dict(os.environ, TORCH_TRACE=str(out / "trace"), TORCH_LOGS="graph_breaks,recompiles")
        with open(out / "log.txt", "w") as log:
            subprocess.run(
                [sys.executable, fixture.name],
                cwd=fixture.parent,
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=log,
                timeout=300,
                check=False,
            )
        return name, out

    def two_ranks() -> tuple[str, Path]:
        out = root / "two_ranks"
        out.mkdir()
        environment = dict(os.environ, TORCH_TRACE=str(out / "trace"), TORCH_LOGS="graph_breaks,recompiles")
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        with open(out / "log.txt", "w") as log:
            subprocess.run(
                [*command, TWO_RANKS.name],
                cwd=TWO_RANKS.parent,
                env=environment,
                stdout=subprocess.DEVNULL,
                stderr=log,
                timeout=300,
                check=True,
            )
        return "two_ranks", out

    def moved() -> tuple[str, Path]:
        """print_body.py run from a copy, whose lines the test moves after the run."""
        copy = root / "moved" / "print_body.py"
        copy.parent.mkdir()
        shutil.copy(FIXTURES / "engine" / "print_body.py", copy)
        environment = dict(os.environ, TORCH_TRACE=str(copy.parent / "trace"))
        subprocess.run(
            [sys.executable, copy.name],
            cwd=copy.parent,
            env=environment,
            capture_output=True,
            timeout=300,
            check=True,
        )
        return "moved", copy.parent

    with ThreadPoolExecutor(max_workers=2) as pool:
        started = [pool.submit(two_ranks), pool.submit(moved)]
        found = dict(pool.map(run, FIXTURES_RUN))
        return found | dict(future.result() for future in started)


def _location(location: Location | None) -> tuple[Any, ...] | None:
    if location is None:
        return None
    span = location.span
    return (location.path, location.function, span.line, span.column, span.end_line, span.end_column)


def _break(brk: BreakReport) -> tuple[Any, ...]:
    return (
        brk.function,
        brk.gb_type,
        brk.gb_id,
        brk.effect,
        brk.count,
        brk.reason,
        brk.cause.explanation,
        brk.cause.hints,
        _location(brk.root),
        _location(brk.split),
        tuple(map(_location, brk.chain)),
    )


def _recompile(found: RecompileReport) -> tuple[Any, ...]:
    guard = found.guard
    return (
        found.function,
        found.frame.name,
        found.direct,
        found.path,
        found.span,
        _location(found.guard_at),
        found.why,
        tuple((r.compile_id, r.limit, r.limit_value) for r in found.recompiles),
        guard.text if guard is not None else None,
    )


def recorded(view: FileReport) -> FileReport:
    """The view without what no trace holds: Dynamo refuses a generator function before it records
    anything of it (neither the trace nor the log names it), so only the analysis finds it."""
    unrecorded = {b.function for b in view.breaks if b.gb_type in UNRECORDED}
    return dataclasses.replace(
        view,
        breaks=tuple(b for b in view.breaks if b.gb_type not in UNRECORDED),
        functions=tuple(f for f in view.functions if f.qualname not in unrecorded),
    )


def summary(view: FileReport, functions: bool = True) -> dict[str, Any]:
    """What an import must say of a file as the analysis does."""
    return {
        "breaks": sorted(map(_break, view.breaks)),
        "suppressed": sorted(map(_break, view.suppressed)),
        "splits": sorted(map(_break, view.splits)),
        "elsewhere": sorted(map(_break, view.elsewhere)),
        "recompiles": sorted(map(_recompile, view.recompiles)),
    } | (
        {"functions": sorted((f.qualname, f.kind, f.breaks, f.compilations) for f in view.functions)}
        if functions
        else {}
    )


def imported_views(trace: Imported, workspace: str) -> dict[str, FileReport]:
    found: dict[str, list[FileView]] = {}
    for view in reports(trace, read_source, [workspace]):
        found.setdefault(view.path, []).append(view)
    return {path: views.combined(seen) for path, seen in found.items()}


def compared(
    analysed: FileReport, imported: dict[str, FileReport], functions: bool = True
) -> Iterator[tuple[str, Any, Any]]:
    """Each file's summary by the analysis and by the import, where either found something."""
    own = views.by_file(analysed)
    for path in sorted(set(own) | set(imported)):
        ours = summary(recorded(own[path]), functions) if path in own else None
        theirs = summary(imported[path], functions) if path in imported else None
        findings = [
            value for said in (ours, theirs) for key, value in (said or {}).items() if key != "functions"
        ]
        if (ours is not None and theirs is not None) or any(findings):
            yield path, ours, theirs


_analysed: dict[Path, FileReport] = {}


async def analysis_of(fixture: Path, analyse_file: Analyse) -> FileReport:
    """gbls's own analysis of the fixture, once for its trace and its log."""
    if fixture not in _analysed:
        _analysed[fixture] = await analyse_file(fixture)
    analysed.append(fixture)  # the compatibility matrix counts the fixture for each test
    return _analysed[fixture]


@pytest.mark.parametrize("name", FIXTURES_RUN)
async def test_trace_equals_analysis(name: str, traced: dict[str, Path], analyse_file: Analyse) -> None:
    fixture = FIXTURES / name
    analysed = await analysis_of(fixture, analyse_file)
    trace = load(str(traced[name] / "trace"), [str(fixture.parent)], read_source)
    assert trace.problems == []
    assert trace.processes
    assert trace.torch in ("", torch.__version__)  # torch 2.6's trace does not say its version
    for path, ours, theirs in compared(analysed, imported_views(trace, str(fixture.parent))):
        assert theirs == ours, path


@pytest.mark.parametrize("name", FIXTURES_RUN)
async def test_log_equals_analysis(name: str, traced: dict[str, Path], analyse_file: Analyse) -> None:
    """The run's TORCH_LOGS=graph_breaks,recompiles log says the same breaks and recompilations; it
    has no record of the frames Dynamo translated without either, so compiled functions are not
    compared."""
    fixture = FIXTURES / name
    analysed = await analysis_of(fixture, analyse_file)
    log = load(str(traced[name] / "log.txt"), [str(fixture.parent)], read_source)
    assert log.problems == []
    imported = imported_views(log, str(fixture.parent))
    for path, ours, theirs in compared(analysed, imported, functions=False):
        assert theirs == ours, path


def test_two_ranks_say_which_rank_broke(traced: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """torchrun's two processes: the break both ranks hit is the run's, the one in the branch only
    rank 1 takes is said to be rank 1's, as torch's own log of the run ([rank1]: lines) says; from
    the per-rank trace files and from the one log that holds both ranks."""
    folder = traced["two_ranks"]
    said = (folder / "log.txt").read_text()
    logged = {
        (int(rank), int(line))
        for rank, line in re.findall(
            r"^\[rank(\d+)\]:.*Graph break in user code at .*two_ranks\.py:(\d+)$", said, re.M
        )
    }
    assert logged == {(0, 11), (1, 11), (1, 13)}
    for source in (folder / "trace", folder / "log.txt"):
        trace = load(str(source), [str(TWO_RANKS.parent)], read_source)
        assert trace.problems == [] and trace.ranks == [0, 1]
        view = imported_views(trace, str(TWO_RANKS.parent))[str(TWO_RANKS)]
        ranks = {b.span.line: b.provenance.ranks for b in view.breaks if b.provenance is not None}
        assert ranks == {11: (0, 1), 13: (1,)}
        assert {b.function for b in view.breaks} == {"step"}
    status = main(["import", str(folder / "trace")])
    printed = capsys.readouterr().out
    assert status == 1
    assert re.search(r"two_ranks\.py:11:5: GB0059 .*\(print\) \[in step\] .*all 2 ranks\)$", printed, re.M)
    assert re.search(
        r"two_ranks\.py:13:9: GB0059 .*\(print\) \[in step\] .*rank 1 only \(of 2\)\)$", printed, re.M
    )


def test_moved_lines_are_not_shown_on_the_wrong_line(traced: dict[str, Path]) -> None:
    """A trace of another version of the file: a finding whose line no longer holds the code the
    run ran there is left out, and the import says so."""
    folder = traced["moved"]
    source = folder / "print_body.py"
    trace = load(str(folder / "trace"), [str(folder)], read_source)
    assert [b.span.line for b in imported_views(trace, str(folder))[str(source)].breaks] == [7]
    original = source.read_text()
    source.write_text("# a line above moves the rest down\n" + original)
    try:
        trace = load(str(folder / "trace"), [str(folder)], read_source)
        assert all(not view.breaks for view in imported_views(trace, str(folder)).values())
        assert any("print_body.py changed since the run" in note for note in trace.notes)
    finally:
        source.write_text(original)


def test_a_truncated_trace_keeps_what_was_read(traced: dict[str, Path], tmp_path: Path) -> None:
    """A trace cut off while torch wrote it: the records before the cut are read, the cut record is
    said, nothing fails."""
    (whole,) = (traced["engine/print_body.py"] / "trace").iterdir()
    lines = whole.read_text().splitlines(keepends=True)
    # Cut inside the payload that follows the graph-break record: the break is said, not read.
    start = next(index for index, line in enumerate(lines) if "dynamo_graph_break_reason" in line)
    cut = tmp_path / "cut.log"
    cut.write_text("".join(lines[: start + 3]))
    trace = load(str(cut), [str(FIXTURES / "engine")], read_source)
    assert any("cut off or altered" in problem for problem in trace.problems)
    assert trace.processes
    assert all(not view.breaks for view in imported_views(trace, str(FIXTURES / "engine")).values())


def test_unreadable_input_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Neither a trace nor a log, a folder without files, a path that is not there: each said, the
    exit status 2, no traceback."""
    other = tmp_path / "notes.txt"
    other.write_text("epoch 1 loss 0.3\nepoch 2 loss 0.2\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    status = main(["import", str(other), str(empty), str(tmp_path / "missing")])
    said = capsys.readouterr().err
    assert status == 2
    assert f"{other}: neither a TORCH_TRACE file" in said
    assert f"{empty}: the folder holds no trace file" in said
    assert "missing: no such file or folder" in said
    assert "Traceback" not in said


def metrics_of(trace: Path) -> dict[str, dict[str, Any]]:
    """Each compile id's compilation metrics, as the run's own trace records them (its JSON lines)."""
    found: dict[str, dict[str, Any]] = {}
    for file in sorted(trace.iterdir()):
        for line in file.read_text().splitlines():
            record = re.search(r"\] (\{.*\})$", line)
            data = json.loads(record.group(1)) if record else {}
            if "compilation_metrics" in data:
                found[f"{data['frame_id']}/{data['frame_compile_id']}"] = data["compilation_metrics"]
    return found


async def test_a_traces_compilations_cost_what_the_run_measured(traced: dict[str, Path]) -> None:
    """An imported trace's compilations, each with the run's whole compile time (Inductor's part as
    the backend's) and guards, as its compilation metrics recorded them."""
    fixture = FIXTURES / "recompiles" / "limit.py"
    trace = load(str(traced["recompiles/limit.py"] / "trace"), [str(fixture.parent)], read_source)
    (total,) = imported_views(trace, str(fixture.parent))[str(fixture)].functions
    metrics = metrics_of(traced["recompiles/limit.py"] / "trace")
    # A compilation the recompile limit refused has a time, and no backend nor guards (none given: 0).
    measured = {
        compile_id: (
            m["entire_frame_compile_time_s"],
            m["backend_compile_time_s"] or 0.0,
            m["guard_count"] or 0,
        )
        for compile_id, m in metrics.items()
        if m.get("entire_frame_compile_time_s") is not None
    }
    assert {c.compile_id: (c.seconds, c.backend_seconds, c.guards) for c in total.costs} == measured
    compiled = [cost for cost in total.costs if cost.guards]
    assert len(compiled) == 8 and all(cost.backend_seconds > 0 for cost in compiled)  # Inductor's part
