"""What gbls reports equals what Dynamo did, on the kinds of code users write, and gbls never changes
what the program does.

Each fixture under tests/fixtures/fidelity is checked both ways against torch's own
``TORCH_LOGS=graph_breaks`` log (every break gbls reports is logged, every logged root cause is
reported) and against Dynamo's compilation metrics of the same run (a break is "eager" exactly when
Dynamo produced no code for the function's frame), then against what the fixture is about.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gbls.engine.model import BreakReport, FileReport
from gbls.settings import Settings
from gbls.worker.shared.protocol import EAGER, SPLIT

from ..support import FIXTURES
from ..support.forked import run_forked
from ..support.torchlog import logged_breaks, logged_compiles
from ..support.worker import Analyse
from .test_engine import GENERATORS, TORCH_DIR, assert_agrees_with_torch, root_of, same_break

FIDELITY = FIXTURES / "fidelity"
FIXTURE_NAMES = sorted(path.name for path in FIDELITY.glob("*.py"))
RESUME = "torch_dynamo_resume_in_"
PROGRAM_STARTS = "=== the program starts"

# What each fixture is about: (function, GB id, line of the root cause, effect, eager after line).
EXPECTED: dict[str, list[tuple[str, str, int, str, int | None]]] = {
    # The helper's frame runs eagerly, the compiled function's graph only splits at the call.
    "eager_callee_try.py": [("outer", "GB0059", 9, SPLIT, None)],
    # A break inside a generator the function consumes: Dynamo gives up on the function.
    "eager_callee_generator.py": [("total", "GB0059", 8, EAGER, None)],
    # An exception escaping the compiled frame: the whole frame runs eagerly.
    "escaping_exception.py": [("checked", "GB0088", 10, EAGER, None)],
    # A print the frame could not be split at (a dict iterator is live): one break, eager, with GB0092
    # as the reason, not as a second break.
    "reconstruction_failure.py": [("keys_plus", "GB0059", 10, EAGER, None)],
    # Compiled up to the print; the rest (the resume function) runs eagerly.
    "eager_rest.py": [("pairs", "GB0059", 10, SPLIT, None), ("pairs", "GB0811", 11, EAGER, 10)],
    "repr_raises.py": [("scaled", "GB0059", 22, SPLIT, None)],
    "class_in_compiled.py": [
        ("with_class", "GB8977", 8, SPLIT, None),
        ("with_map", "GB0059", 17, SPLIT, None),
        ("with_map", "GB0811", 18, SPLIT, None),
    ],
    # One break each, whatever wrappers lie between the split and the cause.
    "wrapper_frames.py": [
        ("uses_no_grad", "GB0059", 19, SPLIT, None),
        ("uses_wraps", "GB0059", 25, SPLIT, None),
    ],
    "context_manager.py": [],
    "super_call.py": [("Child", "GB0059", 8, SPLIT, None)],
    "skipfiles.py": [("jitter", "GB0007", 11, SPLIT, None)],
    "warnings_warn.py": [("careful", "GB0007", 11, SPLIT, None)],
    "observed_exception.py": [],
    "generators.py": [("produce", "GB0003", 7, EAGER, None)],
    "disabled_module.py": [("Net", "GB0099", 19, SPLIT, None)],
    # The inner compiled function is compiled as itself too: one root cause, which both reached.
    "nested_compiled.py": [("outer", "GB0059", 8, SPLIT, None)],
    "try_and_loop.py": [("guarded", "GB0059", 10, EAGER, None), ("looped", "GB0025", 20, EAGER, None)],
    "phantom_targets.py": [],
    # Built just in time into torch's extensions cache, which is read-only in the sandbox by default.
    "jit_extension.py": [("scaled", "GB0059", 25, SPLIT, None), ("scaled", "GB0007", 26, SPLIT, None)],
}


def require_builders(name: str) -> None:
    """A just-in-time extension needs a C compiler and ninja (Debian's ninja-build)."""
    if name != "jit_extension.py" or (shutil.which("ninja") and shutil.which("cc")):
        return
    if os.environ.get("CI") == "true":
        pytest.fail("ninja or a C compiler is missing, and CI needs them")
    pytest.skip("ninja or a C compiler is missing here")


def summary(brk: BreakReport) -> tuple[str, str, int, str, int | None]:
    return (brk.function, brk.code, brk.span.line, brk.effect, brk.cause.eager_from)


def assert_torch_agrees(report: FileReport, fixture: Path) -> None:
    """Every root cause torch logged is a break gbls reports, or the reason it reports an eager one."""
    reasons = {
        (brk.root.path, brk.root.span.line, brk.cause.eager_reason.split(":")[0]) for brk in report.breaks
    }
    for entry in logged_breaks(fixture):
        path, line = root_of(entry)
        if path.startswith(TORCH_DIR):
            continue  # torch printed no user frame for it: nothing in the user's code to point at
        found = any(
            (brk.root.path, brk.root.span.line) == (path, line) and same_break(brk, entry)
            for brk in report.breaks
        )
        folded = any((path, line, gb_type) in reasons for gb_type in entry.gb_types)
        assert found or folded, (
            f"torch logged {entry.gb_ids or entry.gb_types} at {path}:{line}; gbls did not"
        )


def own_compiles(fixture: Path, brk: BreakReport) -> list[tuple[str, bool]]:
    """The compilations of the break's function's own frames (it, or its resume functions) that
    logged it: their code name and whether Dynamo produced code for them."""
    name = brk.chain[0].function
    root = (brk.root.path, brk.root.span.line)
    logged = {(e.frame_id, e.compile_id) for e in logged_breaks(fixture) if root_of(e) == root}
    return [
        (compile.function, compile.guarded)
        for compile in logged_compiles(fixture)
        if (
            tuple(int(part) for part in compile.compile_id.split("/")[:2]) in logged
            or compile.failed_at == root
        )
        and (compile.function == name or compile.function.startswith(f"{RESUME}{name}_at_"))
    ]


def assert_effects_are_dynamos(report: FileReport, fixture: Path) -> None:
    for brk in report.breaks:
        compiles = own_compiles(fixture, brk)
        if not compiles:
            # Refused before its first instruction (a compiled generator): no translation to look at.
            assert brk.effect == EAGER and not brk.chain[0].span.column, brk
            continue
        eager = [function for function, guarded in compiles if not guarded]
        assert (brk.effect == EAGER) == bool(eager), (brk.message, compiles)
        if brk.cause.eager_from is not None:
            assert f"{RESUME}{brk.chain[0].function}_at_{brk.cause.eager_from}" in eager


_reports: dict[str, FileReport] = {}


async def report_of(analyse_file: Analyse, name: str) -> FileReport:
    """One analysis per fixture for the two tests below (each still runs alone, in any order)."""
    if name not in _reports:
        _reports[name] = await analyse_file(FIDELITY / name)
    return _reports[name]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
async def test_every_break_is_what_dynamo_did(analyse_file: Analyse, name: str) -> None:
    """On every torch (the compatibility matrix runs it): what gbls reports is what that torch did."""
    require_builders(name)
    fixture = FIDELITY / name
    report = await report_of(analyse_file, name)
    assert report.notes == ()
    if report.status != "ok":  # this torch fails on the program itself (2.8: a KeyError in Dynamo)
        plain = run_plainly(fixture)
        assert plain.returncode != 0 and report.message.splitlines()[0] in plain.stdout, report.message
    assert_agrees_with_torch(report, fixture)
    assert_torch_agrees(report, fixture)
    assert_effects_are_dynamos(report, fixture)
    # Every function listed is a compiled function of the file, and ran: nothing phantom, nothing missed.
    missed = [f for f in report.functions if not f.analysed]
    assert all(not GENERATORS and "generator function" in f.target.reason for f in missed), missed


@pytest.mark.parametrize("name", FIXTURE_NAMES)
async def test_each_fixture_breaks_as_it_is_about(analyse_file: Analyse, name: str) -> None:
    """What the fixture is about, as the torch the suite pins (2.13) does it: older releases break
    in more places, and drop other frames to eager."""
    report = await report_of(analyse_file, name)
    expected = [entry for entry in EXPECTED[name] if GENERATORS or entry[1] != "GB0003"]
    assert [summary(brk) for brk in report.breaks] == expected


async def test_a_reconstruction_failure_is_the_reason_not_a_second_break(analyse_file: Analyse) -> None:
    (brk,) = (await analyse_file(FIDELITY / "reconstruction_failure.py")).breaks
    assert brk.cause.eager_reason.startswith("Reconstruction failure: Dynamo has no bytecode reconstruction")
    assert brk.message == (
        "Failed to trace builtin operator (print); keys_plus runs entirely in eager mode: "
        "Reconstruction failure"
    )


async def test_the_rest_of_a_function_can_run_eagerly(analyse_file: Analyse) -> None:
    _, rest = (await analyse_file(FIDELITY / "eager_rest.py")).breaks
    assert rest.message.endswith(
        "; pairs runs in eager mode after line 10: Failed to handle graph break gracefully. "
        "Skipping the function and falling back to eager. Graph break encountered"
    )


async def test_describing_inputs_runs_no_user_code(analyse_file: Analyse) -> None:
    report = await analyse_file(FIDELITY / "repr_raises.py")
    (scaled,) = report.functions
    assert scaled.target.inputs == "x: f32[2], config: Config, partial: HalfBuilt"
    assert "the program failed" not in report.output and "[3.0, 3.0]" in report.output


# torch.compile on torch's own eager backend, in the runner that forks the plain runs (Dynamo imported
# there too, as in the warm worker).
EAGER_COMPILE = """
import torch._dynamo
original = torch.compile
def eager(model=None, **options):
    options["backend"] = "eager"
    if model is None:
        return lambda actual: original(actual, **options)
    return original(model, **options)
torch.compile = eager
"""


def run_plainly(fixture: Path) -> subprocess.CompletedProcess[str]:
    """The fixture as ``python fixture.py`` runs it, torch.compile on torch's own eager backend: in a
    child forked from an interpreter that imported torch (``forked``)."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("TORCH_LOGS")}
    # One stream, unbuffered, as gbls captures it: warnings land where the program emitted them.
    environment["PYTHONUNBUFFERED"] = "1"
    with tempfile.NamedTemporaryFile("r+", suffix=".out") as output:
        output.write(PROGRAM_STARTS + "\n")
        output.flush()
        out = Path(output.name)
        ran = run_forked(
            fixture,
            cwd=fixture.parent,
            environment=environment,
            stdout=out,
            stderr=out,
            setup=EAGER_COMPILE,
            seconds=300,
        )
        output.seek(0)
        return subprocess.CompletedProcess([sys.executable, str(fixture)], ran.status, output.read())


# A record of torch's own logging: where a CUDA build runs without CUDA, the first compilation in a
# process says so once (cpp_extension), wherever in the program that happens to be.
TORCH_RECORD = re.compile(r"^[DIWEC]\d{4} [\d:.]+ +\d+ torch/\S+:\d+\] ")


def program_lines(output: str) -> list[str]:
    """What a program printed, blank lines and torch's own log records aside."""
    return [line for line in output.splitlines() if line.strip() and not TORCH_RECORD.match(line)]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
async def test_the_program_sees_what_it_sees_without_gbls(analyse_file: Analyse, name: str) -> None:
    """Differential: the program's own output and ending are the same with gbls's instrumentation."""
    require_builders(name)
    fixture = FIDELITY / name
    plain = run_plainly(fixture)
    report = await analyse_file(fixture, settings=Settings(run_main=True))
    # What importing torch printed (a warm worker imported it long ago) is not the program's.
    program = plain.stdout.split(PROGRAM_STARTS + "\n", 1)[1]
    assert program.strip(), "a differential fixture must say what it computed"
    assert program_lines(program) == program_lines(report.output)
    assert (plain.returncode == 0) == (report.status == "ok")
