"""gbls's pytest plugin, loaded as pytest loads it wherever gbls is installed, changes nothing in a
project's tests that do not ask for it: no torch, no capture, only its options, fixture and marker."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.plugin_runs import install_plugin

TESTS = """
import sys


def test_gbls_is_loaded_and_idle(request):
    assert request.config.pluginmanager.has_plugin("gbls")
    assert "fullgraph" in "\\n".join(request.config.getini("markers"))
    loaded = [name for name in sys.modules if name.startswith(("torch", "gbls.testing."))]
    assert sorted(loaded) == ["gbls.testing.plugin", "gbls.testing.state"]
"""


def test_a_project_that_does_not_ask_for_gbls_runs_as_without_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    install_plugin(monkeypatch, tmp_path / "entry-points")
    pytester.makepyfile(test_idle=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--strict-markers")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest_subprocess("--gbls-update-baseline")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gbls-update-baseline needs a baseline file: --gbls-baseline FILE"])
