"""Translate, don't compute: a compiled graph that would cost real arithmetic runs without it.

Dynamo needs the program's Python values, its tensors' metadata and its global state, never the
numbers inside big tensors. A GPT-2 forward on 12 x 1024 tokens is seconds of arithmetic on a
laptop's CPU, called hundreds of times by an evaluation before training even starts; its
translation is the same whatever the numbers. So a graph whose one call would compute more than
``WORK_LIMIT`` element-operations (its matrix products counted by their multiply-adds) answers
each call with outputs of the shapes, strides, dtypes and devices Dynamo traced for it (its nodes'
fake values), filled with zeros, and with autograd history: ``backward()`` gives each input that
needs one a zero gradient of its shape, so optimizers step and the training loop goes on. An
output that is a view of an input is that view of the real input. The eager code between graphs
runs as under ``python``. A graph that would cost little still runs, exactly.

What eliding values can change: the values themselves (a loss read with ``.item()`` is 0.0, a
sampled token comes from uniform probabilities), a graph's in-place writes to its inputs (a KV
cache, running statistics) and the random numbers it draws. The analysis says so where it elided
(``ElidedEvent``); the ``values`` setting "exact" runs every graph.

Outputs of a megabyte and more take memory the system zero-fills lazily (an anonymous mapping),
so a 2.4 GB logits tensor nobody reads costs nothing: a ``torch.zeros`` of it costs a second.
"""

from __future__ import annotations

import math
import mmap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_flatten, tree_unflatten

# A graph computing fewer element-operations than this in one call runs exactly: 10^8 is tens of
# milliseconds on one core, and every fixture-sized program stays far below it.
WORK_LIMIT = 10**8
# Outputs from this size on take lazily zero-filled memory; smaller ones a torch.zeros, as fast.
LAZY_BYTES = 1 << 20
# A size torch cannot tell before the graph runs counts as this, for the estimate alone.
UNKNOWN_SIZE = 64

# The operations whose cost is their output's size times a contracted dimension.
MATRIX_PRODUCTS = frozenset(
    ("linear", "matmul", "mm", "bmm", "__matmul__", "addmm", "baddbmm", "addbmm", "einsum")
)
CONVOLUTIONS = frozenset(
    ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
)
ATTENTION = "scaled_dot_product_attention"


# A size as Dynamo traced it: a number, or a sympy expression of the inputs' symbols (torch brings
# sympy; the worker reaches it only through the expressions torch hands it).
Expression = Any


class NotElidable(Exception):
    """The graph's outputs cannot be told without running it: it runs exactly."""


def _hint(size: Any) -> int:
    if isinstance(size, int):
        return size
    hint = getattr(getattr(size, "node", None), "hint", None)
    return int(hint) if hint is not None else UNKNOWN_SIZE


def _shape(value: Any) -> list[int]:
    return [_hint(size) for size in value.shape] if isinstance(value, torch.Tensor) else []


def _numel(value: Any) -> int:
    leaves, _ = tree_flatten(value)
    return sum(math.prod(_shape(leaf)) for leaf in leaves if isinstance(leaf, torch.Tensor))


def _operation(node: torch.fx.Node) -> str:
    if node.op == "call_method":
        return str(node.target)
    if node.op == "call_module":
        return ""
    return str(getattr(node.target, "__name__", ""))


def _example(argument: Any) -> Any:
    return argument.meta.get("example_value") if isinstance(argument, torch.fx.Node) else None


def _einsum_contracted(node: torch.fx.Node) -> int:
    equation = node.args[0] if node.args else None
    operands = node.args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str) or "->" not in equation or "." in equation:
        return 1
    inputs, output = equation.replace(" ", "").split("->")
    sizes: dict[str, int] = {}
    for letters, operand in zip(inputs.split(","), operands, strict=False):
        for letter, size in zip(letters, _shape(_example(operand)), strict=False):
            sizes[letter] = size
    return math.prod(size for letter, size in sizes.items() if letter not in output)


def _contracted(node: torch.fx.Node, module: Any) -> int:
    """How many multiply-adds each output element of ``node`` costs (1 for an elementwise one)."""
    if module is not None:  # a module Dynamo kept as a call rather than inlining it
        weight = getattr(module, "weight", None)
        if isinstance(weight, torch.Tensor) and weight.dim() >= 2:
            return weight[0].numel()
        return 1
    name = _operation(node)
    arguments = [_example(argument) for argument in node.args]
    if name == "einsum":
        return _einsum_contracted(node)
    if name in MATRIX_PRODUCTS:
        first = arguments[1] if name.startswith(("addmm", "baddbmm", "addbmm")) else arguments[0]
        shape = _shape(first) if len(arguments) > 0 else []
        return shape[-1] if shape else 1
    if name in CONVOLUTIONS and len(arguments) > 1:
        shape = _shape(arguments[1])
        return math.prod(shape[1:]) if shape else 1
    if name == ATTENTION and len(arguments) > 2:
        keys = _shape(arguments[1])
        return 2 * keys[-2] if len(keys) >= 2 else 1
    return 1


