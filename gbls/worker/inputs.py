"""Inputs for compiled functions the module never calls itself.

Two sources, in order: example calls the user declares in a ``# gbls: example(...)`` comment
(see ``comments``), evaluated in the module's namespace, and, failing that, inputs synthesized
from the signature: defaults where given, scalars from annotations, and small real tensors
(meta tensors would stop at the first break) in a few candidate shapes whose batch dimension is
marked dynamic. A module's first layer decides the trailing size (``Linear(16, …)`` wants ``[…, 16]``).
"""

from __future__ import annotations

import inspect
import typing
from typing import Any, Dict, Iterator, List, Optional, Tuple

import torch

Call = Tuple[Tuple[Any, ...], Dict[str, Any]]

TENSOR_RANKS = ((8,), (8, 8), (2, 8, 8), (2, 3, 8, 8))


def evaluate_example(arguments: str, namespace: Dict[str, Any]) -> Call:
    """Evaluate ``arguments`` as the inside of a call, in the module's namespace."""
    scope = dict(namespace)
    scope["__gbls_call__"] = lambda *args, **kwargs: (args, kwargs)
    call: Call = eval(f"__gbls_call__({arguments})", scope)
    return call


def synthesized_calls(function: Any, module: Optional[torch.nn.Module] = None) -> Iterator[Tuple[Call, str]]:
    """Candidate calls for ``function``, each with a short description of the shapes tried."""
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
        if p.name != "self"
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.default is inspect.Parameter.empty
    ]
    for shape, dtype in _tensor_candidates(module):
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        for parameter in parameters:
            value = _value_for(hints.get(parameter.name, inspect.Parameter.empty), shape, dtype)
            if parameter.kind == parameter.KEYWORD_ONLY:
                kwargs[parameter.name] = value
            else:
                args.append(value)
        yield (tuple(args), kwargs), f"synthesized {list(shape)}"


def _tensor_candidates(module: Optional[torch.nn.Module]) -> List[Tuple[Tuple[int, ...], torch.dtype]]:
    first = _first_layer(module) if module is not None else None
    if isinstance(first, torch.nn.Linear):
        return [((2, first.in_features), torch.float32), ((2, 4, first.in_features), torch.float32)]
    if isinstance(first, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
        spatial = {torch.nn.Conv1d: 1, torch.nn.Conv2d: 2, torch.nn.Conv3d: 3}[type(first)]
        return [((2, first.in_channels) + (16,) * spatial, torch.float32)]
    if isinstance(first, torch.nn.Embedding):
        return [((2, 8), torch.int64)]
    if isinstance(first, (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)):
        return [((2, 8, first.input_size), torch.float32)]
    return [(shape, torch.float32) for shape in TENSOR_RANKS]


def _first_layer(module: torch.nn.Module) -> Optional[torch.nn.Module]:
    for child in module.modules():
        if child is not module and not list(child.children()) and any(True for _ in child.parameters()):
            return child
    return None


def _value_for(annotation: Any, shape: Tuple[int, ...], dtype: torch.dtype) -> Any:
    if annotation is int:
        return 2
    if annotation is float:
        return 0.5
    if annotation is bool:
        return True
    if dtype == torch.int64:
        tensor = torch.randint(0, 2, shape)
    else:
        tensor = torch.randn(shape, dtype=dtype)
    if shape[0] >= 2:
        torch._dynamo.maybe_mark_dynamic(tensor, 0)
    return tensor
