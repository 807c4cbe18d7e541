"""A program that failed once graphs' values were elided runs again, computing every value.

With values elided, compiled code returns zeros of the right shapes: a program that reads them can
fail where ``python`` would not (``torch.multinomial`` over a model's zero probabilities). Such a
failure is not the program's: the analysis runs again with exact values in what is left of the
budget, and says why. The second run's answer is the answer, cut at the budget's end if need be.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..shared.protocol import Request, Result

# What a program does wrong when it reads values: it raises, or exits with an error status.
READ_FAILURES = ("raised", "exit")
LEAST = 1.0  # seconds of budget a second run needs to tell anything


def again(request: Request, result: Result, spent: float) -> Request | None:
    """The request that runs ``request`` again with exact values, if its failure may be elision's."""
    failure = result.failure
    left = request.settings.timeout - spent
    if request.settings.values != "auto" or not result.elided or failure is None or left < LEAST:
        return None
    if failure.kind not in READ_FAILURES:
        return None
    return replace(request, settings=replace(request.settings, values="exact", timeout=left))


def told(request: Request, first: Result, second: Result) -> Result:
    """The second run's result, saying why it ran; its cut, if any, is the whole budget's."""
    failure = first.failure
    assert failure is not None
    where = f" at {os.path.basename(failure.path or request.path)}:{failure.line}" if failure.line else ""
    note = (
        f"with the values of costly graphs elided (zeros of the right shapes), the program failed{where}: "
        f"{failure.message}; gbls ran it again computing every value, and this is that run's answer"
    )
    cut = replace(second.cut, seconds=request.settings.timeout) if second.cut is not None else None
    return replace(
        second, notes=(note, *second.notes), cut=cut, seconds=round(first.seconds + second.seconds, 3)
    )