def work(gm: torch.fx.GraphModule) -> int:
    """Roughly how many element-operations one call of ``gm`` computes."""
    total = 0
    for node in gm.graph.nodes:
        if node.op not in ("call_function", "call_method", "call_module"):
            continue
        module = gm.get_submodule(str(node.target)) if node.op == "call_module" else None
        total += _numel(node.meta.get("example_value")) * max(_contracted(node, module), 1)
    return total


def elided(gm: torch.fx.GraphModule, limit: int = WORK_LIMIT) -> tuple[ElidedGraph | None, int, str]:
    """How ``gm`` runs: without computing (its ``ElidedGraph``) where one call computes more than
    ``limit`` element-operations and its outputs can be told without running it, else exactly (None);
    with its work, and why it is computed where it is."""
    cost = work(gm)
    if cost <= limit:
        return None, cost, "cheap"
    try:
        return ElidedGraph(gm), cost, ""
    except NotElidable as why:
        return None, cost, str(why)


# -- outputs without computing them ----------------------------------------------------


def _zeros(
    size: Sequence[int], stride: Sequence[int], offset: int, dtype: torch.dtype, device: Any
) -> torch.Tensor:
    """A tensor of this layout holding zeros; a large one in memory the system zero-fills lazily."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    extent = 0 if 0 in size else offset + 1 + sum((s - 1) * st for s, st in zip(size, stride, strict=True))
    if torch.device(device).type != "cpu" or extent * itemsize < LAZY_BYTES:
        storage = torch.zeros(max(extent, 1), dtype=dtype, device=device).untyped_storage()
    else:
        storage = torch.frombuffer(mmap.mmap(-1, extent * itemsize), dtype=torch.uint8).untyped_storage()
    return torch.empty(0, dtype=dtype, device=device).set_(storage, offset, size, stride)


def _expression(size: Any) -> Expression:
    if isinstance(size, int):
        return size
    node = getattr(size, "node", None)
    expression = getattr(node, "expr", None)
    if expression is None:
        raise NotElidable(f"a size of no expression: {size!r}")
    return expression


@dataclass(frozen=True)
class _Layout:
    """One tensor output: its layout as expressions of the inputs' sizes, and where its storage is."""

    size: tuple[Expression, ...]
    stride: tuple[Expression, ...]
    offset: Expression
    dtype: torch.dtype
    device: torch.device
    requires_grad: bool
    view_of: int | None  # the input whose storage it views, if it views one


