"""Pieces of the capture that need torch but no analysis run (the text fallback, the message key,
resume functions, describing inputs), and a torch whose hook points moved. The pieces that need no
torch are in tests/unit/test_capture.py."""

from __future__ import annotations

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
from gbls.worker.shared.frames import base_name, resume_line
from gbls.worker.shared.messages import NESTED_BREAK_SEPARATOR, message_key, parse_break_text, shipped_ids
from gbls.worker.shared.protocol import Message

from ..support import FIXTURES
from ..support.torchlog import logged_breaks, logged_compiles
from ..support.worker import Analyse
from .test_engine import GENERATORS

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


async def test_a_frame_no_compile_call_gbls_knows_of_is_listed_as_a_function_of_its_own(
    analyse_file: Analyse,
) -> None:
    """``torch._dynamo.optimize`` (which gbls does not replace) translates ``scale``: its frames,
    their compile ids and its break are torch's, never dropped."""
    fixture = FIXTURES / "engine" / "optimized.py"
    report = await analyse_file(fixture)
    (function,) = report.functions
    assert (function.qualname, function.analysed) == ("scale", True)
    ours = [(c, frame.frame, frame.resumes_at) for frame in function.target.frames for c in frame.compile_ids]
    logged = logged_compiles(fixture)
    theirs = [(c.compile_id, base_name(c.function), resume_line(c.function)) for c in logged]
    assert sorted(ours) == sorted(theirs) and ours
    roots = {(e.at[1], e.gb_types[0] if e.gb_types else "") for e in logged_breaks(fixture)}
    assert {(b.root.span.line, b.gb_type if all(g for _, g in roots) else "") for b in report.breaks} == roots
