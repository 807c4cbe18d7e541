"""The settings as the ``gbls`` command's options: made from ``settings.py``, each setting an option
of every command it says or declared the editor's alone; the options users already typed keep their
spellings and meanings; a bad value is refused as the editor's is ignored."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from typing import Any, Literal, get_args

import pytest

from gbls.cli import _parser
from gbls.flags import settings_of
from gbls.settings import SEVERITIES, TYPES, Command, Settings, flag

COMMANDS: tuple[Command, ...] = typing.get_args(Command)
# What each command needs besides its options.
REST: dict[Command, list[str]] = {"check": ["x.py"], "run": ["x.py"], "import": ["trace"]}


def parsed(command: Command, *options: str) -> Settings:
    return settings_of(_parser().parse_args([command, *options, *REST[command]]), command)


def other_value(name: str) -> list[str]:
    """The option of the setting ``name`` given a value other than its default, as typed."""
    declared = flag(next(item for item in dataclasses.fields(Settings) if item.name == name))
    assert declared is not None
    option = "--" + (declared.name or name.replace("_", "-"))
    kind, default = TYPES[name], getattr(Settings(), name)
    origin = typing.get_origin(kind)
    if kind is bool:
        return [option if not default else "--no-" + option[2:]]
    if origin is Literal:
        return [option, next(value for value in get_args(kind) if value != default)]
    if origin is tuple:
        return [option, "GB0059"]
    if origin is Mapping:
        return [option, "GB0059=error"]
    base = get_args(kind)[0] if origin is typing.Annotated else kind
    return [option, str(base(default) + 1) if base in (int, float) else "/usr/bin/python3"]


def test_every_setting_is_an_option_or_the_editors_alone() -> None:
    """A setting added to settings.py without saying which fails here (and every command)."""
    options = {item.name: flag(item) for item in dataclasses.fields(Settings)}
    editors = {name for name, declared in options.items() if declared is None}
    assert editors == {"enable", "debounce_ms", "analyse_on_change", "traces", "inlay_hints"}
    with pytest.raises(LookupError, match="declares no option"):
        flag(dataclasses.fields(dataclasses.make_dataclass("Added", [("added", int, 0)]))[0])


@pytest.mark.parametrize("command", COMMANDS)
def test_each_option_reaches_its_setting(command: Command) -> None:
    """Each setting's option, given a value other than the default, changes that setting alone; a
    command without it refuses it."""
    for item in dataclasses.fields(Settings):
        declared = flag(item)
        if declared is None:
            continue
        typed = other_value(item.name)
        if command not in declared.commands:
            with pytest.raises(SystemExit):
                parsed(command, *typed)
            continue
        found = parsed(command, *typed)
        changed = {name for name in TYPES if getattr(found, name) != getattr(Settings(), name)}
        assert changed == {item.name}, typed
    assert parsed(command) == Settings()


def test_the_options_keep_their_spellings() -> None:
    options = ["--python", "/usr/bin/python3", "--timeout", "5", "--memory-mb", "100"]
    options += ["--sandbox", "off", "--device", "cpu", "--values", "exact"]
    expected = Settings(
        interpreter="/usr/bin/python3",
        timeout=5.0,
        memory_mb=100,
        sandbox="off",
        device="cpu",
        values="exact",
    )
    assert parsed("check", *options) == parsed("run", *options) == expected
    assert parsed("check", *options, "--no-run-main") == dataclasses.replace(expected, run_main=False)
    assert parsed("check", "--no-run-main", "--run-main") == Settings()


def test_codes_and_their_severities_as_ruff_lists_rules() -> None:
    """``--ignore`` as ruff's: comma-separated or repeated; each code as the editor spells it."""
    found = parsed(
        "check",
        *("--ignore", "gb0059,recompile", "--ignore", "GB0059"),
        *(
            "--severity-overrides",
            "GB0124=error, recompile=hint",
            "--severity-overrides",
            "gb0124=information",
        ),
        *("--severity", "information"),
    )
    assert found.ignore == ("GB0059", "recompile")
    assert found.severity_overrides == {"GB0124": "information", "recompile": "hint"}  # the last one
    assert found.severity == "information"
    assert parsed("import", "--ignore", "GB0170").ignore == ("GB0170",)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--timeout", "0"], "argument --timeout: '0': no time or no memory is no limit"),
        (["--memory-mb", "lots"], "argument --memory-mb: 'lots': not a number"),
        (["--ignore", "GB0059,E501"], "argument --ignore: 'E501': not a GB id (GB0059) or recompile"),
        (["--severity-overrides", "GB0124"], "argument --severity-overrides: 'GB0124': not CODE=SEVERITY"),
        (["--severity-overrides", "GB0124=loud"], "argument --severity-overrides: 'GB0124=loud': not one of"),
        (["--severity", "loud"], "argument --severity: invalid choice: 'loud'"),
    ],
)
def test_a_bad_value_is_refused(options: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parsed("check", *options)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("severity", "own", "placed", "expected"),
    [
        ("warning", None, "error", "error"),  # no override: as placed
        ("warning", "error", "warning", "error"),
        ("warning", "information", "error", "warning"),  # a limit hit: a step above its own
        ("warning", "error", "error", "error"),  # no step above error
        ("error", "hint", "error", "hint"),
        ("hint", "information", "information", "warning"),
    ],
)
def test_a_codes_own_severity(severity: Any, own: Any, placed: Any, expected: str) -> None:
    overrides = {"GB0059": own} if own else {}
    settings = Settings(severity=severity, severity_overrides=overrides)
    assert settings.severity_of("GB0059", placed) == expected
    assert settings.severity_of("GB0170", placed) == placed
    assert expected in SEVERITIES