class ElidedGraph:
    """Calls of a graph answered with outputs of the traced layouts, zeros inside, never computed.

    Raises ``NotElidable`` for a graph whose outputs only its run can tell: a size no input gives
    (a data-dependent one), an output that is no tensor or number, outputs sharing storage.
    """

    def __init__(self, gm: torch.fx.GraphModule) -> None:
        placeholders = [node for node in gm.graph.nodes if node.op == "placeholder"]
        output = next(node for node in gm.graph.nodes if node.op == "output")
        leaves, self.spec = tree_flatten(output.args[0])
        # Each input symbol, by where a call's arguments give its value: (argument, what of it).
        self.symbols: dict[Any, tuple[int, str, int]] = {}
        storages: dict[int, int] = {}  # each input's storage, by its C pointer, as torch tells them
        for index, node in enumerate(placeholders):
            value = node.meta.get("example_value")
            if isinstance(value, torch.SymInt):
                self._bind(value, index, "value", 0)
            elif isinstance(value, torch.Tensor):
                for dim, size in enumerate(value.shape):
                    self._bind(size, index, "size", dim)
                for dim, stride in enumerate(value.stride()):
                    self._bind(stride, index, "stride", dim)
                self._bind(value.storage_offset(), index, "offset", 0)
                storages.setdefault(value.untyped_storage()._cdata, index)
        self.outputs: list[_Layout | Any] = []
        seen: set[int] = set()
        for leaf in leaves:
            value = _example(leaf) if isinstance(leaf, torch.fx.Node) else leaf
            if isinstance(value, torch.Tensor):
                if type(value).__name__ != "FakeTensor" or value.layout != torch.strided:
                    raise NotElidable(f"an output of type {type(value).__name__}, layout {value.layout}")
                storage = value.untyped_storage()._cdata
                view_of = storages.get(storage)
                if view_of is None:
                    if storage in seen:
                        raise NotElidable("outputs sharing their storage")
                    seen.add(storage)
                layout = _Layout(
                    size=tuple(_expression(size) for size in value.shape),
                    stride=tuple(_expression(stride) for stride in value.stride()),
                    offset=_expression(value.storage_offset()),
                    dtype=value.dtype,
                    device=value.device,
                    requires_grad=value.requires_grad,
                    view_of=view_of,
                )
                self._check_bound(layout)
                self.outputs.append(layout)
            elif isinstance(value, torch.SymInt):
                expression = _expression(value)
                self._check_bound_expression(expression)
                self.outputs.append(expression)
            elif value is None or isinstance(value, (int, float, bool)):
                self.outputs.append(value)
            else:
                raise NotElidable(f"an output of type {type(value).__name__}")
        self.differentiable = any(isinstance(o, _Layout) and o.requires_grad for o in self.outputs)

    def _bind(self, size: Any, index: int, what: str, dim: int) -> None:
        expression = getattr(getattr(size, "node", None), "expr", None)
        if getattr(expression, "is_Symbol", False) and expression not in self.symbols:
            self.symbols[expression] = (index, what, dim)

    def _check_bound_expression(self, expression: Expression) -> None:
        if isinstance(expression, int):
            return
        unbound = [symbol for symbol in expression.free_symbols if symbol not in self.symbols]
        if unbound:
            raise NotElidable(f"a size only the graph's run tells ({expression})")

    def _check_bound(self, layout: _Layout) -> None:
        for expression in (*layout.size, *layout.stride, layout.offset):
            self._check_bound_expression(expression)

    def _values(self, arguments: Sequence[Any]) -> dict[Any, int]:
        values = {}
        for symbol, (index, what, dim) in self.symbols.items():
            argument = arguments[index]
            if what == "value":
                values[symbol] = int(argument)
            elif what == "size":
                values[symbol] = argument.shape[dim]
            elif what == "stride":
                values[symbol] = argument.stride(dim)
            else:
                values[symbol] = argument.storage_offset()
        return values

    def __call__(self, *arguments: Any) -> Any:
        values = self._values(arguments) if self.symbols else {}

        def evaluate(expression: Expression) -> int:
            return expression if isinstance(expression, int) else int(expression.xreplace(values))

        def make(layout: _Layout) -> torch.Tensor:
            size = [evaluate(e) for e in layout.size]
            stride = [evaluate(e) for e in layout.stride]
            return _zeros(size, stride, evaluate(layout.offset), layout.dtype, layout.device)

        made: list[Any] = [None] * len(self.outputs)
        fresh = [i for i, o in enumerate(self.outputs) if isinstance(o, _Layout) and o.view_of is None]
        inputs = [a for a in arguments if isinstance(a, torch.Tensor)]
        if self.differentiable and torch.is_grad_enabled() and any(a.requires_grad for a in inputs):
            differentiable = [self.outputs[i].requires_grad for i in fresh]

            def make_all() -> list[torch.Tensor]:
                return [make(self.outputs[i]) for i in fresh]

            tensors = _Elided.apply(make_all, differentiable, *inputs)  # type: ignore[no-untyped-call]
        else:
            tensors = [make(self.outputs[i]) for i in fresh]
            for index, tensor in zip(fresh, tensors, strict=True):
                if self.outputs[index].requires_grad and torch.is_grad_enabled():
                    tensor.requires_grad_(
                        True
                    )  # a leaf the graph made, as torch.ones(..., requires_grad=True)
        for index, tensor in zip(fresh, tensors, strict=True):
            made[index] = tensor
        for index, output in enumerate(self.outputs):
            if isinstance(output, _Layout) and output.view_of is not None:
                base = arguments[output.view_of]
                made[index] = base.as_strided(
                    [evaluate(e) for e in output.size],
                    [evaluate(e) for e in output.stride],
                    evaluate(output.offset),
                )
            elif not isinstance(output, _Layout):
                made[index] = (
                    output if output is None or isinstance(output, (int, float, bool)) else evaluate(output)
                )
        return tree_unflatten(made, self.spec)


class _Elided(torch.autograd.Function):
    """The autograd history of elided outputs: their gradients flow to the inputs as zeros."""

    @staticmethod
    def forward(
        ctx: Any, make: Callable[[], list[torch.Tensor]], differentiable: list[bool], *inputs: torch.Tensor
    ) -> Any:
        ctx.set_materialize_grads(False)  # an output nobody differentiates gets no zeros of its size
        ctx.inputs = inputs
        outputs = make()
        ctx.mark_non_differentiable(*(o for o, d in zip(outputs, differentiable, strict=True) if not d))
        return tuple(outputs)

    @staticmethod
    def backward(ctx: Any, *gradients: Any) -> Any:
        needed = ctx.needs_input_grad[2:]
        return (
            None,
            None,
            *(_zero_gradient(i) if need else None for i, need in zip(ctx.inputs, needed, strict=True)),
        )


def _zero_gradient(tensor: torch.Tensor) -> torch.Tensor | None:
    """A zero gradient for ``tensor``; none where adding it would change nothing: a parameter that
    already has a gradient, and no hook that wants to see each one (accumulating a 124M-parameter
    model's zeros forty times a step costs seconds)."""
    hooked = getattr(tensor, "_backward_hooks", None) or getattr(tensor, "_post_accumulate_grad_hooks", None)
    if tensor.is_leaf and tensor.grad is not None and not hooked:
        return None
    shape = tuple(tensor.shape)
    return _zeros(shape, _contiguous(shape), 0, tensor.dtype, tensor.device)


def _contiguous(shape: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return strides[::-1]
