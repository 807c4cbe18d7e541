"""Dynamo's recompilation reasons, read into a ``Guard``.

When a call matches none of a frame's compiled versions, Dynamo explains, for each version, the
first of its checks the call failed, as text::

    0/0: mode == 'a'                      # if mode == "a":  # ick.py:6 in pick
    0/0: tensor 'x' size mismatch at index 0. expected 2, actual 3
    0/4: self.scale == 2                  # return x * self.scale  # f.py:38 in forward (HINT: ...)
    3/0: G['ACT'] == 'relu'               # if ACT == "relu":  # f.py:28 in act

Before torch 2.7 locals are written ``L['mode']``; torch 2.7 to 2.9 put a hint after the check
without the comment; the comment's path is cut at the left. On torch 2.12 and later the frames
follow ("User stack trace:"), which ``capture`` takes from the structured stack instead; checks on
symbolic sizes have only the comment. This module turns one reason into what it checks and what
kind of check it is, in Python the user can read: Dynamo's guard helpers are written as what they
compute (``___check_obj_id(x, 94...)`` is ``id(x) == 94...``), a builtin as its name. Standard library
only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

from .protocol import Frame, Guard, GuardKind

REASON = re.compile(r"^(\S+?): (.*)$")  # "0/0: <check>", "!1/0/3: <check>"
COMMENT = re.compile(r"^(.*?)\s{2,}#\s?(.*)$")  # the check, padded, then "# <source line>  # <where>"
SCOPED = re.compile(r"\b([LG])\['([^'\]]+)'\]")  # L['mode'] (a local), G['ACT'] (a global)
NAME = r"[A-Za-z_]\w*(?:\.\w+|\[\d+\])*"  # mode, self.scale, grad[0], states[1].weight
TENSOR = re.compile(rf"^tensor '({NAME})' (.+?) mismatch")
SIZES = re.compile(rf"({NAME})\.(?:size|stride)\(\)")
CALLS: dict[str, GuardKind] = {"___check_type_id": "type", "___check_obj_id": "identity", "len": "length"}
CALL = re.compile(rf"^({'|'.join(CALLS)})\(({NAME})[,)]")
VALUE = re.compile(rf"^({NAME}) (?:==|!=|is not|is) (.+)$")
TENSOR_KINDS: dict[str, GuardKind] = {"size": "shape", "stride": "shape", "rank": "shape", "dtype": "dtype"}
# A resume function's view of what the function held at the break: its stack (``___stack0``) and
# its locals, or both in one list (``__resume_frame_values[0]``).
HELD = re.compile(r"___stack(\d+)|__resume_frame_values\[(\d+)\]")
UNNAMED = "(a value held across the graph break)"
BUILTIN = re.compile(r"__builtins_dict___\d+\['(\w+)'\]")  # G['__builtins_dict___4']['float']: float
HELPER = re.compile(r"___(\w+)\(")
AS_NUMBER = re.compile(r"___as_tensor\(([\w.\[\]']+)\)\.item\(\)")
# Dynamo's guard helpers as Python: each one's arguments into what it computes.
HELPERS = {
    "check_obj_id": "id({0}) == {1}",
    "check_type_id": "id(type({0})) == {1}",
    "dict_contains": "{0} in {1}",
    "odict_getitem": "{0}[{1}]",
    "tuple_iterator_getitem": "list({0})[{1}]",
    "tuple_iterator_len": "len(list({0}))",
    "dict_version": "version({0})",
    "key_to_id": "[id(key) for key in {0}]",
    "dataclass_fields": "dataclasses.fields({0})",
    "namedtuple_fields": "{0}._fields",
    "as_tensor": "torch.as_tensor({0})",
    "from_numpy": "torch.from_numpy({0})",
}
HINT_MARKERS = ("(HINT: ", "(user code shown is first use of this value")
WHERE = re.compile(r"#\s(\S+?):(\d+) in ([\w<>]+)")  # "# ick.py:6 in pick": the path cut at the left


def parse(reason: str) -> Guard:
    """One reason, as Dynamo wrote it, as a ``Guard`` (without its ``chain``)."""
    first = reason.split("\nUser stack trace:", 1)[0].split("\n", 1)[0]
    found = REASON.match(first)
    failed, rest = (found.group(1), found.group(2)) if found else ("", first)
    commented = COMMENT.match(rest)
    check = commented.group(1) if commented else rest
    check = check.split("  (HINT: ", 1)[0]  # torch 2.7 to 2.9 give a hint without a comment
    check = check.split("; ", 1)[0]  # recompiles_verbose lists every failed check
    kind, subject = classify(_unscoped(check))
    text = readable(check)
    root = re.split(r"[.\[]", subject, maxsplit=1)[0]
    return Guard(
        text=text,
        failed=failed,
        kind=kind,
        subject=subject,
        is_global=bool(root) and f"G['{root}']" in check,
        hint=_hint(rest),
    )


def name_held(text: str, names: Mapping[int, tuple[str, Frame | None]]) -> tuple[str, Frame | None]:
    """``text`` with the values a resume function received named as the user wrote them: ``names``
    gives, by its index among them, each one's expression and where it was computed (the call the
    function broke at), or a local's name; one it does not name is said as held across the break.
    With where the first one named was computed."""
    origin: Frame | None = None

    def named(match: re.Match[str]) -> str:
        nonlocal origin
        found = names.get(int(match.group(1) or match.group(2)))
        if found is None:
            return UNNAMED
        origin = origin or found[1]
        return found[0]

    return HELD.sub(named, text), origin


def held(guard: Guard, names: Mapping[int, tuple[str, Frame | None]]) -> Guard:
    """``guard`` with the values a resume function received named as the user wrote them
    (``name_held``), and where the first was computed."""
    if not HELD.search(guard.text + guard.subject):
        return guard
    text, origin = name_held(guard.text, names)
    subject, subject_origin = name_held(guard.subject, names)
    origin = origin or subject_origin
    kind = guard.kind
    if not subject:  # ``__resume_frame_values[2] == 3`` reads as no check of a name; ``noise == 3`` does
        kind, subject = classify(text)
    return replace(guard, text=text, kind=kind, subject=subject, origin=origin)


def _unscoped(check: str) -> str:
    """A check with locals and globals by their names (``L['mode']``: ``mode``), builtins too, and a
    number's value as itself (torch 2.6 checks ``___as_tensor(x).item()``)."""
    text = BUILTIN.sub(r"\1", SCOPED.sub(lambda match: match.group(2), check)).strip()
    return AS_NUMBER.sub(r"\1", text)


