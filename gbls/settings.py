"""gbls's settings: typed, with defaults, read from LSP initialization options or CLI flags."""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from .worker.shared import protocol

log = logging.getLogger(__name__)

Severity = Literal["error", "warning", "information", "hint"]
SandboxMode = Literal["auto", "bwrap", "off"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
DEVICES: tuple[protocol.Device, ...] = get_args(protocol.Device)
# What a diagnostic's code can be in ``severityOverrides`` and ``ignore``: a GB id, or "recompile".
CODE = re.compile(r"GB\d{4}|recompile")


@dataclass(frozen=True)
class Settings:
    enable: bool = True
    interpreter: str = ""  # the Python with the user's torch; empty: the one running gbls
    timeout: float = 20.0
    memory_mb: int = 4096
    debounce_ms: int = 750
    severity: Severity = "warning"
    analyse_on_change: bool = True
    run_main: bool = True  # run the `__main__` block, as `python file.py` does
    sandbox: SandboxMode = "auto"
    device: protocol.Device = "auto"  # where the code's CUDA goes: see protocol.Device
    # A code's own severity, over ``severity`` ("GB0124": "error"), as Pylance's diagnosticSeverityOverrides.
    severity_overrides: Mapping[str, Severity] = field(default_factory=dict)
    ignore: tuple[str, ...] = ()  # codes never reported, as ruff's lint.ignore
    # Real runs' TORCH_TRACE folders or files, or TORCH_LOGS logs, to show on the source: paths or
    # globs, relative to the workspace folder (``gbls.traces``).
    traces: tuple[str, ...] = ()

    def for_worker(self) -> protocol.Settings:
        return protocol.Settings(
            timeout=self.timeout, memory_mb=self.memory_mb, run_main=self.run_main, device=self.device
        )

    @property
    def gpu(self) -> bool:
        """Whether the worker is shown the GPU: only for the device setting "cuda"."""
        return self.device == "cuda"

    def worker_key(self) -> tuple[str, str, bool]:
        """What a running worker was started with; a change restarts it."""
        return (self.interpreter, self.sandbox, self.gpu)


# LSP clients send camelCase; the snake_case field names are accepted too.
_ALIASES = {
    "analyseOnChange": "analyse_on_change",
    "runMain": "run_main",
    "memoryMb": "memory_mb",
    "debounceMs": "debounce_ms",
    "severityOverrides": "severity_overrides",
}


def _code(value: Any) -> str | None:
    """A diagnostic's code as gbls writes it ("gb0059" is GB0059), or None if it is none."""
    if not isinstance(value, str):
        return None
    code = value.upper() if value[:2].lower() == "gb" else value.lower()
    return code if CODE.fullmatch(code) else None


def _overrides(value: Any) -> dict[str, Severity] | None:
    """``severityOverrides``: a code's severity by its code; a bad entry is left out, with a warning."""
    if not isinstance(value, dict):
        return None
    overrides: dict[str, Severity] = {}
    for key, severity in value.items():
        code = _code(key)
        level = next((s for s in SEVERITIES if isinstance(severity, str) and severity.lower() == s), None)
        if code is None or level is None:
            log.warning(
                "ignoring the severity override %r: %r (a code: one of %s)", key, severity, SEVERITIES
            )
        else:
            overrides[code] = level
    return overrides


def _ignored(value: Any) -> tuple[str, ...] | None:
    """``ignore``: a list of codes; a bad one is left out, with a warning."""
    if not isinstance(value, list):
        return None
    codes = []
    for item in value:
        code = _code(item)
        if code is None:
            log.warning("ignoring %r in the setting ignore: not a GB id (GB0059) or recompile", item)
        else:
            codes.append(code)
    return tuple(dict.fromkeys(codes))


def _value(name: str, default: Any, value: Any) -> Any:
    """``value`` for the setting ``name`` of type ``default``'s, or None if it does not fit."""
    if name == "severity_overrides":
        return _overrides(value)
    if name == "ignore":
        return _ignored(value)
    if name == "traces":
        fits = isinstance(value, list) and all(isinstance(item, str) for item in value)
        return tuple(value) if fits else None
    if isinstance(default, bool):
        return value if isinstance(value, bool) else None
    if isinstance(default, int | float):
        if not isinstance(value, int | float) or isinstance(value, bool):
            return None
        # No pause at all is fine; no time or no memory is not.
        return type(default)(value) if value > 0 or (name == "debounce_ms" and value == 0) else None
    if not isinstance(value, str):
        return None
    if name == "severity":
        return value.lower() if value.lower() in SEVERITIES else None
    if name == "sandbox":
        return value if value in SANDBOX_MODES else None
    if name == "device":
        return value if value in DEVICES else None
    return value


def from_options(options: Any, base: Settings | None = None) -> Settings:
    """Settings from a client's options (``{"gbls": {...}}`` or the inner dict); a bad value is
    ignored, with a warning."""
    base = base or Settings()
    if not isinstance(options, dict):
        return base
    if isinstance(options.get("gbls"), dict):
        options = options["gbls"]
    fields = {f.name for f in dataclasses.fields(Settings)}
    changes: dict[str, Any] = {}
    for key, value in options.items():
        name = _ALIASES.get(key, key)
        if name not in fields or value is None:
            continue
        read = _value(name, getattr(base, name), value)
        if read is None:
            log.warning("ignoring the setting %s: %r does not fit it", key, value)
        else:
            changes[name] = read
    return dataclasses.replace(base, **changes)
