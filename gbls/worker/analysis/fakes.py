"""The fake implementations of the workspace's custom ops, held to what the ops return.

The analysis runs each graph as Dynamo made it (``Capture.backend``), not as inductor compiles it,
so a custom op's fake (``register_fake``) shapes only the graph's metadata there: a wrong one goes
unnoticed, where inductor's code asserts the real result's sizes, and reads a result of another
dtype as the fake's. A graph that calls an op of the workspace (``torch.library.custom_op`` on a
function of a file outside torch and the installed packages, or an op whose fake such a file
registered) runs here with each such call's result checked against its fake: one that differs
raises, as inductor's assertion would. So a fix that wraps a function as a custom op, or registers
an op's fake, is proven only with a fake that holds on the analysed inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.fx
from torch.utils._pytree import tree_leaves

from ..shared.workspace import installed
from .frames import is_user_file
from .values import describe_value


def _workspace_op(target: Any) -> bool:
    """Whether ``target`` is an op of the workspace's (or its overload): a custom op made of a workspace
    file's function, or an op whose fake a workspace file registered."""
    if isinstance(target, torch._ops.OpOverload):
        name = target._schema.name
    elif isinstance(target, torch._ops.OpOverloadPacket):  # ``torch.ops.ns.name(x)``, called as such
        name = target._qualified_op_name
    else:
        return False
    return _user_code(_custom_op_function(name)) or _user_code(_fake_registered_at(name))


def _custom_op_function(name: str) -> str:
    """The file of the function ``torch.library.custom_op`` made the op ``name`` of, if it made it."""
    try:
        from torch._library.custom_ops import OPDEFS
    except ImportError:  # a torch without torch.library.custom_op
        return ""
    definition = OPDEFS.get(name)
    code = getattr(getattr(definition, "_init_fn", None), "__code__", None)
    return code.co_filename if code is not None else ""


def _fake_registered_at(name: str) -> str:
    """The file that registered the fake of the op ``name`` (``register_fake``), if one did."""
    try:
        from torch._library.simple_registry import singleton
    except ImportError:
        return ""
    # As torch's fake tensors look it up for each op they run.
    kernel = singleton.find(name).fake_impl.kernel
    source = getattr(kernel, "source", "") if kernel is not None else ""
    return source.rpartition(":")[0] if isinstance(source, str) else ""


def _user_code(path: str) -> bool:
    return bool(path) and is_user_file(path) and not installed(path)


def _differs(fake: Any, real: Any) -> bool:
    if isinstance(fake, torch.Tensor) != isinstance(real, torch.Tensor):
        return True
    if not isinstance(fake, torch.Tensor):
        return False  # a number: the fake's may be symbolic, any value holds
    if fake.dtype != real.dtype or fake.dim() != real.dim():
        return True
    # A symbolic size (dynamic shapes) holds for any size it was traced for: only a number is checked.
    return any(type(size) is int and size != got for size, got in zip(fake.shape, real.shape, strict=True))


class _Checking(torch.fx.Interpreter):
    def __init__(self, gm: torch.fx.GraphModule, checked: set[torch.fx.Node]) -> None:
        super().__init__(gm)
        self.checked = checked

    def run_node(self, n: torch.fx.Node) -> Any:
        result = super().run_node(n)
        if n in self.checked:
            fake, real = tree_leaves(n.meta.get("example_value")), tree_leaves(result)
            if len(fake) != len(real) or any(_differs(f, r) for f, r in zip(fake, real, strict=False)):
                raise RuntimeError(
                    f"the fake implementation of the custom op {n.target} (its register_fake) says it "
                    f"returns {describe_value(n.meta.get('example_value'))}, and it returned "
                    f"{describe_value(result)}: compiled by inductor, it would fail or read the wrong values"
                )
        return result


def checked_forward(gm: torch.fx.GraphModule) -> Callable[..., Any]:
    """How the analysis runs ``gm``: as it is, or, where it calls ops of the workspace, checking them."""
    calls = {n for n in gm.graph.nodes if n.op == "call_function" and _workspace_op(n.target)}
    if not calls or not all("example_value" in n.meta for n in calls):
        return gm.forward
    return lambda *args: _Checking(gm, calls).run(*args)
