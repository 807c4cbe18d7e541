"""Settings from LSP clients: both spellings, bad values ignored, typed defaults kept."""

from __future__ import annotations

import pytest

from gbls.settings import Settings, from_options
from gbls.worker.shared import protocol


def test_camel_case_and_nested_options() -> None:
    settings = from_options(
        {"gbls": {"analyseOnChange": False, "memoryMb": 2048, "runMain": False, "timeout": 5}}
    )
    assert (settings.analyse_on_change, settings.memory_mb, settings.run_main, settings.timeout) == (
        False,
        2048,
        False,
        5.0,
    )
    assert Settings().run_main  # the `__main__` block runs unless the user turns it off


def test_bad_values_keep_the_defaults() -> None:
    settings = from_options(
        {"severity": "loud", "timeout": -1, "sandbox": "maybe", "enable": "yes", "unknown": 1}
    )
    assert settings == Settings()
    # Where cattrs would convert: a number is no path, a string no list of them, true no number.
    assert from_options({"interpreter": 3, "traces": "runs/trace", "memoryMb": True}) == Settings()
    assert from_options({"memoryMb": 2048.0, "timeout": 5}) == Settings(memory_mb=2048, timeout=5.0)


def test_the_worker_has_the_same_defaults() -> None:
    """The worker cannot import gbls.settings: its part of them repeats their defaults."""
    assert Settings().for_worker() == protocol.Settings()


def test_no_debounce_is_allowed() -> None:
    assert from_options({"debounceMs": 0}).debounce_ms == 0
    assert from_options({"debounceMs": -5}).debounce_ms == Settings().debounce_ms


def test_severity_overrides_and_ignored_codes(caplog: pytest.LogCaptureFixture) -> None:
    settings = from_options(
        {
            "severityOverrides": {"gb0124": "Error", "recompile": "hint", "GB12": "error", "GB0059": "loud"},
            "ignore": ["GB0170", "gb0059", "E501", 7, "GB0170"],
        }
    )
    assert settings.severity_overrides == {"GB0124": "error", "recompile": "hint"}
    assert settings.ignore == ("GB0170", "GB0059")
    assert len(caplog.records) == 4  # each entry left out says so
    # Neither a dict nor a list: the setting keeps its value, and says why.
    assert from_options({"severityOverrides": ["GB0124"], "ignore": "GB0170"}) == Settings()
