"""A program at its real size, as it ships: a GPT-2 (124M) trainer written for a GPU (``device =
"cuda"``, 12 x 1024 tokens, 40 micro-steps, 600 000 iterations, an evaluation of 200 batches per
split under no_grad before the first step), opened with nothing configured on a CPU.

Its compiled forward is translated, not computed: the evaluation's 400 calls and the training
micro-steps cost what their translation costs, so the run reaches the training step and its
recompilation (``grad_mode``), and the budget cuts it in the training loop, never failed. Checked
against torch's own log of the same program with fewer iterations (which changes nothing Dynamo
sees), its graphs not computed either (computed, one evaluation batch is 30 s of arithmetic here);
and at a smaller size, where torch can compute them, that not computing them changes nothing in
torch's log.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gbls.engine import views
from gbls.engine.model import FileReport
from gbls.engine.sources import read_source
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.analysis.elision import WORK_LIMIT
from gbls.worker.shared.protocol import Run

from ..support.torchlog_runs import RunLog, logged_run
from .test_runs import PROJECTS, assert_breaks_agree, fingerprint

# The default budget (20 s) reaches the training step in about 8 s on a quiet 2-core machine; the
# test gives it more, so that a busy machine gives the same answer.
BUDGET = Settings(timeout=40)
# Torch's log of the program: one evaluation of two batches per split, one training step of two
# micro-steps after it, then the program ends; on the CPU, as the analysis maps CUDA.
FEWER = ("--device=cpu", "--eval_iters=2", "--max_iters=0", "--gradient_accumulation_steps=2")
# Small enough for torch to compute, big enough for gbls not to (its head alone is 6.6e9 a call).
SMALLER = ("--n_layer=2", "--n_head=4", "--n_embd=128", "--block_size=256", "--batch_size=4")


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project copied, its data made as its preparation script makes it (random tokens)."""
    folder = tmp_path_factory.mktemp("real-size") / "gpt2"
    shutil.copytree(PROJECTS / "gpt2", folder)
    subprocess.run([sys.executable, "data/openwebtext/prepare.py"], cwd=folder, check=True)
    return folder


def assert_same_compilations(report: FileReport, logged: RunLog) -> None:
    """The compilations torch logged, and the check each recompilation failed."""
    assert_breaks_agree(report, logged)
    ours = sorted(
        (r.compile_id, r.guard.text if r.guard else "") for f in report.recompiles for r in f.recompiles
    )
    theirs = sorted((e.compile_id, e.reasons[0].text) for e in logged.recompiles.recompiles)
    assert ours == theirs
    assert sorted({c.compile_id for c in logged.compiles}) == sorted(
        {"0/0", *(compile_id for compile_id, _ in ours)}
    )


async def test_a_gpt2_trainer_as_it_ships_is_translated_and_cut_in_its_training_loop(
    worker: Worker, gpt2: Path
) -> None:
    before = fingerprint(gpt2)
    script = gpt2 / "train.py"
    source = read_source(str(script)) or ""
    report = await analyse(worker, str(script), source, BUDGET, str(gpt2), read_source, cwd=str(gpt2))
    assert (report.status, report.message) == ("ok", "")
    (gpt,) = report.functions
    assert (gpt.qualname, gpt.analysed, gpt.compilations, len(gpt.graphs)) == ("GPT", True, 2, 2)
    assert sorted(e.compile_id for e in gpt.elided) == ["0/0", "0/1"]
    assert report.breaks == ()
    (recompiled,) = report.recompiles
    assert recompiled.guard is not None and "grad_mode" in recompiled.guard.text
    # Cut, not failed: in the training loop, after the evaluation and the recompilation.
    cut = report.cut
    assert cut is not None and cut.span is not None and cut.path == str(script)
    lines = source.splitlines()
    loop = lines.index("while True:") + 1
    assert cut.span.line > loop, lines[cut.span.line - 1]
    assert cut.message.startswith(
        f"cut after 40 s at train.py:{cut.span.line}: the program was still running"
    )
    # model.py, which the run reached, tells the same story.
    model = views.by_file(report)[str(gpt2 / "model.py")]
    assert model.translated and model.cut == cut and model.message == ""
    logged = logged_run(Run("train", str(script), "", FEWER, str(gpt2)), elide=WORK_LIMIT)
    assert_same_compilations(report, logged)
    assert fingerprint(gpt2) == before  # its checkpoints and out/ went to the throwaway layer


def test_not_computing_the_graphs_changes_nothing_torch_logs(gpt2: Path) -> None:
    run = Run("train", str(gpt2 / "train.py"), "", (*FEWER, *SMALLER), str(gpt2))
    computed, elided = logged_run(run), logged_run(run, elide=WORK_LIMIT)
    assert [(c.compile_id, c.guarded) for c in computed.compiles] == [
        (c.compile_id, c.guarded) for c in elided.compiles
    ]
    assert [(e.compile_id, e.reasons[0].text) for e in computed.recompiles.recompiles] == [
        (e.compile_id, e.reasons[0].text) for e in elided.recompiles.recompiles
    ]
    assert [(e.at, e.gb_types) for e in computed.breaks] == [(e.at, e.gb_types) for e in elided.breaks]
    assert [c.compile_id for c in computed.compiles] == ["0/0", "0/1"]


async def test_a_program_that_lives_in_its_compiled_calls_is_stopped_in_its_own_code(
    worker: Worker, tmp_path: Path
) -> None:
    """The budget ends while the program is, as often as not, inside the compiled call (Dynamo's
    wrapper, gbls's outputs of an elided graph): it is stopped a moment later in its own code, so
    that what it executed (model.py, translated) is known, never killed with nothing said."""
    folder = tmp_path / "serving"
    shutil.copytree(PROJECTS / "serving", folder)
    script = folder / "serve.py"
    for _ in range(3):  # each time, wherever the budget ends it
        report = await analyse(
            worker,
            str(script),
            script.read_text(),
            Settings(timeout=5),
            str(folder),
            read_source,
            cwd=str(folder),
        )
        assert report.cut is not None and report.cut.span is not None, report.message
        assert report.cut.span.line in (13, 14, 15), report.cut  # the loop: its `while`, its body
        (scorer,) = report.functions
        assert scorer.analysed and scorer.elided
        assert views.by_file(report)[str(folder / "model.py")].translated


async def test_a_program_stuck_in_c_at_the_end_of_its_budget_still_says_what_it_reached(
    worker: Worker, tmp_path: Path
) -> None:
    """Seconds of a factorization in C: the stop never comes, and the worker kills the program. The
    files it executed were said as they started; where it was, the stack faulthandler printed."""
    folder = tmp_path / "serving"
    shutil.copytree(PROJECTS / "serving", folder)
    script = folder / "factor.py"
    report = await analyse(
        worker,
        str(script),
        script.read_text(),
        Settings(timeout=5),
        str(folder),
        read_source,
        cwd=str(folder),
    )
    assert (report.status, report.message) == ("ok", "")
    assert report.cut is not None and report.cut.span is not None and report.cut.span.line == 14
    (scorer,) = report.functions
    assert scorer.analysed and scorer.elided
    assert views.by_file(report)[str(folder / "model.py")].translated
