"""gbls's settings: typed, with defaults, read from LSP initialization options or CLI flags."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, get_args

from .worker.shared import protocol

Severity = Literal["error", "warning", "information", "hint"]
SandboxMode = Literal["auto", "bwrap", "off"]
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)


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
    # Real runs' TORCH_TRACE folders or files, or TORCH_LOGS logs, to show on the source: paths or
    # globs, relative to the workspace folder (``gbls.traces``).
    traces: tuple[str, ...] = ()

    def for_worker(self) -> protocol.Settings:
        return protocol.Settings(timeout=self.timeout, memory_mb=self.memory_mb, run_main=self.run_main)

    def worker_key(self) -> tuple[str, str]:
        """What a running worker was started with; a change restarts it."""
        return (self.interpreter, self.sandbox)


# LSP clients send camelCase; the snake_case field names are accepted too.
_ALIASES = {
    "analyseOnChange": "analyse_on_change",
    "runMain": "run_main",
    "memoryMb": "memory_mb",
    "debounceMs": "debounce_ms",
}


def from_options(options: Any, base: Settings | None = None) -> Settings:
    """Settings from a client's options (``{"gbls": {...}}`` or the inner dict); bad values are ignored."""
    base = base or Settings()
    if not isinstance(options, dict):
        return base
    if isinstance(options.get("gbls"), dict):
        options = options["gbls"]
    fields = {f.name: f for f in dataclasses.fields(Settings)}
    changes: dict[str, Any] = {}
    for key, value in options.items():
        name = _ALIASES.get(key, key)
        default = getattr(base, name, None) if name in fields else None
        if name not in fields or value is None:
            continue
        if isinstance(default, tuple):
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                changes[name] = tuple(value)
        elif isinstance(default, bool):
            if isinstance(value, bool):
                changes[name] = value
        elif (
            isinstance(default, (int, float))
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
        ):
            if value > 0 or (name == "debounce_ms" and value == 0):  # no pause at all is fine
                changes[name] = type(default)(value)
        elif isinstance(value, str):
            if name == "severity" and value.lower() not in SEVERITIES:
                continue
            if name == "sandbox" and value not in SANDBOX_MODES:
                continue
            changes[name] = value.lower() if name == "severity" else value
    return dataclasses.replace(base, **changes)
