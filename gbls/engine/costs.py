"""What compiling costs, as Dynamo measured it in the run, said the way a user asks for it.

Each compilation (a compile id) of a compiled function's frames: its translation time, the guards
its compiled code checks on every call, its graphs and ops, the restarts of its translation, why
it happened (the first compilation, a recompilation and what changed, the code after a break) and
whether its graph's values were computed. A function's total says what recompiling cost, and for
what ("forward: 3 compilations, 4.1 s of translation, 2.9 s of it recompiling for grad mode").
"""

from __future__ import annotations

from dataclasses import dataclass

from ..worker.shared.protocol import Break, Cost
from . import words
from .model import FunctionReport, RecompileReport


def seconds(value: float) -> str:
    """``0.27 s``, ``4.1 s``, ``12 s``: two digits, as a user reads a duration."""
    return f"{value:.0f} s" if value >= 10 else f"{value:.2g} s"


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Row:
    """One compilation of a function, and why it happened."""

    cost: Cost
    why: str  # "first compilation", "recompiled for grad mode", "the code after line 6"
    computed: bool  # its graph's values were computed (not elided)

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why Dynamo restarted its translation, in the user's words: torch 2.6 gives a break's one
        line of text, which names the ATen operator a call became (``aten.nonzero.default``)."""
        return tuple(words.said(reason, "") for reason in self.cost.restarts)

    @property
    def restarts(self) -> str:
        """``restarted once: Failed to trace builtin operator``, or ""."""
        reasons = self.reasons
        if not reasons:
            return ""
        times = "once" if len(reasons) == 1 else f"{len(reasons)} times"
        return f"restarted {times}: {'; '.join(reasons)}"


def rows(function: FunctionReport, recompiles: tuple[RecompileReport, ...]) -> list[Row]:
    """Each compilation of ``function``, in order, with why it happened."""
    why = {r.compile_id: found.changed for found in recompiles for r in found.recompiles}
    found = []
    for cost in function.costs:
        if cost.compile_id in why:
            reason = f"recompiled for {why[cost.compile_id]}" if why[cost.compile_id] else "recompiled"
        elif cost.resumes_at is not None:
            reason = f"the code of `{cost.frame}` after line {cost.resumes_at} (a break)"
        elif not cost.own:
            reason = f"`{cost.frame}` called eagerly after a break, compiled on its own"
        else:
            reason = "first compilation"
        found.append(Row(cost, reason, function.computed(cost.compile_id)))
    return found


def summary(function: FunctionReport, recompiles: tuple[RecompileReport, ...]) -> str:
    """``forward: 3 compilations, 4.1 s of translation, 2.9 s of it recompiling for grad mode``; ""
    when Dynamo measured nothing (a log has no metrics)."""
    if not function.costs:
        return ""
    compilations = plural(max(function.compilations, 1), "compilation")
    text = f"`{function.qualname}`: {compilations}, {seconds(function.seconds)} of translation"
    ranked = sorted((r for r in recompiles if r.costs), key=lambda r: -r.seconds)
    if ranked:
        spent = sum(r.seconds for r in ranked)
        reasons = ", ".join(
            f"{seconds(r.seconds)} for {r.changed}" if len(ranked) > 1 else f"for {r.changed}"
            for r in ranked
            if r.changed
        )
        text += f", {seconds(spent)} of it recompiling" + (
            f" {reasons}" if len(ranked) == 1 else f" ({reasons})"
        )
    after = [cost for cost in function.costs if cost.resumes_at is not None]
    if after:
        text += f", {seconds(sum(c.seconds for c in after))} translating the code after its breaks"
    return text


def of_break(brk: Break, costs: tuple[Cost, ...]) -> tuple[Cost, ...]:
    """The compilations a break cost: those Dynamo restarted for it (among its own), and the
    translations of the code after it (the resume functions at the line its graph splits)."""
    split = brk.chain[min(brk.split, len(brk.chain) - 1)]
    return tuple(
        cost
        for cost in costs
        if cost.function == brk.function
        and (
            (cost.compile_id in brk.compile_ids and brk.gb_type in cost.restarts)
            or (cost.resumes_at == split.line and cost.frame == split.function)
        )
    )
