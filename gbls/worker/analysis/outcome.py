"""What the analysed program did, for the proofs of fixes: what each call of its compiled code
returned, and what it printed (``engine/fixes/outcomes.py`` compares two runs' records).

So that two runs can be compared at all, the run is made repeatable: torch's generators, Python's
``random`` (which a forked child reseeds from the system) and NumPy's global generator (where torch
imported NumPy) start from one seed, whatever the warm worker did before the fork.

Each call the program makes of what ``torch.compile`` returned is summarised as it returns
(``summary``): its value's structure, types, shapes and numbers, for the first calls of each
compiled function. A call inside other compiled code is not one: Dynamo traces through the
recording wrapper to the compiled function (the wrapper carries its ``_torchdynamo_inline``),
as it would without it. gbls's own calls of a target nothing called use the compiled object
itself, unrecorded. What the program writes to ``sys.stdout`` is kept, its first ``PRINTED`` bytes.

Installed in the analysis's child only (``run.analyse``): the pytest plugin's capture, in the
project's own test process, neither reseeds nor records.
"""

from __future__ import annotations

import functools
import inspect
import io
import os
import random
import sys
from collections.abc import Callable, Mapping
from typing import Any

import torch

from ..shared.events import Event, PrintedEvent, ReturnEvent
from ..shared.protocol import CALLS_RECORDED
from . import patches

Emit = Callable[[Event], None]

SEED = 0
TOKENS = 256  # of one call's summary; the rest is cut, and said so
ELEMENTS = 32  # of a tensor, listed; a bigger one is listed so far, then summed
TEXT = 200  # characters of a string value
# Bytes of what the program prints that are kept: its one event stays far below the event line's limit.
PRINTED = 64 * 1024
_write = os.write  # taken before the program runs, which may replace it


class Recorder:
    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.calls: dict[str, int] = {}
        self.printed: Printed | None = None
        self.stream: io.TextIOWrapper | None = None

    def install(self) -> Recorder:
        """Make the run repeatable, record what ``sys.stdout`` is written, and have what
        ``torch.compile`` (the capture's, installed before) returns record its calls."""
        torch.manual_seed(SEED)
        random.seed(SEED)
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed(SEED)
        self.record_stdout()
        patches.replace(torch, "compile", self.compiling(torch.compile))
        return self

    def record_stdout(self) -> None:
        """``sys.stdout`` as it was (its encoding, its buffering) over a ``Printed``: where it has no
        descriptor (replaced before the program ran), nothing is recorded."""
        original = sys.stdout
        try:
            original.flush()
            printed = Printed(original.fileno(), PRINTED)
        except (AttributeError, OSError, ValueError):
            return
        self.printed = printed
        # Buffered as it was: unbuffered under PYTHONUNBUFFERED, as the worker runs.
        buffered = isinstance(getattr(original, "buffer", None), io.BufferedIOBase)
        self.stream = io.TextIOWrapper(
            io.BufferedWriter(printed) if buffered else printed,  # type: ignore[arg-type]
            encoding=original.encoding,
            errors=original.errors,
            line_buffering=bool(original.line_buffering),
            write_through=getattr(original, "write_through", False),
        )
        patches.replace(sys, "stdout", self.stream)

    def finish(self) -> None:
        """Once the program has ended: what it printed."""
        if self.printed is None or self.stream is None:
            return
        try:
            self.stream.flush()  # the program may have put another stream in its place
        except (OSError, ValueError):
            pass
        text = self.printed.text(self.stream.encoding)
        self.emit(PrintedEvent(text=text, whole=not self.printed.cut))

    def compiling(self, compile: Callable[..., Any]) -> Callable[..., Any]:
        def recording_compile(model: Any = None, **options: Any) -> Any:
            if model is None:
                return lambda actual: recording_compile(actual, **options)
            compiled = compile(model, **options)
            if compiled is model:  # left as it is (its last results still hold): not compiled here
                return compiled
            name = _name_of(model)
            if isinstance(compiled, torch.nn.Module):  # an OptimizedModule: Dynamo unwraps it
                compiled.forward = self.recording(compiled.forward, name)
                return compiled
            return self.recording(compiled, name)

        return recording_compile

    def recording(self, compiled: Callable[..., Any], name: str) -> Callable[..., Any]:
        @functools.wraps(compiled)  # its __dict__ too: Dynamo inlines through _torchdynamo_inline
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if torch.compiler.is_compiling():
                return compiled(*args, **kwargs)
            value = compiled(*args, **kwargs)
            call = self.calls.get(name, 0)
            self.calls[name] = call + 1
            if call < CALLS_RECORDED:
                try:
                    summarised = tuple(summary(value))
                except Exception as error:  # the value's own code failed: it says so
                    summarised = (f"<unreadable: {type(error).__name__}>",)
                self.emit(ReturnEvent(function=name, call=call, value=summarised))
            return value

        # torch.compile of this wrapper compiles what it wraps, as it does the compiled function.
        recorded._torchdynamo_wrapper_id = id(recorded)  # type: ignore[attr-defined]
        return recorded


