"""gbls's settings, declared once: names, types, defaults, checks and each one's option of the
``gbls`` command (``flags.py`` makes the options from them), read from LSP initialization options
or the command's options; and the environment variables gbls reads, each read here alone.

The VS Code extension contributes them (``vscode-extension/package.json``) and sends them
(``src/settings.ts``), and the worker, which cannot import this module, has its part of them
(``protocol.Settings``): ``tests/unit/test_vscode.py`` and ``tests/unit/test_settings.py`` check
those against this module.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar, get_args

from cattrs import Converter
from cattrs.errors import CattrsError

from .worker.shared import protocol

log = logging.getLogger(__name__)

Severity = Literal["error", "warning", "information", "hint"]
SandboxMode = Literal["auto", "bwrap", "off"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
DEVICES: tuple[protocol.Device, ...] = get_args(protocol.Device)
VALUES: tuple[protocol.Values, ...] = get_args(protocol.Values)
# What a diagnostic's code can be in ``severityOverrides`` and ``ignore``: a GB id, or "recompile".
CODE = re.compile(r"GB\d{4}|recompile")

Number = TypeVar("Number", int, float)

# A setting's type may be ``Annotated[T, read]``: a value of T is read by ``read``, which raises
# ValueError for one that does not fit the setting.


def _positive(number: Number) -> Number:
    if not number > 0:  # written so, NaN fails it too
        raise ValueError("no time or no memory is no limit")
    return number


def _not_negative(number: Number) -> Number:
    if not number >= 0:
        raise ValueError("a negative pause")
    return number


def _code(text: str) -> str:
    """A diagnostic's code as gbls writes it: "gb0059" is GB0059."""
    code = text.upper() if text[:2].lower() == "gb" else text.lower()
    if not CODE.fullmatch(code):
        raise ValueError("not a GB id (GB0059) or recompile")
    return code


Code = Annotated[str, _code]

# The commands whose options are settings: those that analyse (``check``, ``run``), and ``import``,
# which reports what a trace holds.
Command = Literal["check", "run", "import"]
ANALYSING: tuple[Command, ...] = ("check", "run")
REPORTING: tuple[Command, ...] = ("check", "run", "import")


@dataclass(frozen=True)
class Flag:
    """A setting as an option of the ``gbls`` commands ``commands``: ``--`` and the setting's name in
    kebab-case (``--memory-mb``), or ``--name``."""

    help: str
    commands: tuple[Command, ...] = ANALYSING
    name: str = ""


def _option(help: str, commands: tuple[Command, ...] = ANALYSING, name: str = "") -> dict[str, Flag | None]:
    return {"flag": Flag(help, commands, name)}


# A setting of the editor's alone: when to analyse, what to show beside the code.
EDITOR: dict[str, Flag | None] = {"flag": None}


