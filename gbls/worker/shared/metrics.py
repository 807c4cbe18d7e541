"""What Dynamo's compilation metrics say a compilation cost, as ``CostEvent``'s fields: read alike
from the live metrics of an analysis and from the metrics records of a real run's trace. Standard
library only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .messages import legacy_gb_type


def measured(field: Callable[[str], Any]) -> dict[str, Any]:
    """The cost in the metrics whose field ``name`` is ``field(name)`` (None when this torch has no
    such field): the whole translation (its backend's part included: Inductor's in a real run), the
    backend's part, the guards, the ops, the restarts (each named as the break it was for is: its
    message's first line, torch 2.6's one line of text by the gb_type later releases give it) and the
    time before them."""

    def number(name: str) -> float:
        value = field(name)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    reasons = field("restart_reasons")
    return {
        "seconds": number("entire_frame_compile_time_s") or number("dynamo_cumulative_compile_time_us") / 1e6,
        "backend_seconds": number("backend_compile_time_s"),
        "guards": int(number("guard_count")),
        "shape_guards": int(number("shape_env_guard_count")),
        "ops": int(number("graph_op_count")),
        "restarts": tuple(
            sorted({named(str(reason).strip().splitlines()[0]) for reason in reasons if str(reason).strip()})
            if isinstance(reasons, list | set | tuple)
            else ()
        ),
        "restart_seconds": number("dynamo_time_before_restart_s"),
    }


def named(reason: str) -> str:
    """A restart's reason as its break's gb_type, named from its text where torch gives only that
    (two of torch 2.6's texts can be one gb_type: one restart, as later releases count it)."""
    return legacy_gb_type(reason) or reason