def _name_of(model: Any) -> str:
    """The compiled function's name, as the capture names a target: a module's class, a function's
    qualified name."""
    owner = getattr(model, "__self__", None)
    if isinstance(owner, torch.nn.Module) and getattr(model, "__name__", "") in (
        "_call_impl",
        "_wrapped_call_impl",
    ):
        model = owner
    if isinstance(model, torch.nn.Module):
        return type(model).__qualname__
    try:
        model = inspect.unwrap(model)
    except ValueError:
        pass
    return str(getattr(model, "__qualname__", type(model).__qualname__))


class Printed(io.RawIOBase):
    """The bytes under ``sys.stdout``: written to its descriptor, the first ``bound`` of them kept.

    ``sys.stdout`` stays a ``TextIOWrapper``, buffered as the program's was: code that writes to it
    in compiled code meets the type Dynamo knows, and breaks as it would without gbls.
    """

    def __init__(self, fd: int, bound: int) -> None:
        super().__init__()
        self._fd = fd
        self._bound = bound
        self._kept = bytearray()
        self.cut = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def write(self, data: Any) -> int:
        written = _write(self._fd, bytes(data))
        room = self._bound - len(self._kept)
        self._kept += bytes(data[: min(written, room)])
        self.cut = self.cut or written > room
        return written

    def text(self, encoding: str) -> str:
        return self._kept.decode(encoding, "replace")


def summary(value: Any) -> list[str]:
    """``value`` as tokens: its structure, types and shapes as words, its numbers as numbers (which
    the comparison allows a float's tolerance); at most ``TOKENS``."""
    tokens: list[str] = []
    _summarise(value, tokens, 0)
    return tokens[:TOKENS] if len(tokens) <= TOKENS else [*tokens[: TOKENS - 1], "<cut>"]


def _summarise(value: Any, tokens: list[str], depth: int) -> None:
    if len(tokens) > TOKENS:
        return
    if isinstance(value, torch.Tensor):
        tokens.extend(_tensor(value))
    elif value is None or isinstance(value, bool):
        tokens.append(repr(value))
    elif isinstance(value, int | float):
        tokens.append(repr(value))
    elif isinstance(value, str):
        tokens.append(repr(value[:TEXT]))
    elif depth > 8:
        tokens.append(f"<{type(value).__qualname__}>")
    elif isinstance(value, list | tuple):
        tokens.append(f"{type(value).__qualname__}[")
        for item in value:
            _summarise(item, tokens, depth + 1)
        tokens.append("]")
    elif isinstance(value, Mapping):
        tokens.append(f"{type(value).__qualname__}{{")
        for key, item in value.items():
            tokens.append(repr(key) if isinstance(key, str | int) else f"<{type(key).__qualname__}>")
            _summarise(item, tokens, depth + 1)
        tokens.append("}")
    else:
        tokens.append(f"<{type(value).__qualname__}>")


def _tensor(tensor: torch.Tensor) -> list[str]:
    head = f"tensor {str(tensor.dtype).removeprefix('torch.')} {tuple(tensor.shape)}"
    plain = type(tensor) in (torch.Tensor, torch.nn.Parameter)
    if tensor.layout != torch.strided or tensor.is_meta or not plain:
        return [head, f"<{type(tensor).__qualname__} {tensor.layout}>"]
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    values = [repr(number) for number in flat[:ELEMENTS].cpu().tolist()]
    if flat.numel() <= ELEMENTS:
        return [head, *values]
    # Summed in double precision without a double copy of a big float tensor (a model's logits).
    whole = flat if flat.is_floating_point() else flat.to(torch.float64)
    total = torch.sum(whole, dtype=torch.float64).item()
    magnitude = torch.linalg.vector_norm(whole, ord=1, dtype=torch.float64).item()
    return [head, *values, "sum", repr(total), "abs", repr(magnitude)]
