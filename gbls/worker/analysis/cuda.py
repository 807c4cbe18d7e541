"""CUDA mapped to the CPU for an analysis that cannot use CUDA; the GPU, capped, for one that can.

Dynamo's breaks depend on the program's Python and on its tensors' metadata, almost never on their
device: code written for CUDA is analysed on the CPU when CUDA cannot be used here (no GPU, or the
GPU hidden by the sandbox). The workspace's code is rewritten before it is compiled, each new node
where the old one stood, so that no line or column moves: the device strings ``"cuda"``,
``"cuda:N"`` (``f"cuda:{rank}"``, ``"cuda:" + str(rank)``, ...) become ``"cpu"``, ``.cuda(...)``
becomes ``.cpu()``, ``.is_cuda`` ``.is_cpu``, and ``.pin_memory()`` its tensor (pinning is for
copies to a GPU). Tensors, modules, the default device and autocast follow; library code follows
its inputs' device. The code Dynamo translates is then the program as written for the CPU, with
the same breaks and the same guards. Patching torch at run time would change what Dynamo sees:
it traces a TorchFunctionMode's ``__torch_function__`` and guards on the mode's globals, and it
guards a Python wrapper of ``torch.zeros`` by its ``__code__`` where it guards the builtin by id.

What needs a GPU (everything in ``torch.cuda`` but the questions about CUDA, seeding, emptying the
cache and ``torch.cuda.amp``, which run as written) is not run: a call that stands alone as a
statement (``torch.cuda.synchronize()``) is left out, and one whose value is used
(``torch.cuda.Stream()``, ``torch.cuda.memory_allocated()``) gives ``Unavailable``. Each such call
of the analysed file is reported on its line as not checkable here. ``torch.cuda.is_available()``
still answers what it would.
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from collections.abc import Iterator
from typing import TypeVar

import torch

from ..shared.protocol import CudaOnly, Device

Node = TypeVar("Node", bound=ast.AST)
# The name a CUDA-only call whose value is used is replaced by: a builtin, so that every module has it.
PLACEHOLDER = "__gbls_no_cuda__"
DEVICE = re.compile(r"cuda(:\d+)?")
# torch.cuda's names that run without a GPU and answer truthfully there.
RUN_WITHOUT_GPU = frozenset(
    {"is_available", "device_count", "is_initialized", "is_bf16_supported"}
    | {"manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "amp"}
)


def why_mapped(device: Device) -> str:
    """Why CUDA is mapped to the CPU in this analysis, or "" if the analysis uses the GPU."""
    if device == "cpu":
        return 'the device setting is "cpu"'
    if torch.cuda.is_available():
        return ""
    if device == "cuda":
        return 'the device setting is "cuda", but torch.cuda.is_available() is False here'
    return (
        "torch.cuda.is_available() is False here (no GPU, or the sandbox hides it: the device "
        'setting "cuda" analyses on the GPU)'
    )


def cap_gpu_memory(memory_mb: int) -> None:
    """Let this analysis allocate at most ``memory_mb`` on each GPU. What it allocated is freed when
    its process ends, as every analysis's process does; the warm worker never initializes CUDA."""
    for index in range(torch.cuda.device_count()):
        total = torch.cuda.get_device_properties(index).total_memory
        torch.cuda.set_per_process_memory_fraction(min(1.0, memory_mb * 2**20 / total), index)


class Unavailable:
    """The value of a CUDA-only call gbls did not run: any call, attribute, index or ``with`` of it
    gives it again, and it is 0 where a number is needed, so that the code around it (timing with
    events, memory statistics, streams) goes on."""

    def __call__(self, *args: object, **kwargs: object) -> Unavailable:
        return self

    def __getattr__(self, name: str) -> Unavailable:
        if name.startswith("__"):  # copy, pickle and the like ask for protocols it does not have
            raise AttributeError(name)
        return self

    def __getitem__(self, key: object) -> Unavailable:
        return self

    def __enter__(self) -> Unavailable:
        return self

    def __exit__(self, *exception: object) -> None:
        return None

    def __iter__(self) -> Iterator[object]:
        return iter(())

    def __bool__(self) -> bool:
        return False

    def __index__(self) -> int:
        return 0

    def __float__(self) -> float:
        return 0.0

    def __format__(self, spec: str) -> str:
        return format(0, spec) if spec else repr(self)

    def __repr__(self) -> str:
        return "<not run: needs CUDA>"

    def _zero(self, other: object) -> int:
        return 0

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _zero
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __pow__ = _zero

    def __lt__(self, other: int | float) -> bool:
        return 0 < other

    def __le__(self, other: int | float) -> bool:
        return 0 <= other

    def __gt__(self, other: int | float) -> bool:
        return 0 > other

    def __ge__(self, other: int | float) -> bool:
        return 0 >= other


