"""Real projects: compiled Hugging Face models and diffusers schedulers, training scripts and main().

Each fixture builds its model from a small random-init config (nothing is downloaded) and is
checked against torch's own ``TORCH_LOGS=graph_breaks`` log of the same run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import transformers

from gbls.engine import views
from gbls.engine.model import FileReport, FunctionReport
from gbls.lsp.diagnostics import file_diagnostics
from gbls.settings import Settings

from ..engine.test_engine import assert_agrees_with_torch
from ..support import FIXTURES
from ..support.torchlog import logged_breaks
from ..support.worker import Analyse

PROJECTS = FIXTURES / "projects"
LIBRARIES = os.path.dirname(os.path.dirname(transformers.__file__)) + os.sep
_reports: dict[str, FileReport] = {}


async def report_of(analyse_file: Analyse, name: str) -> FileReport:
    """Each fixture analysed once per session: importing transformers costs seconds in every child."""
    if name not in _reports:
        _reports[name] = await analyse_file(PROJECTS / name)
    return _reports[name]


def text_at(path: Path, line: int, column: int, end_column: int) -> str:
    return path.read_text().splitlines()[line - 1][column:end_column]


def only_function(report: FileReport) -> FunctionReport:
    (function,) = report.functions
    return function


def assert_on_the_compile_call(report: FileReport, fixture: Path, call: str) -> None:
    """A library model's breaks sit on its compile call, their chains inside the library."""
    assert report.breaks
    for brk in report.breaks:
        span = brk.span
        assert text_at(fixture, span.line, span.column, span.end_column) == call
        assert all(location.path.startswith(LIBRARIES) for location in brk.chain)


async def test_a_compiled_model_at_module_level_is_clean_because_gbls_ran_it(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_module_level.py"
    report = await report_of(analyse_file, fixture.name)
    bert = only_function(report)
    assert (bert.qualname, bert.kind, bert.line, bert.analysed) == ("BertModel", "module", 9, True)
    # model(**batch): every argument by name, with dtype and shape.
    assert (bert.target.input_source, bert.target.inputs) == (
        "module",
        "input_ids: i64[2, 6], attention_mask: i64[2, 6]",
    )
    assert bert.graphs and bert.ops > 0
    assert report.breaks == () and logged_breaks(fixture) == []


async def test_a_training_script_runs_main_to_its_end(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_train_main.py"
    report = await report_of(analyse_file, fixture.name)
    gpt2 = only_function(report)
    assert (gpt2.qualname, gpt2.line, gpt2.analysed, gpt2.target.input_source) == (
        "GPT2LMHeadModel",
        17,
        True,
        "module",
    )
    assert gpt2.target.inputs == "input_ids: i64[2, 8], labels: i64[2, 8]"
    assert report.status == "ok", report.message
    assert_on_the_compile_call(report, fixture, "torch.compile(GPT2LMHeadModel(config))")
    for brk in report.breaks:
        assert brk.called_at is not None and brk.called_at.span.line == 20
    assert_agrees_with_torch(report, fixture)


async def test_without_run_main_a_training_script_is_not_analysed_and_says_why(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_train_main.py"
    report = await analyse_file(fixture, settings=Settings(run_main=False))
    gpt2 = only_function(report)
    assert not gpt2.analysed and report.breaks == ()
    assert gpt2.line == 17 and "in main()" in gpt2.reason
    assert "turn on the runMain setting (`gbls check --run-main`)" in gpt2.reason


async def test_a_bound_method_compiled_in_place_is_a_target(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_forward_in_place.py"
    report = await report_of(analyse_file, fixture.name)
    forward = only_function(report)
    assert (forward.qualname, forward.kind, forward.line, forward.analysed) == (
        "LlamaForCausalLM.forward",
        "method",
        16,
        True,
    )
    assert forward.target.inputs == "input_ids: i64[1, 5]"
    assert_agrees_with_torch(report, fixture)


async def test_an_uncalled_model_gets_ids_from_its_vocabulary(analyse_file: Analyse) -> None:
    report = await report_of(analyse_file, "hf_uncalled.py")
    encoder = only_function(report)
    assert (encoder.qualname, encoder.line, encoder.analysed) == ("BertModel", 9, True)
    assert (encoder.target.input_source, encoder.target.inputs) == ("synthesized", "input_ids: i64[2, 8]")
    assert encoder.ops > 0


async def test_a_library_model_that_breaks_inside_itself(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_library_breaks.py"
    report = await report_of(analyse_file, fixture.name)
    wav2vec = only_function(report)
    assert (wav2vec.qualname, wav2vec.line, wav2vec.analysed) == ("Wav2Vec2ForCTC", 18, True)
    assert wav2vec.target.inputs == "input_values: f32[2, 1600], labels: i64[2, 6]"
    assert_on_the_compile_call(report, fixture, "torch.compile(Wav2Vec2ForCTC(config))")
    assert len({(b.root.path, b.root.span.line, b.gb_type) for b in report.breaks}) == len(report.breaks)
    # In the editor: the chain into the library, and where the file called the model.
    lines = fixture.read_text().splitlines()
    view = views.by_file(report)[report.path]
    for diagnostic in file_diagnostics(view, fixture.read_text(), "warning", lambda path: lines):
        if isinstance(diagnostic.code, str) and diagnostic.code.startswith("GB"):
            related = diagnostic.related_information or []
            assert related[-1].message == "Wav2Vec2ForCTC called here"
            assert related[-1].location.range.start.line == 20  # 0-based: line 21
    assert_agrees_with_torch(report, fixture)


async def test_generate_runs_the_compiled_model_step_by_step(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "hf_generate.py"
    report = await report_of(analyse_file, fixture.name)
    gpt2 = only_function(report)
    assert (gpt2.qualname, gpt2.line, gpt2.analysed) == ("GPT2LMHeadModel", 8, True)  # model.compile()
    assert gpt2.target.inputs.startswith("input_ids: i64[1, 4], ")
    assert_agrees_with_torch(report, fixture)


async def test_a_diffusers_scheduler_step_has_one_break_per_root_cause(analyse_file: Analyse) -> None:
    fixture = PROJECTS / "ddpm_step.py"
    report = await report_of(analyse_file, fixture.name)
    step = only_function(report)
    assert (step.qualname, step.kind, step.line, step.analysed) == ("DDPMScheduler.step", "method", 7, True)
    assert step.target.inputs == (
        "model_output: f32[1, 3, 4, 4], timestep: i64[], sample: f32[1, 3, 4, 4], "
        "generator: None, return_dict: True"
    )
    roots = [(b.root.path, b.root.span.line, b.root.span.column, b.gb_id) for b in report.breaks]
    assert roots and len(set(roots)) == len(roots)
    assert_on_the_compile_call(report, fixture, "torch.compile(scheduler.step)")
    assert_agrees_with_torch(report, fixture)


@pytest.mark.parametrize("name", sorted(path.name for path in PROJECTS.glob("*.py")))
async def test_no_fixture_is_clean_unless_gbls_ran_its_code(analyse_file: Analyse, name: str) -> None:
    report = await report_of(analyse_file, name)
    assert report.status == "ok" and report.functions
    for function in report.functions:
        assert function.analysed, function.reason
        assert 1 <= function.line <= len((PROJECTS / name).read_text().splitlines())
