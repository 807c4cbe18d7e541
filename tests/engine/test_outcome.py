"""What the analysis records of what the program does, for the proofs of fixes: what its calls of
compiled functions return and what it prints, the same in every analysis of it, and the same as the
program run eagerly without gbls (both seeded alike)."""

from __future__ import annotations

import torch

from ..support import FIXTURES
from ..support.meaning import eager_run
from ..support.worker import Analyse

UNSEEDED = FIXTURES / "outcome" / "unseeded.py"


def numbers(value: torch.Tensor) -> list[float]:
    return [float(number) for number in value.reshape(-1).tolist()]


async def test_two_analyses_record_the_same_and_what_an_eager_run_does(analyse_file: Analyse) -> None:
    first, second = await analyse_file(UNSEEDED), await analyse_file(UNSEEDED)
    assert first.breaks  # the print and Python's RNG in compiled code
    assert first.outcome.recorded and first.outcome == second.outcome
    eager = eager_run(UNSEEDED)
    assert first.outcome.printed == eager.stdout and first.outcome.whole
    # Each call of a compiled function, in order: noisy twice, then the module's forward.
    assert [(r.function, r.call) for r in first.outcome.returns] == [("noisy", 0), ("noisy", 1), ("Head", 0)]
    for returned, value in zip(first.outcome.returns[:2], eager.returns[:2], strict=True):
        assert returned.value[0] == "tensor float32 (3,)"
        assert [float(token) for token in returned.value[1:]] == numbers(value)
    logits = eager.returns[2]["logits"]
    assert first.outcome.returns[2].value == (
        "dict{",
        "'logits'",
        "tensor float32 (2,)",
        *(repr(number) for number in numbers(logits)),
        "'count'",
        "2",
        "}",
    )
