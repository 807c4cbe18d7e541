"""Settings from LSP clients: both spellings, bad values ignored, typed defaults kept."""

from __future__ import annotations

from gbls.settings import Settings, from_options


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


def test_no_debounce_is_allowed() -> None:
    assert from_options({"debounceMs": 0}).debounce_ms == 0
    assert from_options({"debounceMs": -5}).debounce_ms == Settings().debounce_ms
