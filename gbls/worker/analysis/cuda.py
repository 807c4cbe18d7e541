"""CUDA mapped to the CPU for an analysis that cannot use CUDA; the GPU, capped, for one that can.

Dynamo's breaks depend on the program's Python and on its tensors' metadata, almost never on their
device: code written for CUDA is analysed on the CPU when CUDA cannot be used here (no GPU, or the
GPU hidden by the sandbox). The workspace's code is rewritten before it is compiled, each new node
where the old one stood, so that no line or column moves. What the program says is kept: its
strings (``"cuda"``, ``f"cuda:{rank}"``), its ``torch.device("cuda")`` objects and what it compares
them with mean what they mean on a machine with a GPU, so it takes the branches it takes there.
The device is mapped where it is used: the ``device=`` and ``map_location=`` of any call, the
device of ``.to(...)``, ``torch.set_default_device``, autocast's ``device_type``, ``torch.Generator``,
``with torch.device(...)``, each through ``__gbls_device__``, which gives the CPU for a CUDA device
(``"cpu"`` for a string or an ordinal, ``torch.device("cpu")`` for a device) and anything else as
it is; ``.cuda(...)`` becomes ``.cpu()`` and ``.pin_memory()`` its tensor (pinning is for copies to
a GPU). Tensors, modules, the default device and autocast are then on the CPU, and a tensor says
so: its ``.device`` is the CPU and ``.is_cuda`` is False, as library code, which follows its inputs'
device, sees them. A ``device=`` given to the program's own function is mapped as well: the call
cannot tell it from a library's.

Inside compiled code Dynamo does not trace the mapping's functions: it calls them on the constant
they are given and takes their result as a constant, with no guard on them (``load_builtin`` is
wrapped for their names), so that the guards and the graph are those of the program written for the
CPU. Patching torch at run time instead would change what Dynamo sees: it traces a
TorchFunctionMode's ``__torch_function__`` and guards on the mode's globals. "CUDA was mapped" is
said once the program gave one of them a CUDA device (or called ``.cuda()``), not for code never run.

What needs a GPU (everything in ``torch.cuda`` but the questions about CUDA, seeding, emptying the
cache and ``torch.cuda.amp``, which run as written) is not run: a call that stands alone as a
statement (``torch.cuda.synchronize()``) is left out, and one whose value is used
(``torch.cuda.Stream()``, ``torch.cuda.memory_allocated()``) gives ``Unavailable``; each call of the
analysed file that the program reaches is reported on its line as not checkable here.
``torch.cuda.is_available()`` still answers what it would.
"""

from __future__ import annotations

import ast
import builtins
import re
import types
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch

from ..shared.events import CudaOnlyEvent, Event
from ..shared.protocol import CudaOnly, Device
from . import trackers

