"""The settings as options of the ``gbls`` commands, made from their declaration (``settings.py``):
each setting's ``Flag`` is an option named for it (``memory_mb``: ``--memory-mb``), of its type: a
bool on and off (``--run-main``, ``--no-run-main``), one of its values, a number or a path, a list
(``--ignore GB0059,recompile``, or repeated) or a code's severity (``--severity-overrides
GB0124=error``); each value read by the checks the editor's go through, a bad one refused."""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, get_args

from .settings import TYPES, Code, Command, Settings, Severity, flag, read


def add(parser: argparse.ArgumentParser, command: Command) -> None:
    """The options of ``command`` that are settings, in a group of their own."""
    group = parser.add_argument_group("settings", "as the editor's gbls.* settings of the same names")
    defaults = Settings()
    for item in dataclasses.fields(Settings):
        declared = flag(item)
        if declared is None or command not in declared.commands:
            continue
        option = "--" + (declared.name or item.name.replace("_", "-"))
        kind = _how(item.name, TYPES[item.name], getattr(defaults, item.name))
        group.add_argument(option, dest=item.name, help=declared.help, **kind)


def settings_of(arguments: argparse.Namespace, command: Command) -> Settings:
    """The settings the options of ``command`` say; the others' defaults."""
    changes: dict[str, Any] = {}
    for item in dataclasses.fields(Settings):
        declared = flag(item)
        if declared is None or command not in declared.commands:
            continue
        value = getattr(arguments, item.name)
        kind = TYPES[item.name]
        if _origin(kind) is tuple:
            value = tuple(dict.fromkeys(value))  # each once, as the editor's list
        elif _origin(kind) is Mapping:
            value = dict(value)  # the last of a code's severities
        changes[item.name] = value
    return Settings(**changes)


def _origin(kind: Any) -> Any:
    origin: Any = typing.get_origin(kind)
    return origin


def _how(name: str, kind: Any, default: Any) -> dict[str, Any]:
    """``add_argument``'s keywords for a setting of type ``kind``."""
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction, "default": default}
    if _origin(kind) is Literal:
        return {"choices": get_args(kind), "default": default}
    if _origin(kind) is tuple:
        (item, _) = get_args(kind)
        return {"action": "extend", "type": _listed(item), "default": [], "metavar": _metavar(item)}
    if _origin(kind) is Mapping:
        key, value = get_args(kind)
        metavar = f"{_metavar(key)}={_metavar(value)}"
        return {"action": "extend", "type": _listed(key, value), "default": [], "metavar": metavar}
    base = get_args(kind)[0] if _origin(kind) is Annotated else kind
    if base in (str, int, float):
        return {"type": _one(kind, base), "default": default}
    raise TypeError(f"the setting {name}: no option reads a {kind}")


def _metavar(kind: Any) -> str:
    return "CODE" if kind == Code else "SEVERITY" if kind == Severity else "VALUE"


def _one(kind: Any, base: Callable[[str], Any]) -> Callable[[str], Any]:
    """One value of ``kind``, from its text."""

    def value(text: str) -> Any:
        try:
            typed = base(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: not a number") from error
        try:
            return read(typed, kind)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from error

    return value


def _listed(kind: Any, value_kind: Any = None) -> Callable[[str], list[Any]]:
    """A comma-separated list of values of ``kind``; with ``value_kind``, of ``KEY=VALUE`` pairs."""

    def items(text: str) -> list[Any]:
        found = []
        for part in filter(None, (each.strip() for each in text.split(","))):
            try:
                if value_kind is None:
                    found.append(read(part, kind))
                    continue
                key, equals, value = part.partition("=")
                if not equals:
                    raise ValueError(f"not {_metavar(kind)}={_metavar(value_kind)}")
                found.append((read(key.strip(), kind), read(value.strip(), value_kind)))
            except ValueError as error:
                raise argparse.ArgumentTypeError(f"{part!r}: {error}") from error
        return found

    return items
