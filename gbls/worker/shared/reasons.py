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
kind of check it is. Standard library only.
"""

from __future__ import annotations

import re

from .protocol import Guard, GuardKind

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
    text = SCOPED.sub(lambda match: match.group(2), check).strip()
    kind, subject = classify(text)
    root = re.split(r"[.\[]", subject, maxsplit=1)[0]
    return Guard(
        text=text,
        failed=failed,
        kind=kind,
        subject=subject,
        is_global=bool(root) and f"G['{root}']" in check,
        hint=_hint(rest),
    )


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