Node = TypeVar("Node", bound=ast.AST)
Value = TypeVar("Value")
# The builtins the mapped code calls (builtins, so that every module has them): a device as the CPU's,
# an object the program moves to CUDA (``.cuda()``), a CUDA-only call reached, by its number; and the
# placeholder for a CUDA-only call's value (Dynamo traces it as it traces any object of the program).
DEVICE_NAME, MOVED_NAME, CUDA_ONLY_NAME = "__gbls_device__", "__gbls_moved__", "__gbls_no_cuda__"
PLACEHOLDER = "__gbls_unavailable__"
DEVICE = re.compile(r"cuda(:\d+)?")
# torch.cuda's names that run without a GPU and answer truthfully there.
RUN_WITHOUT_GPU = frozenset(
    {"is_available", "device_count", "is_initialized", "is_bf16_supported"}
    | {"manual_seed", "manual_seed_all", "seed", "seed_all", "empty_cache", "amp"}
)
# What source with nothing to map lacks: a device is mapped where it is used, not only where it is named.
USES = re.compile(r"cuda|device|map_location|autocast|Generator|\.to\b")
USES_BYTES = re.compile(USES.pattern.encode())
# The keywords that name a device in any call, and torch's callables whose first argument is one.
DEVICE_KEYWORDS = frozenset({"device", "map_location"})
DEVICE_FIRST = frozenset(
    {"torch.set_default_device", "torch.autocast", "torch.amp.autocast", "torch.Generator"}
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
    """The mapping of one analysis: compiles workspace sources with CUDA mapped to the CPU, and
    emits each CUDA-only call of ``path`` (the analysed file) the first time the program reaches it."""

    def __init__(self, why: str, path: str, emit: Callable[[Event], None]) -> None:
        self.why = why
        self.path = path
        self.emit = emit
        self.mapped = False  # the program gave the mapping a CUDA device: something was on CUDA
        self.cuda_only: list[tuple[str, CudaOnly]] = []  # by number: where each is, and what
        self.reached: set[int] = set()

    def install(self) -> ToCpu:
        names: dict[str, Callable[[Any], Any]] = {
            DEVICE_NAME: self.device,
            MOVED_NAME: self.moved,
            CUDA_ONLY_NAME: self.not_run,
        }
        for name, function in names.items():
            setattr(builtins, name, function)
        setattr(builtins, PLACEHOLDER, Unavailable())
        trackers.fold_builtins(names)
        return self

    def device(self, value: object) -> object:
        """``value`` as the CPU's device if it is a CUDA one; anything else (a dtype, a tensor,
        the CPU, None) as it is."""
        if not _is_cuda(value):
            return value
        self.mapped = True
        return torch.device("cpu") if isinstance(value, torch.device) else "cpu"

    def moved(self, value: Value) -> Value:
        """What the program moves to CUDA (``.cuda()``), as it is: the CPU's ``.cpu()`` follows."""
        self.mapped = True
        return value

    def not_run(self, number: int) -> None:
        """A CUDA-only call the program reached, which gbls does not run."""
        if number not in self.reached:
            self.reached.add(number)
            path, call = self.cuda_only[number]
            if path == self.path:
                self.emit(CudaOnlyEvent(call=call))

    def compile(self, source: str | bytes, path: str) -> types.CodeType:
        """``source`` compiled as ``compile`` would, CUDA mapped."""
        if not (USES.search(source) if isinstance(source, str) else USES_BYTES.search(source)):
            return compile(source, path, "exec", dont_inherit=True)
        mapping = _Mapping(ast.parse(source, path), self.cuda_only, path)
        tree = ast.fix_missing_locations(mapping.visit(mapping.tree))
        return compile(tree, path, "exec", dont_inherit=True)

    def expression(self, source: str) -> types.CodeType:
        """An expression (an example's arguments), CUDA mapped."""
        mapping = _Mapping(ast.parse(source, "<gbls example>", "eval"), self.cuda_only, "<gbls example>")
        tree = ast.fix_missing_locations(mapping.visit(mapping.tree))
        return compile(tree, "<gbls example>", "eval", dont_inherit=True)

    def note(self) -> str:
        return (
            f"CUDA was mapped to the CPU: {self.why}. What the code puts on CUDA (tensors, modules, the "
            "default device, autocast) is on the CPU, and Dynamo translates the program as written for "
            "the CPU, its comparisons of devices as they are with a GPU; calls that need a GPU are not "
            "run, and each one reached is marked as not checkable here"
        )


class _Mapping(ast.NodeTransformer):
    """One tree's rewrite; the CUDA-only calls it did not keep are numbered in ``cuda_only``."""

    def __init__(self, tree: ast.AST, cuda_only: list[tuple[str, CudaOnly]], path: str) -> None:
        self.tree = tree
        self.torch = _torch_names(tree)
        self.cuda_only = cuda_only
        self.path = path

    def visit_Expr(self, node: ast.Expr) -> ast.AST:
        call = node.value
        if isinstance(call, ast.Call) and self._cuda_only(call, skipped=True):
            return _at(ast.Expr(self._not_run(call)), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        if self._cuda_only(node, skipped=False):  # ``__gbls_no_cuda__(n) or __gbls_unavailable__``
            placeholder = _at(ast.Name(PLACEHOLDER, ast.Load()), node)
            return _at(ast.BoolOp(ast.Or(), [self._not_run(node), placeholder]), node)
        self.generic_visit(node)
        for keyword in node.keywords:
            if keyword.arg in DEVICE_KEYWORDS or (keyword.arg == "device_type" and self._torchs(node)):
                keyword.value = _mapped(keyword.value)
        function = node.func
        first = node.args[0] if node.args and not isinstance(node.args[0], ast.Starred) else None
        if first is not None and (
            (isinstance(function, ast.Attribute) and function.attr == "to")
            or _dotted(function, self.torch) in DEVICE_FIRST
        ):
            node.args[0] = _mapped(first)
        if not isinstance(function, ast.Attribute):
            return node
        if function.attr == "cuda":
            # Tensor.cpu takes only memory_format; a device index or non_blocking means nothing on the CPU.
            keywords = [keyword for keyword in node.keywords if keyword.arg == "memory_format"]
            moved = _at(ast.Call(ast.Name(MOVED_NAME, ast.Load()), [function.value], []), function.value)
            cpu = _at(ast.Attribute(moved, "cpu", ast.Load()), function)
            return _at(ast.Call(cpu, [], keywords), node)
        if function.attr == "pin_memory" and not node.args and not node.keywords:
            return function.value
        return node

    def visit_withitem(self, node: ast.withitem) -> ast.AST:
        self.generic_visit(node)
        used = node.context_expr
        if isinstance(used, ast.Call) and _dotted(used.func, self.torch) == "torch.device":
            node.context_expr = _mapped(used)  # ``with torch.device("cuda"):`` sets the default device
        return node

    def _torchs(self, call: ast.Call) -> bool:
        return _dotted(call.func, self.torch).startswith("torch.")

    def _not_run(self, call: ast.Call) -> ast.Call:
        number = ast.Constant(len(self.cuda_only) - 1)
        return _at(ast.Call(_at(ast.Name(CUDA_ONLY_NAME, ast.Load()), call), [_at(number, call)], []), call)

    def _cuda_only(self, call: ast.Call, skipped: bool) -> bool:
        """Whether ``call`` needs a GPU; if it does, it is numbered as not run."""
        name = _dotted(call.func, self.torch)
        parts = name.split(".")
        if parts[:2] != ["torch", "cuda"] or len(parts) < 3 or parts[2] in RUN_WITHOUT_GPU:
            return False
        shown = f"{name}({'...' if call.args or call.keywords else ''})"
        end_column = call.end_col_offset or call.col_offset
        self.cuda_only.append((self.path, CudaOnly(shown, call.lineno, call.col_offset, end_column, skipped)))
        return True


def _is_cuda(value: object) -> bool:
    """Whether ``value`` names a CUDA device: an ordinal does (``torch.device(0)`` is cuda:0)."""
    if isinstance(value, str):
        return DEVICE.fullmatch(value) is not None
    if isinstance(value, torch.device):
        return value.type == "cuda"
    return type(value) is int and value >= 0


def _mapped(value: ast.expr) -> ast.expr:
    """``__gbls_device__(value)`` where ``value`` was; a literal that is no CUDA device as it is."""
    if isinstance(value, ast.Constant) and not _is_cuda(value.value):
        return value
    return _at(ast.Call(_at(ast.Name(DEVICE_NAME, ast.Load()), value), [value], []), value)


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


def _at(new: Node, old: ast.AST) -> Node:
    """``new`` where ``old`` was: the code compiled from it keeps ``old``'s lines and columns."""
    return ast.copy_location(new, old)
