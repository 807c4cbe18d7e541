"""Breaks in library code that Dynamo compiles frame by frame: after a library function's first
break, its resume functions and the callees it calls eagerly are frames of their own. Each break
sits on the line of the user's compiled function that leads to it (in the real Python stack of
that frame), each root cause is one break, and every other path to it is kept with it."""

from __future__ import annotations

from gbls.settings import Settings

from ..engine.test_engine import assert_agrees_with_torch, assert_same_roots
from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse

LIBRARY_FRAMES = FIXTURES / "library_frames"


async def test_a_diffusers_sampling_step_breaks_on_the_scheduler_call(analyse_file: Analyse) -> None:
    fixture = LIBRARY_FRAMES / "ddpm_denoise_step.py"
    report = await analyse_file(fixture)
    assert report.status == "ok", report.message
    assert report.breaks
    for brk in report.breaks:  # `return scheduler.step(noise, t, sample).prev_sample`
        assert (brk.span.line, brk.chain[0].function, brk.chain[1].function) == (15, "denoise_step", "step")
    roots = [(brk.root.path, brk.root.span.line, brk.gb_type) for brk in report.breaks]
    assert len(set(roots)) == len(roots)
    # previous_timestep's nonzero is reached through step and through step's _get_variance: one break.
    (nonzero,) = [brk for brk in report.breaks if brk.gb_id == "GB0036"]
    paths = [[location.function for location in path] for path in (nonzero.chain, *nonzero.paths)]
    assert paths == [
        ["denoise_step", "step", "previous_timestep"],
        ["denoise_step", "step", "_get_variance", "previous_timestep"],
    ]
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)


async def test_gpt2_generate_in_a_compiled_function_breaks_on_the_generate_call(
    analyse_file: Analyse,
) -> None:
    fixture = LIBRARY_FRAMES / "hf_generate_compiled.py"
    # Dynamo takes a while over generate(): a minute of CPU on a loaded two-core machine.
    report = await analyse_file(fixture, settings=Settings(timeout=600))
    assert report.status == "ok", report.message
    assert report.breaks
    for brk in report.breaks:  # `return model.generate(prompt, ...)`
        assert (brk.span.line, brk.chain[0].function) == (12, "complete")
    roots = [(brk.root.path, brk.root.span.line, brk.gb_type) for brk in report.breaks]
    assert len(set(roots)) == len(roots)
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)
    assert_agrees_with_torch(report, fixture, logged)
