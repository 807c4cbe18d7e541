"""Pieces of the capture that need no analysis run (the text fallback, the merge of root causes), and a
torch whose hook points moved."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch._dynamo.exc as dynamo_exc
import torch._dynamo.symbolic_convert as symbolic_convert

from gbls.engine.sources import read_source
from gbls.runtime.sandbox import launch
from gbls.runtime.session import analyse
from gbls.runtime.workerclient import Worker
from gbls.settings import Settings
from gbls.worker.analysis import hookpoints
from gbls.worker.shared import events, reasons
from gbls.worker.shared.events import BreakEvent, CallEvent, DiscardEvent, Event, FrameEvent, TargetEvent
from gbls.worker.shared.frames import base_name
from gbls.worker.shared.merge import merge
from gbls.worker.shared.messages import NESTED_BREAK_SEPARATOR, message_key, parse_break_text, shipped_ids
from gbls.worker.shared.protocol import Code, Frame, Guard, Message, ProtocolError, Request

from .conftest import FIXTURES
from .test_engine import GENERATORS

# The merge tests analyse /f.py of the workspace /workspace: other files are neither.
ANALYSED = Request(id="test", path="/f.py", source="", workspace="/workspace")

REGISTRY = os.path.join(os.path.dirname(dynamo_exc.__file__), "graph_break_registry.json")
formats = pytest.mark.skipif(
    not hookpoints.formats_messages(), reason="this torch (2.6) formats breaks as one line of text only"
)


def registry_entries() -> list[tuple[str, dict[str, object]]]:
    """The first entry of each GB id in this torch's registry; before it had one (2.7), gbls's table."""
    if not os.path.exists(REGISTRY):
        shipped = sorted((gb_id, gb_type) for gb_type, gb_id in shipped_ids().items())
        return [
            (gb_id, {"Gb_type": gb_type, "Explanation": f"Why {gb_type}", "Hints": []})
            for gb_id, gb_type in shipped
        ]
    with open(REGISTRY) as handle:
        registry = json.load(handle)
    return [(gb_id, entries[0]) for gb_id, entries in sorted(registry.items())]


@formats
@pytest.mark.parametrize("gb_id, entry", registry_entries()[::25])
def test_text_fallback_reads_what_dynamo_formats(gb_id: str, entry: dict[str, object]) -> None:
    """For messages the structured hook did not see, the formatted text alone gives the same fields."""
    hints = [str(hint) for hint in entry["Hints"]] or ["First hint", "A second\\nhint over two lines"]  # type: ignore[attr-defined]
    explanation = str(entry["Explanation"]) + "\\nsecond line of the explanation"
    text = dynamo_exc.format_graph_break_message(str(entry["Gb_type"]), "ctx: Variable()", explanation, hints)
    parsed = parse_break_text(message_key(text))
    # Text loses only the whitespace at the ends of each field.
    assert parsed == Message(
        gb_type=str(entry["Gb_type"]).strip(),
        context="ctx: Variable()",
        explanation=explanation.strip(),
        hints=tuple(hint.strip() for hint in hints),
    ), gb_id


@formats
def test_nested_breaks_split_into_their_messages() -> None:
    inner = dynamo_exc.format_graph_break_message("Failed to trace builtin operator", "print", "print x", [])
    outer = dynamo_exc.format_graph_break_message("graph break in loop", "frame skipped", "loop", ["h"])
    parts = (inner + NESTED_BREAK_SEPARATOR + outer).split(NESTED_BREAK_SEPARATOR)
    assert [parse_break_text(part).gb_type for part in parts] == [
        "Failed to trace builtin operator",
        "graph break in loop",
    ]


def test_messages_are_keyed_without_the_documentation_link() -> None:
    """torch 2.9-2.10 append the link after formatting, 2.11+ inside: either way the key is the message."""
    message = "Failed to trace builtin operator\n  Explanation: print"
    link = "For more details about this graph break, please visit: https://x.example/gb/gb0059.html"
    assert message_key(f"{message}\n {link}") == message
    assert message_key(f"{message}\n\n {link}\n") == message


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


# What a future torch might do: move a hook point where gbls does not look for it, Dynamo still working.
MOVED = {
    "bytecode hook": (
        "del torch._dynamo.convert_frame.register_bytecode_hook\n",
        "Dynamo-generated code is not captured (torch._dynamo.convert_frame has no register_bytecode_hook)",
    ),
    "break log": (
        textwrap.dedent(
            """
            translators = torch._dynamo.symbolic_convert
            method = vars(translators.InstructionTranslatorBase)["log_graph_break"]
            for subclass in (translators.InstructionTranslator, translators.InliningInstructionTranslator):
                subclass.log_graph_break = method
            del translators.InstructionTranslatorBase.log_graph_break
            """
        ),
        "the graph-break log is not captured (InstructionTranslatorBase has no log_graph_break, nor "
        "symbolic_convert)",
    ),
}
# (fixture, the breaks the other hooks still see: function, gb_type)
STILL_SEEN = {
    "bytecode hook": ("engine/deep_helpers.py", [("g", "Failed to trace builtin operator")]),
    # A generator reaches the frame-level error handling, not the break log (on Python 3.10, nothing).
    "break log": ("engine/loop_break.py", [("generate", "Attempt to trace generator")] if GENERATORS else []),
}


@pytest.mark.parametrize("hook", sorted(MOVED))
async def test_a_hook_point_torch_moved_is_one_note_not_a_failure(tmp_path: Path, hook: str) -> None:
    """The analysis still reports what the other hooks see, and says once what it cannot."""
    if hook == "break log" and "log_graph_break" not in vars(symbolic_convert.InstructionTranslatorBase):
        pytest.skip("this torch logs breaks in a module function Dynamo calls by name: it cannot move")
    patch, note = MOVED[hook]
    # The workspace is never on the worker's path: the patch is the interpreter's own site customization.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import torch._dynamo.convert_frame\n" + patch)
    interpreter = tmp_path / "python"
    interpreter.write_text(f'#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} "$@"\n')
    interpreter.chmod(0o755)
    worker = Worker(lambda: launch(str(interpreter), [str(FIXTURES)], "off"))
    await worker.start()
    try:
        name, expected = STILL_SEEN[hook]
        fixture = FIXTURES / name
        report = await analyse(
            worker, str(fixture), fixture.read_text(), Settings(), str(fixture.parent), read_source
        )
    finally:
        await worker.stop()
    assert (report.status, [(brk.function, brk.gb_type) for brk in report.breaks]) == ("ok", expected)
    (said,) = report.notes
    assert said == f"torch {hookpoints.TORCH_RELEASE}: {note}; gbls reports what its other hooks see"


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

    from gbls.worker.analysis.values import describe_value

    batch = {"input_ids": torch.zeros(2, 8, dtype=torch.long), "mask": None, "sizes": [1, 2.5, "a"]}
    assert describe_value(batch) == "{'input_ids': i64[2, 8], 'mask': None, 'sizes': [1, 2.5, 'a']}"
    assert describe_value((torch.randn(3),)) == "(f32[3],)"
    assert describe_value(list(range(6))) == "[0, 1, 2, 3, … 2 more]"
    assert (describe_value(Loud()), describe_value(LoudInt(3)), describe_value([Loud()])) == (
        "Loud",
        "LoudInt",
        "[Loud]",
    )


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
                "___check_obj_id(mode, 139624605101008), type=<class '__main__.Mode'>",
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
        ("2/0: ___check_type_id(L['x'], 94123)", Guard("___check_type_id(x, 94123)", "2/0", "type", "x")),
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
        _compile(0, "1/0", line=7),  # its resume function: the same compilation of g
        _compile(0, "0/1", "0/0", dynamic=True),
        _compile(0, "0/2", "0/1", limit="recompile_limit", limit_value=2),
        _compile(0, "2/0", own=False, frame="helper", line=9),  # a callee it re-entered
    ]
    found = merge(events, ANALYSED)
    (function,) = found.functions
    assert function.compilations == 2  # the first, and 0/1; the limit refused 0/2
    assert [(r.compile_id, r.frame, r.dynamic, r.limit) for r in found.recompiles] == [
        ("0/1", Code("/f.py", 1, "g"), True, ""),
        ("0/2", Code("/f.py", 1, "g"), False, "recompile_limit"),
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
