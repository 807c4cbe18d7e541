"""Pieces of the capture that need no torch: the merge of root causes and recompilations from
synthetic events, the event lines' checks and signatures, and reasons as torch versions print them."""

from __future__ import annotations

import dataclasses
import json
import os

import pytest

from gbls.worker.shared import events, reasons
from gbls.worker.shared.events import BreakEvent, CallEvent, DiscardEvent, Event, FrameEvent, TargetEvent
from gbls.worker.shared.merge import merge
from gbls.worker.shared.protocol import Code, Frame, Guard, Message, ProtocolError, Request

# The merge tests analyse /f.py of the workspace /workspace: other files are neither.
ANALYSED = Request(id="test", path="/f.py", source="", workspace="/workspace")


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
    (only,) = merge(events, ANALYSED).breaks
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
    found = merge(events, ANALYSED)
    assert found.breaks == () and [f.name for f in found.functions] == ["g"]


def test_merge_keeps_the_workspace_s_functions_and_the_library_functions_the_program_called() -> None:
    events: list[Event] = [
        _target(0, "g"),
        _target(1, "helper", path="/workspace/model.py"),  # never called: still the user's
        _target(2, "generate", path="/venv/lib/python3.11/site-packages/lib/up.py"),
        CallEvent(target=2, inputs="", source="module"),
        _break(2, "2/0", True, [Frame("/venv/lib/python3.11/site-packages/lib/up.py", "generate", 9, 4, 9)]),
        _target(3, "unused", path="/venv/lib/python3.11/site-packages/lib/other.py"),  # never called
    ]
    found = merge(events, ANALYSED)
    assert [f.name for f in found.functions] == ["g", "helper", "generate"]
    assert [b.function for b in found.breaks] == ["generate"]


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


def test_an_event_line_is_gbls_s_only_under_its_analysis_key() -> None:
    """The analysed code inherits the event pipe: what it writes there lacks the key's signature."""
    event = _break(0, "0/1", True, [Frame("/f.py", "g", 3, 0, 5)])
    key, other = os.urandom(16), os.urandom(16)
    line = events.encode(event)
    signed = events.sign(key, line).rstrip(b"\n")
    assert events.unsigned(key, signed) == line.rstrip(b"\n")
    tampered = signed.replace(b'"line":3', b'"line":4')
    assert tampered != signed
    for forged, under in ((signed, other), (line.rstrip(b"\n"), key), (tampered, key)):
        with pytest.raises(ProtocolError, match="not signed by gbls"):
            events.unsigned(under, forged)


# Reasons as torch 2.6, 2.8 and 2.13 print them (taken from their TORCH_LOGS=recompiles).
PAD = " " * 40  # torch pads each check to 60 characters before its comment


PICK_2_13 = (
    f"0/0: mode == 'a'{PAD}# if mode == \"a\":  # mp/rc/pick.py:6 in pick"
    '\nUser stack trace:\n  File "/tmp/rc/pick.py", line 6, in pick\n    if mode == "a":'
)


HINT = (
    "torch.compile considers integer attributes of the nn.Module to be static. If you are observing "
    "recompilation, you might want to make this integer dynamic using "
    "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or convert this integer into a tensor."
)


SPECIALIZED = (
    "user code shown is first use of this value--the guard itself is not due user code but due to 0/1 "
    "specialization in the framework; to avoid specialization try "
    "torch._dynamo.decorators.mark_unbacked(tensor, dim)"
)


SYMBOLIC = (
    f"5/1: 2 <= x.size()[0] <= 4  # if x.shape[0] > 4:  # mp/rc/ints.py:43 in branchy ({SPECIALIZED}) and if "
    "x.shape[0] > 4:  # mp/rc/ints.py:43 in branchy (_dynamo/variables/tensor.py:2606 in evaluate_expr)"
)


@pytest.mark.parametrize(
    "reason, expected",
    [
        (PICK_2_13, Guard("mode == 'a'", "0/0", "value", "mode")),
        (f"0/1: L['mode'] == 'b'{PAD}", Guard("mode == 'b'", "0/1", "value", "mode")),
        (
            f"3/0: G['ACT'] == 'relu'{PAD}# if ACT == \"relu\":  # f.py:28 in act",
            Guard("ACT == 'relu'", "3/0", "value", "ACT", is_global=True),
        ),
        (
            f"4/0: self.scale == 2{PAD}# return x * self.scale  # f.py:38 in forward (HINT: {HINT})",
            Guard("self.scale == 2", "4/0", "value", "self.scale", hint=HINT),
        ),
        (
            f"0/0: L['self'].factor == 2{PAD}(HINT: {HINT})",  # torch 2.8
            Guard("self.factor == 2", "0/0", "value", "self.factor", hint=HINT),
        ),
        (
            "0/0: tensor 'L['x']' size mismatch at index 0. expected 2, actual 3",
            Guard("tensor 'x' size mismatch at index 0. expected 2, actual 3", "0/0", "shape", "x"),
        ),
        (
            "4/1: tensor 'x' dtype mismatch. expected Double, actual Half",
            Guard("tensor 'x' dtype mismatch. expected Double, actual Half", "4/1", "dtype", "x"),
        ),
        (SYMBOLIC, Guard("2 <= x.size()[0] <= 4", "5/1", "shape", "x", hint=SPECIALIZED)),
        (
            "0/1: ___check_obj_id(mode, 139624605101008), type=<class '__main__.Mode'>  # if mode is Mode.A:"
            "  # f.py:11 in pick",
            Guard(
                "id(mode) == 139624605101008, type=<class '__main__.Mode'>",
                "0/1",
                "identity",
                "mode",
            ),
        ),
        (
            "1/0: GLOBAL_STATE changed: grad_mode ",
            Guard("GLOBAL_STATE changed: grad_mode", "1/0", "global_state"),
        ),
        ("2/0: len(L['xs']) == 3", Guard("len(xs) == 3", "2/0", "length", "xs")),
        ("2/0: ___check_type_id(L['x'], 94123)", Guard("id(type(x)) == 94123", "2/0", "type", "x")),
        ("Unable to find recompilation reasons", Guard("Unable to find recompilation reasons", "", "other")),
    ],
)
def test_reasons_are_read_as_torch_versions_write_them(reason: str, expected: Guard) -> None:
    assert reasons.parse(reason) == expected


