"""Dynamo's text about a break in the user's words.

Dynamo explains a break with its own names: the resume function it runs the rest of a function as
(``torch_dynamo_resume_in_scale_at_7``, in the code a data-dependent branch's condition is computed
by), the ATen operator a data-dependent call became (``aten._local_scalar_dense.default`` for
``np.random.rand()``, ``.item()``, ``float(x)``; ``aten.nonzero.default``). The user wrote a function
and a call: a resume function is its function, resumed after the break at its line, and the
operator is the call at the break's root, as written, else the torch function it is. Its flag for
keyword arguments (``(has_kwargs False)``, after a builtin's argument types) is said, where true.
torch 2.6 and older name a builtin's arguments by Dynamo's class for each (``builtin: print
[<class 'torch._dynamo.variables.constant.ConstantVariable'>] False``): said as later releases say
it, each argument by what it is (``constant``). A function is named as the user wrote it, not as
Python prints it (``<function eager_only at 0x7f0053...>``, an address that differs from run to run).
"""

from __future__ import annotations

import re

from ..worker.shared.frames import RESUME

RESUMED = re.compile(RESUME.pattern.rstrip("$"))
# "Operator `aten.nonzero.default`", or the operator alone (a break's context).
OPERATOR = re.compile(r"(?:Operator )?`?\baten\.(\w+)(?:\.(\w+))?`?")
# The operators whose torch function is not their name.
TORCH_NAMES = {"_local_scalar_dense": "a tensor's value read as a Python number (`.item()`)"}
KEYWORDS = re.compile(r" \(has_kwargs (True|False)\)")
VARIABLE = re.compile(r"<class 'torch\._dynamo\.variables\.(?:\w+\.)*(\w+?)Variable'>")
FUNCTION = re.compile(r"<function ([\w.<>]+) at 0x[0-9a-fA-F]+>")
BUILTIN = re.compile(r"builtin: (\w+) \[([^\]]*)\] (True|False)")


def resumed(text: str) -> str:
    """``torch_dynamo_resume_in_scale_at_7`` as ``scale (resumed after line 7)``."""
    return RESUMED.sub(lambda found: f"{found.group(1)} (resumed after line {found.group(2)})", text)


def operators(text: str, call: str) -> str:
    """Each ATen operator in ``text`` as ``call`` (the code the break's root is, as written), else as
    the torch function it is."""

    def named(found: re.Match[str]) -> str:
        if call:
            return f"`{call}`"
        name = found.group(1)
        return TORCH_NAMES.get(name, f"`torch.{name.lstrip('_')}`")

    return OPERATOR.sub(named, text)


def keywords(text: str) -> str:
    """``(has_kwargs True)`` as ``and keyword arguments``; nothing for ``(has_kwargs False)``."""
    return KEYWORDS.sub(lambda found: " and keyword arguments" if found.group(1) == "True" else "", text)


def builtins(text: str) -> str:
    """torch 2.6's ``builtin: print [<class '...ConstantVariable'>] False`` as later releases say it:
    ``Dynamo does not know how to trace builtin operator `print` with argument types ['constant']``."""

    def kind(found: re.Match[str]) -> str:
        return "'" + re.sub(r"(?<!^)(?=[A-Z])", " ", found.group(1)).lower() + "'"

    def told(found: re.Match[str]) -> str:
        told = f"Dynamo does not know how to trace builtin operator `{found.group(1)}` with argument types"
        return f"{told} [{found.group(2)}]" + (" and keyword arguments" if found.group(3) == "True" else "")

    return BUILTIN.sub(told, VARIABLE.sub(kind, text))


def said(text: str, call: str) -> str:
    """Dynamo's ``text`` about a break with its names as the user wrote them; ``call``: the break's
    root cause as written ("" where Python gives no columns)."""
    return FUNCTION.sub(r"\1", builtins(keywords(operators(resumed(text), call))))
