"""Dynamo's variable trackers, read and made by the capture without building or guarding anything.

A tracker Dynamo has not built yet (a ``LazyVariableTracker``: an argument no code has read) is
built, with the guards on it, the moment anything asks it a question it does not answer itself;
what gbls reads of Dynamo's state must not be such a question. Every tracker answers
``is_realized`` and ``unwrap``, and a lazy one ``peek_value``, on every torch gbls supports (2.6+).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch._dynamo.symbolic_convert as symbolic_convert
from torch._dynamo.variables.base import VariableTracker
from torch._dynamo.variables.misc import LambdaVariable

from . import patches

# What ``fold_builtins`` gives a builtin for an argument Dynamo has no constant of (a tensor).
NOT_CONSTANT = object()


def peek(variable: Any) -> Any:
    """The object a variable tracker stands for (its ``value``), read as it is: a lazy tracker
    gives the original object unbuilt (building it would guard on it: a list's type, length and
    items), a built one its ``value`` attribute, never a property that computes one (a list's
    ``value`` needs its items to be constants); None where it has none."""
    if variable is None:
        return None
    if not variable.is_realized():
        return variable.peek_value()
    return vars(variable.unwrap()).get("value")


def fold_builtins(folds: Mapping[str, Callable[[Any], Any]]) -> None:
    """Dynamo calls each of these builtins, by name, at trace time on the constant it is given
    (``NOT_CONSTANT`` if it is none) instead of tracing it: what it returns is a constant of the
    graph, or its argument itself if it returns that, and nothing guards the builtin (a traced
    builtin is guarded by its ``__code__``, and so is each builtin it calls). Every translator loads
    a name its globals lack through ``load_builtin`` (2.6+)."""
    translator = symbolic_convert.InstructionTranslatorBase
    original = vars(translator)["load_builtin"]

    def load_builtin(self: Any, inst: Any) -> Any:
        fold = folds.get(inst.argval)
        if fold is None:
            return original(self, inst)

        def call(argument: Any) -> Any:
            value = argument.as_python_constant() if argument.is_python_constant() else NOT_CONSTANT
            folded = fold(value)
            return argument if folded is value else VariableTracker.build(self, folded)

        self.push(_Folded(call, inst.argval))
        return None

    patches.replace(translator, "load_builtin", load_builtin)


class _Folded(LambdaVariable):
    """A folded builtin. Left on the stack at a graph break (in the middle of its own argument's
    evaluation), it is loaded again by its name in the code that resumes there."""

    def __init__(self, fn: Callable[..., Any], builtin: str, **kwargs: Any) -> None:
        super().__init__(fn, **kwargs)
        self.builtin = builtin

    def reconstruct(self, codegen: Any) -> None:
        codegen.append_output(codegen.create_load_global(self.builtin, add=True))
