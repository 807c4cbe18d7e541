"""Compiled modules and functions that run inside another compiled function's graph: torch traces
their code inline there, and they never run as frames of their own. They are analysed, as part of
the function that traced them, and never "not analysed"."""

from __future__ import annotations

import pytest

from gbls.formats.common import unanalysed_count
from gbls.lsp.codelens import lens_title

from ..support import FIXTURES
from ..support.torchlog import logged_script
from ..support.worker import Analyse
from .test_engine import assert_agrees_with_torch, assert_same_roots, summary

SCRIPTS = FIXTURES / "scripts"


@pytest.mark.parametrize("name", ["inlined_module.py", "inlined_module_clean.py"])
async def test_a_compiled_module_traced_inline_in_a_compiled_step(analyse_file: Analyse, name: str) -> None:
    fixture = SCRIPTS / name
    report = await analyse_file(fixture)
    assert report.status == "ok", report.message
    linear = summary(report, "Linear")
    assert (linear.analysed, linear.target.inlined, linear.graphs) == (True, "step", ())
    assert lens_title(linear, 0) == "gbls: traced inline in step"
    assert unanalysed_count([report]) == 0  # gbls check fails on nothing
    assert summary(report, "step").graphs
    logged = logged_script(fixture).main
    assert_same_roots(report, logged)  # the print in step where there is one, else nothing
    assert_agrees_with_torch(report, fixture, logged)


async def test_a_compiled_torch_module_called_on_its_own(analyse_file: Analyse) -> None:
    report = await analyse_file(SCRIPTS / "torch_module.py")
    (linear,) = report.functions
    assert (linear.analysed, linear.target.inlined) == (True, "")
    assert (linear.target.input_source, linear.target.inputs) == ("module", "input: f32[2, 8]")
    assert len(linear.graphs) == 1 and report.breaks == ()