@dataclass(frozen=True)
class Settings:
    enable: bool = field(default=True, metadata=EDITOR)
    # The Python with the user's torch; empty: the one running gbls.
    interpreter: str = field(
        default="",
        metadata=_option("interpreter with the torch to analyse with (gbls.interpreter)", name="python"),
    )
    timeout: Annotated[float, _positive] = field(default=20.0, metadata=_option("seconds per analysis"))
    memory_mb: Annotated[int, _positive] = field(default=4096, metadata=_option("memory per analysis"))
    debounce_ms: Annotated[int, _not_negative] = field(default=750, metadata=EDITOR)  # no pause is fine
    severity: Severity = field(
        default="warning",
        metadata=_option(
            "the severity of a graph break or recompilation where the output has one (sarif, github)",
            REPORTING,
        ),
    )
    analyse_on_change: bool = field(default=True, metadata=EDITOR)
    run_main: bool = field(
        default=True,
        # ``gbls run`` runs a script as python does: its `__main__` block always runs.
        metadata=_option("run the `__main__` block, as `python file.py` does (default: on)", ("check",)),
    )
    sandbox: SandboxMode = field(
        default="auto",
        metadata=_option(
            "the analysis in bubblewrap where it works (auto), always (bwrap: none without it), "
            "or never (off)"
        ),
    )
    device: protocol.Device = field(  # where the code's CUDA goes: see protocol.Device
        default="auto",
        metadata=_option(
            "where the code's CUDA runs: on the CPU when CUDA cannot be used (auto), always on the CPU "
            "(cpu), or on the GPU (cuda, experimental)"
        ),
    )
    values: protocol.Values = field(  # what compiled graphs compute: see protocol.Values
        default="auto",
        metadata=_option(
            "what compiled code computes: its outputs' shapes alone where computing them costs real "
            "arithmetic (auto), or every value (exact)"
        ),
    )
    # A code's own severity, over ``severity`` ("GB0124": "error"), as Pylance's diagnosticSeverityOverrides.
    severity_overrides: Mapping[Code, Severity] = field(
        default_factory=dict,
        metadata=_option(
            "a code's own severity, over --severity (GB0124=error; comma-separated, or repeated)", REPORTING
        ),
    )
    ignore: tuple[Code, ...] = field(  # codes never reported, as ruff's lint.ignore
        default=(),
        metadata=_option(
            "codes not reported and failing nothing (GB0059, recompile; comma-separated, or repeated)",
            REPORTING,
        ),
    )
    # Real runs' TORCH_TRACE folders or files, or TORCH_LOGS logs, to show on the source: paths or
    # globs, relative to the workspace folder (``gbls.traces``); ``gbls import`` reads them.
    traces: tuple[str, ...] = field(default=(), metadata=EDITOR)
    # Inlay hints: where a compiled function's graph ends and the next begins, and at a call that
    # compiled a function again and again.
    inlay_hints: bool = field(default=True, metadata=EDITOR)

    def for_worker(self) -> protocol.Settings:
        return protocol.Settings(
            timeout=self.timeout,
            memory_mb=self.memory_mb,
            run_main=self.run_main,
            device=self.device,
            values=self.values,
        )

    @property
    def gpu(self) -> bool:
        """Whether the worker is shown the GPU: only for the device setting "cuda"."""
        return self.device == "cuda"

    def worker_key(self) -> tuple[str, str, bool]:
        """What a running worker was started with; a change restarts it."""
        return (self.interpreter, self.sandbox, self.gpu)

    def severity_of(self, code: str, placed: Severity) -> Severity:
        """The severity of a finding of ``code`` that ``severity`` placed at ``placed`` (that
        setting; a step above it for a recompile limit hit; an error where the program raises): as
        many steps from its code's own severity (``severity_overrides``), if it has one. The editor's
        diagnostics and the command's outputs alike."""
        own = self.severity_overrides.get(code)
        if own is None:
            return placed
        step = SEVERITIES.index(placed) - SEVERITIES.index(self.severity)
        return SEVERITIES[min(max(SEVERITIES.index(own) + step, 0), len(SEVERITIES) - 1)]


def above(severity: Severity) -> Severity:
    """One step more severe: where a recompile limit hit is, over the ``severity`` setting."""
    return SEVERITIES[max(SEVERITIES.index(severity) - 1, 0)]


def flag(setting: dataclasses.Field[Any]) -> Flag | None:
    """The option of a setting (a field of ``Settings``); None for the editor's alone. Every setting
    says which."""
    if "flag" not in setting.metadata:
        raise LookupError(f"the setting {setting.name} declares no option of the gbls command, nor EDITOR")
    declared: Flag | None = setting.metadata["flag"]
    return declared


def cache_dir_from_environment() -> str:
    """The persistent cache's folder ``GBLS_CACHE_DIR`` names; "" where it names none."""
    return os.environ.get("GBLS_CACHE_DIR", "")


def cache_off_by_environment() -> bool:
    """Whether ``GBLS_NO_CACHE=1`` turns the persistent cache off (as ruff's ``RUFF_NO_CACHE``)."""
    return os.environ.get("GBLS_NO_CACHE", "") not in ("", "0")


def worker_log_by_environment() -> bool:
    """Whether ``GBLS_WORKER_LOG=1`` asks for the worker's log on the server's stderr (the worker,
    which cannot import this module, reads it for itself)."""
    return os.environ.get("GBLS_WORKER_LOG", "") not in ("", "0")


def camel(name: str) -> str:
    """A setting's name as LSP clients send it: ``memoryMb`` for ``memory_mb``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_hints = typing.get_type_hints(Settings, include_extras=True)
# Each setting's type, by its field name: what a client's value is read as.
TYPES: dict[str, Any] = {item.name: _hints[item.name] for item in dataclasses.fields(Settings)}
# LSP clients send camelCase; the snake_case field names are accepted too.
_NAMES = {**{name: name for name in TYPES}, **{camel(name): name for name in TYPES}}


def _exactly(value: Any, kind: type[Any]) -> Any:
    """JSON's own types, where cattrs would convert: "yes" is no bool, 5 no string."""
    if not isinstance(value, kind):
        raise ValueError(f"not a {kind.__name__}")
    return value


