"""Pieces of the capture that need no analysis run: the text fallback and the merge of root causes."""

from __future__ import annotations

import json
import os

import pytest
import torch._dynamo.exc as dynamo_exc

from gbls.worker.capture import NESTED_BREAK_SEPARATOR, base_name, parse_break_text
from gbls.worker.merge import merge

REGISTRY = os.path.join(os.path.dirname(dynamo_exc.__file__), "graph_break_registry.json")


def registry_entries() -> list[tuple[str, dict[str, object]]]:
    with open(REGISTRY) as handle:
        registry = json.load(handle)
    return [(gb_id, entries[0]) for gb_id, entries in sorted(registry.items())]


@pytest.mark.parametrize("gb_id, entry", registry_entries()[::25])
def test_text_fallback_reads_what_dynamo_formats(gb_id: str, entry: dict[str, object]) -> None:
    """For torch without the structured hook, the formatted text alone gives the same fields."""
    hints = [str(hint) for hint in entry["Hints"]] or ["First hint", "A second\\nhint over two lines"]  # type: ignore[attr-defined]
    explanation = str(entry["Explanation"]) + "\\nsecond line of the explanation"
    text = dynamo_exc.format_graph_break_message(str(entry["Gb_type"]), "ctx: Variable()", explanation, hints)
    parsed = parse_break_text(text)
    # Text loses only the whitespace at the ends of each field.
    assert parsed == {
        "gb_type": str(entry["Gb_type"]).strip(),
        "context": "ctx: Variable()",
        "explanation": explanation.strip(),
        "hints": [hint.strip() for hint in hints],
    }, gb_id


def test_nested_breaks_split_into_their_messages() -> None:
    inner = dynamo_exc.format_graph_break_message("Failed to trace builtin operator", "print", "print x", [])
    outer = dynamo_exc.format_graph_break_message("graph break in loop", "frame skipped", "loop", ["h"])
    parts = (inner + NESTED_BREAK_SEPARATOR + outer).split(NESTED_BREAK_SEPARATOR)
    assert [parse_break_text(part)["gb_type"] for part in parts] == [
        "Failed to trace builtin operator",
        "graph break in loop",
    ]


def test_resume_functions_map_back() -> None:
    assert base_name("torch_dynamo_resume_in_forward_at_12") == "forward"
    assert base_name("forward") == "forward"


def _target(number: int, qualname: str) -> dict[str, object]:
    return {
        "event": "target", "target": number, "name": qualname, "qualname": qualname, "path": "/f.py",
        "line": 1, "kind": "function", "fullgraph": False, "call_path": "/f.py", "call_line": 1, "attempt": 0,
    }  # fmt: skip


def _break(number: int, compile_id: str, direct: bool, chain: list[list[object]]) -> dict[str, object]:
    message = {"gb_type": "T", "context": "", "explanation": "", "hints": [], "gb_id": "GB0001", "url": None}
    return {
        "event": "break", "target": number, "compile_id": compile_id, "direct": direct, "skipped": False,
        "messages": [message], "chain": chain, "attempt": 0,
    }  # fmt: skip


def test_merge_keeps_one_root_cause_and_counts_compilations() -> None:
    full = [["/f.py", "g", 9, 4, 10], ["/f.py", "mid", 5, 4, 12], ["/f.py", "helper", 2, 4, 9]]
    events = [
        _target(0, "g"),
        _break(0, "0/0", True, full),
        _break(0, "0/0", True, full),  # the restarted analysis of the same compilation
        _break(0, "1/0", False, full),  # mid re-entered as a frame of its own
        _break(0, "2/0", False, full[2:]),  # helper re-entered, its caller out of sight
        _break(0, "0/1", True, full),  # a recompile of g
    ]
    _, breaks, _ = merge(events, "/f.py")
    (only,) = breaks
    assert [frame.function for frame in only.chain] == ["g", "mid", "helper"]
    assert only.count == 2


def test_merge_drops_discarded_attempts_and_other_files() -> None:
    events = [
        _target(0, "g"),
        dict(_break(0, "0/0", True, [["/f.py", "g", 3, 0, 5]]), attempt=1),
        {"event": "discard", "attempt": 1},
        dict(_target(1, "elsewhere"), path="/other.py", call_path="/other.py"),
        _break(1, "1/0", True, [["/other.py", "elsewhere", 3, 0, 5]]),
    ]
    functions, breaks, _ = merge(events, "/f.py")
    assert breaks == () and [f.name for f in functions] == ["g"]