class ToCpu:
    """The mapping of one analysis: compiles workspace sources with CUDA mapped to the CPU."""

    def __init__(self, why: str) -> None:
        self.why = why
        self.mapped = False  # some code of the program used CUDA, and was mapped

    def install(self) -> ToCpu:
        setattr(builtins, PLACEHOLDER, Unavailable())
        return self

    def compile(self, source: str | bytes, path: str) -> tuple[types.CodeType, list[CudaOnly]]:
        """``source`` compiled as ``compile`` would, CUDA mapped; the CUDA-only calls it left out."""
        if not ("cuda" in source if isinstance(source, str) else b"cuda" in source):
            return compile(source, path, "exec", dont_inherit=True), []
        mapping = _Mapping(ast.parse(source, path))
        tree = mapping.visit(mapping.tree)
        self.mapped = self.mapped or mapping.changed
        return compile(tree, path, "exec", dont_inherit=True), mapping.cuda_only

    def expression(self, source: str) -> types.CodeType:
        """An expression (an example's arguments), CUDA mapped."""
        mapping = _Mapping(ast.parse(source, "<gbls example>", "eval"))
        tree = mapping.visit(mapping.tree)
        self.mapped = self.mapped or mapping.changed
        return compile(tree, "<gbls example>", "eval", dont_inherit=True)

    def note(self) -> str:
        return (
            f"CUDA was mapped to the CPU: {self.why}. What the code puts on CUDA (tensors, modules, the "
            "default device, autocast) is on the CPU, and Dynamo translates the program as written for "
            "the CPU; calls that need a GPU are not run, and each is marked as not checkable here"
        )


class _Mapping(ast.NodeTransformer):
    """One tree's rewrite; ``cuda_only``: the CUDA-only calls it did not keep, in the tree's order."""

    def __init__(self, tree: ast.AST) -> None:
        self.tree = tree
        self.torch = _torch_names(tree)
        self.cuda_only: list[CudaOnly] = []
        self.changed = False

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if isinstance(call, ast.Call) and self._cuda_only(call, skipped=True):
            return self._mapped(ast.Expr(_at(ast.Constant(None), call)), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self._cuda_only(node, skipped=False):
            return self._mapped(ast.Name(PLACEHOLDER, ast.Load()), node)
        if _indexed_cuda(node):
            return self._mapped(ast.Constant("cpu"), node)
        self.generic_visit(node)
        function = node.func
        if not isinstance(function, ast.Attribute):
            return node
        if function.attr == "cuda":
            # Tensor.cpu takes only memory_format; a device index or non_blocking means nothing on the CPU.
            keywords = [keyword for keyword in node.keywords if keyword.arg == "memory_format"]
            cpu = _at(ast.Attribute(function.value, "cpu", ast.Load()), function)
            return self._mapped(ast.Call(cpu, [], keywords), node)
        if function.attr == "pin_memory" and not node.args and not node.keywords:
            self.changed = True
            return function.value
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if node.attr == "is_cuda" and isinstance(node.ctx, ast.Load):
            return self._mapped(ast.Attribute(node.value, "is_cpu", node.ctx), node)
        return node

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and DEVICE.fullmatch(node.value):
            return self._mapped(ast.Constant("cpu"), node)
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        return self._mapped(ast.Constant("cpu"), node) if _indexed_cuda(node) else self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        return self._mapped(ast.Constant("cpu"), node) if _indexed_cuda(node) else self.generic_visit(node)

    def _mapped(self, new: Node, old: ast.AST) -> Node:
        self.changed = True
        return _at(new, old)

    def _cuda_only(self, call: ast.Call, skipped: bool) -> bool:
        """Whether ``call`` needs a GPU; if it does, it is recorded as not run."""
        name = _dotted(call.func, self.torch)
        parts = name.split(".")
        if parts[:2] != ["torch", "cuda"] or len(parts) < 3 or parts[2] in RUN_WITHOUT_GPU:
            return False
        shown = f"{name}({'...' if call.args or call.keywords else ''})"
        end_column = call.end_col_offset or call.col_offset
        self.cuda_only.append(CudaOnly(shown, call.lineno, call.col_offset, end_column, skipped))
        return True


def _torch_names(tree: ast.AST) -> dict[str, str]:
    """The names the code binds to torch and to what is in it: ``import torch as T`` and ``from
    torch.cuda import synchronize as sync`` give ``{"T": "torch", "sync": "torch.cuda.synchronize"}``."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "torch" or alias.name.startswith("torch."):
                    # ``import torch.cuda`` binds ``torch``; ``import torch.cuda as tc`` binds the submodule.
                    names[alias.asname or "torch"] = alias.name if alias.asname else "torch"
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            if node.module == "torch" or node.module.startswith("torch."):
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr, names: dict[str, str]) -> str:
    """``torch.cuda.synchronize`` for ``T.cuda.synchronize`` when ``T`` is torch; "" if not torch's."""
    if isinstance(node, ast.Name):
        return names.get(node.id, "")
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, names)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _indexed_cuda(node: ast.expr) -> bool:
    """A device string built from ``"cuda:"`` and an index: ``f"cuda:{rank}"``, ``"cuda:" + str(rank)``,
    ``"cuda:%d" % rank``, ``"cuda:{}".format(rank)``."""

    def starts(value: ast.expr) -> bool:
        return (
            isinstance(value, ast.Constant)
            and isinstance(value.value, str)
            and value.value.startswith("cuda:")
        )

    if isinstance(node, ast.JoinedStr):
        return (
            len(node.values) == 2
            and starts(node.values[0])
            and isinstance(node.values[1], ast.FormattedValue)
        )
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, (ast.Add, ast.Mod)) and starts(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "format" and starts(node.func.value)
    return False


def _at(new: Node, old: ast.AST) -> Node:
    """``new`` where ``old`` was: the code compiled from it keeps ``old``'s lines and columns."""
    return ast.copy_location(new, old)
