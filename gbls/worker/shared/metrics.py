"""What Dynamo's compilation metrics say a compilation cost, as ``CostEvent``'s fields: read alike
from the live metrics of an analysis and from the metrics records of a real run's trace. Standard
library only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def measured(field: Callable[[str], Any]) -> dict[str, Any]:
    """The cost in the metrics whose field ``name`` is ``field(name)`` (None when this torch has no
    such field): the whole translation (its backend's part included: Inductor's in a real run), the
    backend's part, the guards, the ops, the restarts (each a break's message: its first line says
    what it is) and the time before them."""

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
            sorted(str(reason).strip().splitlines()[0] for reason in reasons if str(reason).strip())
            if isinstance(reasons, list | set | tuple)
            else ()
        ),
        "restart_seconds": number("dynamo_time_before_restart_s"),
    }