def _number(value: Any, kind: type[Number]) -> Number:
    """A number as the setting's type: 4096.0 is 4096, true is none."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    return kind(value)


def _severity(value: Any, _: Any) -> Severity:
    for severity in SEVERITIES:
        if isinstance(value, str) and value.lower() == severity:
            return severity
    raise ValueError(f"not one of {SEVERITIES}")


def _read(kind: Any) -> Callable[[Any, Any], Any]:
    """The hook of ``Annotated[T, read]``: T's own, then ``read``."""
    base, read = get_args(kind)
    hook = _converter.get_structure_hook(base)
    return lambda value, _: read(hook(value, base))


def _items(kind: Any) -> Callable[[Any, Any], tuple[Any, ...]]:
    """The hook of ``tuple[T, ...]``: a list (cattrs would take a string's letters), each item a T."""
    item = get_args(kind)[0]
    hook = _converter.get_structure_hook(item)

    def structure(value: Any, _: Any) -> tuple[Any, ...]:
        return tuple(hook(each, item) for each in _exactly(value, list))

    return structure


def _overrides(value: Any, _: Any) -> dict[str, Severity]:
    """``severityOverrides``: a bad entry is left out, with a warning, and the others kept."""
    overrides: dict[str, Severity] = {}
    for key, severity in _exactly(value, dict).items():
        try:
            overrides[_converter.structure(key, Code)] = _severity(severity, Severity)
        except ValueError:
            log.warning(
                "ignoring the severity override %r: %r (a code: one of %s)", key, severity, SEVERITIES
            )
    return overrides


def _ignored(value: Any, _: Any) -> tuple[str, ...]:
    """``ignore``: a bad code is left out, with a warning, and the others kept once each."""
    codes = []
    for item in _exactly(value, list):
        try:
            codes.append(_converter.structure(item, Code))
        except ValueError:
            log.warning("ignoring %r in the setting ignore: not a GB id (GB0059) or recompile", item)
    return tuple(dict.fromkeys(codes))


def _is_annotated(kind: Any) -> bool:
    origin: Any = typing.get_origin(kind)
    return origin is Annotated


def _is_tuple(kind: Any) -> bool:
    """``tuple[T, ...]``, not a pair."""
    origin: Any = typing.get_origin(kind)
    return origin is tuple and get_args(kind)[1:] == (Ellipsis,)


_converter = Converter()
_converter.register_structure_hook(bool, _exactly)
_converter.register_structure_hook(str, _exactly)
_converter.register_structure_hook(int, _number)
_converter.register_structure_hook(float, _number)
_converter.register_structure_hook_func(lambda kind: kind == Severity, _severity)
_converter.register_structure_hook_factory(_is_annotated, _read)
_converter.register_structure_hook_factory(_is_tuple, _items)
# Registered last, so that they come before the general hooks above.
_converter.register_structure_hook_func(lambda kind: kind == TYPES["severity_overrides"], _overrides)
_converter.register_structure_hook_func(lambda kind: kind == TYPES["ignore"], _ignored)


def read(value: Any, kind: Any) -> Any:
    """``value`` as the settings read a value of type ``kind``: one that does not fit raises
    ValueError."""
    try:
        return _converter.structure(value, kind)
    except CattrsError as error:
        raise ValueError(str(error)) from error


def from_options(options: Any, base: Settings | None = None) -> Settings:
    """Settings from a client's options (``{"gbls": {...}}`` or the inner dict); a bad value is
    ignored, with a warning."""
    base = base or Settings()
    if not isinstance(options, dict):
        return base
    if isinstance(options.get("gbls"), dict):
        options = options["gbls"]
    changes: dict[str, Any] = {}
    for key, value in options.items():
        name = _NAMES.get(key)
        if name is None or value is None:
            continue
        try:
            changes[name] = _converter.structure(value, TYPES[name])
        except (ValueError, CattrsError):
            log.warning("ignoring the setting %s: %r does not fit it", key, value)
    return dataclasses.replace(base, **changes)
