"""Inputs for compiled functions the module never calls itself.

Two sources, in order: example calls the user declares in a ``# gbls: example(...)`` comment
(see ``comments``), evaluated in the module's namespace, and, failing that, inputs synthesized
from the signature: defaults where given, scalars from annotations, and small real tensors
(meta tensors would stop at the first break) whose batch dimension is marked dynamic. A model
says what it takes: its first layer (``Linear(16, …)`` wants ``[…, 16]``, an ``Embedding``
integer ids in its range, a ``Conv2d`` images of its channel count), its config (``vocab_size``,
``num_channels``, ``image_size``) and its main input's name (``main_input_name``: a Hugging Face
``forward`` takes every input as a keyword that defaults to ``None``).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator
from typing import Any

import torch

from .cuda import ToCpu

Call = tuple[tuple[Any, ...], dict[str, Any]]

TENSOR_RANKS = ((8,), (8, 8), (2, 8, 8), (2, 3, 8, 8))


def evaluate_example(arguments: str, namespace: dict[str, Any], to_cpu: ToCpu | None) -> Call:
    """Evaluate ``arguments`` as the inside of a call, in the module's namespace, CUDA mapped to the
    CPU by ``to_cpu`` if given."""
    scope = dict(namespace)
    scope["__gbls_call__"] = lambda *args, **kwargs: (args, kwargs)
    text = f"__gbls_call__({arguments})"
    call: Call = eval(text if to_cpu is None else to_cpu.expression(text), scope)
    return call


def synthesized_calls(function: Any, module: torch.nn.Module | None = None) -> Iterator[tuple[Call, str]]:
    """Candidate calls for ``function``, each with a short description of the inputs tried."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    try:
        hints = typing.get_type_hints(function)
    except Exception:
        hints = getattr(function, "__annotations__", {})
    parameters = [
        p
        for p in signature.parameters.values()
        if p.name != "self" and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    required = [p for p in parameters if p.default is inspect.Parameter.empty]
    main = _main_input(module, parameters, required)
    for candidate in _tensor_candidates(module, main.name if main is not None else ""):
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        shown = []
        for parameter in required:
            value = _value_for(hints.get(parameter.name, inspect.Parameter.empty), candidate)
            shown.append(f"{parameter.name}: {_shown(value)}")
            if parameter.kind == parameter.KEYWORD_ONLY:
                kwargs[parameter.name] = value
            else:
                args.append(value)
        if main is not None and main not in required:  # every Hugging Face input defaults to None
            kwargs[main.name] = candidate.tensor()
            shown.append(f"{main.name}: {_shown(kwargs[main.name])}")
        yield (tuple(args), kwargs), ", ".join(shown)


class Candidate:
    """A tensor to try: its shape, dtype, and for integer ids the bound of their range."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype = torch.float32, high: int = 2) -> None:
        self.shape = shape
        self.dtype = dtype
        self.high = high

    def tensor(self) -> torch.Tensor:
        if self.dtype == torch.int64:
            tensor = torch.randint(0, max(self.high, 1), self.shape)
        else:
            tensor = torch.randn(self.shape, dtype=self.dtype)
        if self.shape[0] >= 2:
            torch._dynamo.maybe_mark_dynamic(tensor, 0)
        return tensor


def _main_input(
    module: torch.nn.Module | None, parameters: list[inspect.Parameter], required: list[inspect.Parameter]
) -> inspect.Parameter | None:
    """The parameter a model's input goes to: the one it names itself (Hugging Face's
    ``main_input_name``), else the first, when every parameter has a default."""
    by_name = {parameter.name: parameter for parameter in parameters}
    named = getattr(module, "main_input_name", None) if module is not None else None
    if isinstance(named, str) and named in by_name:
        return by_name[named]
    if not required and parameters:
        return parameters[0]
    return required[0] if required else None


def _config(module: torch.nn.Module | None, name: str) -> Any:
    config = getattr(module, "config", None) if module is not None else None
    value = getattr(config, name, None)
    return value if type(value) in (int, tuple, list) else None


def _tensor_candidates(module: torch.nn.Module | None, main: str) -> list[Candidate]:
    """What the model says it takes: its first layer, its config, the name of its main input."""
    first = _first_layer(module) if module is not None else None
    vocabulary = _config(module, "vocab_size")
    size = _config(module, "image_size") or _config(module, "sample_size")
    side = size if isinstance(size, int) else size[0] if size else 16
    if isinstance(first, torch.nn.Embedding) or (main.endswith("_ids") and vocabulary):
        high = first.num_embeddings if isinstance(first, torch.nn.Embedding) else vocabulary
        return [Candidate((2, 8), torch.int64, high)]
    if main == "input_values":  # raw audio: a batch of samples
        return [Candidate((2, 4000))]
    if isinstance(first, torch.nn.Linear):
        return [Candidate((2, first.in_features)), Candidate((2, 4, first.in_features))]
    if isinstance(first, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
        spatial = {torch.nn.Conv1d: 1, torch.nn.Conv2d: 2, torch.nn.Conv3d: 3}[type(first)]
        return [Candidate((2, first.in_channels) + (side,) * spatial)]
    if isinstance(first, (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)):
        return [Candidate((2, 8, first.input_size))]
    channels = _config(module, "num_channels") or _config(module, "in_channels")
    if isinstance(channels, int):
        return [Candidate((2, channels, side, side))]
    return [Candidate(shape) for shape in TENSOR_RANKS]


def _first_layer(module: torch.nn.Module) -> torch.nn.Module | None:
    for child in module.modules():
        if child is not module and not list(child.children()) and any(True for _ in child.parameters()):
            return child
    return None


def _value_for(annotation: Any, candidate: Candidate) -> Any:
    options = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union else (annotation,)
    if torch.Tensor not in options or len(options) == 1:
        if int in options:
            return 2
        if float in options:
            return 0.5
        if bool in options:
            return True
    return candidate.tensor()


def _shown(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        kind = "i64" if value.dtype == torch.int64 else "f32"
        return f"{kind}[{', '.join(str(size) for size in value.shape)}]"
    return repr(value)