def test_a_reason_names_its_line_in_its_comment() -> None:
    assert reasons.where(PICK_2_13) == ("mp/rc/pick.py", 6, "pick")
    assert reasons.where(SYMBOLIC) == ("mp/rc/ints.py", 43, "branchy")
    assert reasons.where("0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3") is None


def _compile(
    number: int, compile_id: str, guard_failed: str = "", attempt: int = 0, **fields: object
) -> FrameEvent:
    """The record of one translation of g's frame; a recompilation if its guard failed against another."""
    guard = Guard("k == 1", guard_failed, "value", "k") if guard_failed else None
    event = FrameEvent(
        attempt=attempt,
        target=number,
        compile_id=compile_id,
        frame="g",
        path="/f.py",
        line=1,
        recompile=guard is not None,
        guard=guard,
    )
    return dataclasses.replace(event, **fields)  # type: ignore[arg-type]


def test_merge_counts_compilations_and_keeps_each_recompilation() -> None:
    events: list[Event] = [
        _target(0, "g"),
        _compile(0, "0/0"),
        _compile(0, "1/0", line=7, resumes_at=7),  # its resume frame after a break at line 7
        _compile(0, "0/1", "0/0", dynamic=True),
        _compile(0, "0/2", "0/1", limit="recompile_limit", limit_value=2),
        _compile(0, "2/0", own=False, frame="helper", line=9),  # a callee it re-entered
        _compile(0, "1/1", "1/0", line=7, resumes_at=7),
    ]
    found = merge(events, ANALYSED)
    (function,) = found.functions
    # Each frame as torch counts it: g's first and 0/1 (the limit refused 0/2), its resume frame's two.
    assert function.compilations == 4
    assert [
        (c.frame, c.line, c.resumes_at, c.own, c.compile_ids, c.compilations) for c in function.frames
    ] == [
        ("g", 1, None, True, ("0/0", "0/1", "0/2"), 2),
        ("g", 1, 7, True, ("1/0", "1/1"), 2),
        ("helper", 9, None, False, ("2/0",), 1),
    ]
    assert [(r.compile_id, r.frame, r.resumes_at, r.dynamic, r.limit) for r in found.recompiles] == [
        ("0/1", Code("/f.py", 1, "g"), None, True, ""),
        ("0/2", Code("/f.py", 1, "g"), None, False, "recompile_limit"),
        ("1/1", Code("/f.py", 1, "g"), 7, False, ""),
    ]


def test_a_recompilation_against_a_discarded_attempt_is_gbls_s_not_the_module_s() -> None:
    events: list[Event] = [
        _target(0, "g"),
        _compile(0, "0/0", attempt=1),
        DiscardEvent(attempt=1),  # the synthesized input raised after Dynamo compiled for it
        _compile(0, "0/1", "0/0", attempt=2),
        _compile(0, "0/2", "0/1", attempt=2),
    ]
    found = merge(events, ANALYSED)
    assert [r.compile_id for r in found.recompiles] == ["0/2"]
    assert found.functions[0].compilations == 2


def test_guard_helpers_are_said_as_the_python_they_compute() -> None:
    said = {
        "0/0: ___dict_contains('k', G['D'])": "'k' in D",
        "0/0: ___check_obj_id(G['__builtins_dict___4']['float'], 1403)": "id(float) == 1403",
        "0/0: ___odict_getitem(L['d'], 'a') == 2": "d['a'] == 2",
        "0/0: ___tuple_iterator_len(L['it']) == 3": "len(list(it)) == 3",
        "0/0: ___some_new_helper(L['a'], (1, 2))": "some_new_helper(a, (1, 2))",  # unknown: by its name
        "1/1: ___as_tensor(L['k']).item() == 0.5": "k == 0.5",  # torch 2.6's check of a float's value
    }
    assert {reason: reasons.parse(reason).text for reason in said} == said


def test_values_held_across_a_break_are_named_or_said_unnamed() -> None:
    raw = reasons.parse("1/0: tensor '___stack1' size mismatch at index 0. expected 3, actual 4")
    assert (raw.kind, raw.subject) == ("shape", "___stack1")
    at = Frame("/w/f.py", "step", 12, 8, 24)
    named = reasons.held(raw, {1: ("np.random.rand()", at), 2: ("noise", None)})
    assert (named.text, named.subject, named.origin) == (
        "tensor 'np.random.rand()' size mismatch at index 0. expected 3, actual 4",
        "np.random.rand()",
        at,
    )
    boxed = reasons.held(reasons.parse("1/0: L['__resume_frame_values'][2] == 3"), {2: ("noise", None)})
    assert (boxed.text, boxed.subject, boxed.origin) == ("noise == 3", "noise", None)
    unnamed = reasons.held(raw, {})  # a trace keeps no code
    assert unnamed.subject == reasons.UNNAMED and "___" not in unnamed.text
