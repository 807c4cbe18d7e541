"""gbls's settings, declared once: names, types, defaults and checks, read from LSP initialization
options or CLI flags.

The VS Code extension contributes them (``vscode-extension/package.json``) and sends them
(``src/settings.ts``), and the worker, which cannot import this module, has its part of them
(``protocol.Settings``): ``tests/unit/test_vscode.py`` and ``tests/unit/test_settings.py`` check
those against this module.
"""

from __future__ import annotations

import dataclasses
import logging
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
        raise ValueError(f"{text!r} is not a GB id (GB0059) or recompile")
    return code


Code = Annotated[str, _code]


@dataclass(frozen=True)
class Settings:
    enable: bool = True
    interpreter: str = ""  # the Python with the user's torch; empty: the one running gbls
    timeout: Annotated[float, _positive] = 20.0
    memory_mb: Annotated[int, _positive] = 4096
    debounce_ms: Annotated[int, _not_negative] = 750  # no pause at all is fine
    severity: Severity = "warning"
    analyse_on_change: bool = True
    run_main: bool = True  # run the `__main__` block, as `python file.py` does
    sandbox: SandboxMode = "auto"
    device: protocol.Device = "auto"  # where the code's CUDA goes: see protocol.Device
    values: protocol.Values = "auto"  # what compiled graphs compute: see protocol.Values
    # A code's own severity, over ``severity`` ("GB0124": "error"), as Pylance's diagnosticSeverityOverrides.
    severity_overrides: Mapping[Code, Severity] = field(default_factory=dict)
    ignore: tuple[Code, ...] = ()  # codes never reported, as ruff's lint.ignore
    # Real runs' TORCH_TRACE folders or files, or TORCH_LOGS logs, to show on the source: paths or
    # globs, relative to the workspace folder (``gbls.traces``).
    traces: tuple[str, ...] = ()
    # Inlay hints: where a compiled function's graph ends and the next begins, and at a call that
    # compiled a function again and again.
    inlay_hints: bool = True

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