def readable(check: str) -> str:
    """A check as Python the user reads: names unscoped, Dynamo's helpers as what they compute."""
    text = _unscoped(check)
    while found := HELPER.search(text):
        inner = _parenthesized(text, found.end() - 1)
        if inner is None:
            break
        arguments = _arguments(inner)
        pattern = HELPERS.get(found.group(1))
        needed = pattern.count("{") if pattern else 0
        if pattern is not None and len(arguments) >= needed:
            written = pattern.format(*arguments)
        else:  # a helper gbls does not know: by its name, without Dynamo's underscores
            written = f"{found.group(1)}({inner})"
        text = text[: found.start()] + written + text[found.end() + len(inner) + 1 :]
    return text


def _arguments(inner: str) -> list[str]:
    """A call's arguments, split at its own commas (not those inside brackets or quotes)."""
    found, depth, start, quote = [], 0, 0, ""
    for index, char in enumerate(inner):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            found.append(inner[start:index].strip())
            start = index + 1
    found.append(inner[start:].strip())
    return found


def where(reason: str) -> tuple[str, int, str] | None:
    """The end of the path, the line and the function a reason's comment names, if it has one."""
    commented = COMMENT.match(reason.split("\n", 1)[0])
    found = WHERE.search(commented.group(2)) if commented else None
    return (found.group(1), int(found.group(2)), found.group(3)) if found else None


def classify(text: str) -> tuple[GuardKind, str]:
    """The kind of a check and what it checks, from its text with locals and globals unscoped."""
    tensor = TENSOR.match(text)
    if tensor:
        prop = tensor.group(2)
        if prop == "requires_grad":
            return "requires_grad", tensor.group(1)
        return TENSOR_KINDS.get(prop, "tensor"), tensor.group(1)
    if text.startswith("GLOBAL_STATE changed"):
        return "global_state", ""
    call = CALL.match(text)
    if call:
        return CALLS[call.group(1)], call.group(2)
    sizes = SIZES.search(text)
    if sizes:
        return "shape", sizes.group(1)
    value = VALUE.match(text)
    if value:
        return "value", value.group(1)
    return "other", ""


def _hint(text: str) -> str:
    """Dynamo's advice after a check: ``(HINT: ...)``, or its note on specialization."""
    for marker in HINT_MARKERS:
        start = text.find(marker)
        if start >= 0:
            inner = _parenthesized(text, start)
            if inner is not None:
                return inner[len("HINT: ") :] if marker.startswith("(HINT") else inner
    return ""


def _parenthesized(text: str, start: int) -> str | None:
    """The text inside the parenthesis opening at ``start``, nested ones included."""
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1 : index]
    return None
