"""Pieces of the capture that need no analysis run: the text fallback and the merge of root causes."""

from __future__ import annotations

import json
import os

import pytest
import torch._dynamo.exc as dynamo_exc

from gbls.worker import events
from gbls.worker.capture import NESTED_BREAK_SEPARATOR, base_name, parse_break_text
from gbls.worker.events import BreakEvent, DiscardEvent, Event, TargetEvent
from gbls.worker.merge import merge
from gbls.worker.protocol import Frame, Message, ProtocolError

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
    assert parsed == Message(
        gb_type=str(entry["Gb_type"]).strip(),
        context="ctx: Variable()",
        explanation=explanation.strip(),
        hints=tuple(hint.strip() for hint in hints),
    ), gb_id


def test_nested_breaks_split_into_their_messages() -> None:
    inner = dynamo_exc.format_graph_break_message("Failed to trace builtin operator", "print", "print x", [])
    outer = dynamo_exc.format_graph_break_message("graph break in loop", "frame skipped", "loop", ["h"])
    parts = (inner + NESTED_BREAK_SEPARATOR + outer).split(NESTED_BREAK_SEPARATOR)
    assert [parse_break_text(part).gb_type for part in parts] == [
        "Failed to trace builtin operator",
        "graph break in loop",
    ]


def test_resume_functions_map_back() -> None:
    assert base_name("torch_dynamo_resume_in_forward_at_12") == "forward"
    assert base_name("forward") == "forward"


def _target(number: int, qualname: str, path: str = "/f.py") -> TargetEvent:
    return TargetEvent(
        target=number, name=qualname, qualname=qualname, path=path, line=1, call_path=path, call_line=1
    )


def _break(number: int, compile_id: str, direct: bool, chain: list[Frame], attempt: int = 0) -> BreakEvent:
    message = Message("T", "", "", (), "GB0001")
    return BreakEvent(
        attempt=attempt,
        target=number,
        compile_id=compile_id,
        direct=direct,
        messages=(message,),
        chain=tuple(chain),
    )


def test_merge_keeps_one_root_cause_and_counts_compilations() -> None:
    full = [Frame("/f.py", "g", 9, 4, 10), Frame("/f.py", "mid", 5, 4, 12), Frame("/f.py", "helper", 2, 4, 9)]
    events: list[Event] = [
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
    events: list[Event] = [
        _target(0, "g"),
        _break(0, "0/0", True, [Frame("/f.py", "g", 3, 0, 5)], attempt=1),
        DiscardEvent(attempt=1),
        _target(1, "elsewhere", path="/other.py"),
        _break(1, "1/0", True, [Frame("/other.py", "elsewhere", 3, 0, 5)]),
    ]
    functions, breaks, _ = merge(events, "/f.py")
    assert breaks == () and [f.name for f in functions] == ["g"]


def test_events_cross_the_pipe_and_come_back_checked() -> None:
    event = _break(0, "0/1", True, [Frame("/f.py", "g", 3, 0, 5)], attempt=2)
    assert events.decode(events.encode(event).rstrip(b"\n")) == event
    forged = json.loads(events.encode(event))
    forged["chain"][0]["line"] = "three"
    with pytest.raises(ProtocolError, match=r"Frame\.line: expected int"):
        events.decode(json.dumps(forged).encode())
    for line in (b"not json", b'{"event": "nonsense"}', b"[1, 2]", b'{"event": "break", "messages": 7}'):
        with pytest.raises(ProtocolError):
            events.decode(line)


class Loud:
    """A user object whose repr and len raise: describing an input must never call them."""

    def __repr__(self) -> str:
        raise RuntimeError("repr called")

    def __len__(self) -> int:
        raise RuntimeError("len called")


class LoudInt(int):
    def __repr__(self) -> str:
        raise RuntimeError("repr called")


def test_inputs_are_described_without_running_the_programs_code() -> None:
    import torch

    from gbls.worker.capture import describe_value

    batch = {"input_ids": torch.zeros(2, 8, dtype=torch.long), "mask": None, "sizes": [1, 2.5, "a"]}
    assert describe_value(batch) == "{'input_ids': i64[2, 8], 'mask': None, 'sizes': [1, 2.5, 'a']}"
    assert describe_value((torch.randn(3),)) == "(f32[3],)"
    assert describe_value(list(range(6))) == "[0, 1, 2, 3, … 2 more]"
    assert (describe_value(Loud()), describe_value(LoudInt(3)), describe_value([Loud()])) == (
        "Loud",
        "LoudInt",
        "[Loud]",
    )
