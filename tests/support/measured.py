"""What Dynamo measured, taken out of what gbls says: translation times differ from run to run."""

from __future__ import annotations

import re
from typing import Any

# The JSON's measured fields: times, and the sentence that totals them.
MEASURED = ("seconds", "backend_seconds", "restart_seconds", "cost")


def unmeasured(value: Any) -> Any:
    """``value`` without what Dynamo measured: a JSON document's times, a code lens's."""
    if isinstance(value, str):
        return re.sub(r" · translated in [\d.]+ s", "", value)
    if isinstance(value, dict):
        return {key: unmeasured(item) for key, item in value.items() if key not in MEASURED}
    if isinstance(value, list):
        return [unmeasured(item) for item in value]
    return value
