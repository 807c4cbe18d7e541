"""Graph-break messages read from the text Dynamo formats them into, and their GB ids.

Both sides read such text: the worker when the structured hook did not see a message (torch 2.6
formats breaks as one line of text, a few breaks of 2.7-2.10 too), the server when it imports a
real run's trace or log, where the text is all there is. GB ids come from the user's torch's
registry where the worker has one, else from gbls's table (``gb_ids.json``, torch 2.15's
registry: the ids do not change between releases). Standard library only.
"""

from __future__ import annotations

import json
import os
import re

from .protocol import Message

NESTED_BREAK_SEPARATOR = "\n\n*** While handling this graph break, another graph break occurred: ***\n\n"
# gb_type → GB id, from torch 2.15's registry.
SHIPPED_IDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gb_ids.json")
GRAPH_BREAK_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"

LINK_SUFFIX = re.compile(r"\n+ ?For more details about this graph break, please visit: \S+\s*$")
LOOP_SKIP = "Skipping frame because there is a graph break in a for/while loop"
# The one-line texts of torch 2.6 (and the few text-only breaks of 2.7-2.10) → the gb_type later
# releases give the same break. Others keep their first line as their gb_type.
LEGACY_GB_TYPES = (
    (re.compile(r"^builtin: \w+ "), "Failed to trace builtin operator"),
    (re.compile(r"^Data-dependent jump$"), "Data-dependent branching"),
    (re.compile(r"^Tensor\.item$"), "Unsupported Tensor.item() call with capture_scalar_outputs=False"),
    (re.compile(r"^dynamic shape operator: "), "Dynamic shape operator"),
    (re.compile(r"^generator$"), "Attempt to trace generator"),
    (re.compile(r"^(accumulated_)?(cache_size|recompile)_limit reached"), "Dynamo recompile limit exceeded"),
    (re.compile(r"^'skip function graph_break in file "), "Call to `torch._dynamo.graph_break()`"),
    (
        re.compile(r"^call torch\._dynamo\.disable\(\) wrapped function"),
        "Skip calling `torch.compiler.disable()`d function",
    ),
    (re.compile(r"^(SKIPPED INLINING .*: )?" + re.escape(LOOP_SKIP)), "graph break in loop"),  # or a callee's
    (
        re.compile(r"^Logger not supported for non-export cases"),
        "logging.Logger method not supported for non-export cases",
    ),
)


def legacy_gb_type(text: str) -> str | None:
    """The gb_type later releases give a break torch formatted as one line of text, if gbls knows it."""
    return next((gb_type for pattern, gb_type in LEGACY_GB_TYPES if pattern.search(text)), None)


def message_key(text: str) -> str:
    """A formatted message without the documentation link (appended after formatting in 2.9-2.10)."""
    return LINK_SUFFIX.sub("", text).strip("\n")


def parse_break_text(text: str) -> Message:
    """Structure a break from Dynamo's formatted text: its first line the gb_type, then its sections."""
    lines = text.strip("\n").splitlines()
    sections: dict[str, list[str]] = {"explanation": [], "context": []}
    hints: list[list[str]] = []
    current: list[str] | None = None
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            current = sections["explanation"]
            current.append(stripped[len("Explanation:") :].strip())
        elif stripped.startswith("Hint:"):
            current = [stripped[len("Hint:") :].strip()]
            hints.append(current)
        elif stripped.startswith("Developer debug context:"):
            current = sections["context"]
            current.append(stripped[len("Developer debug context:") :].strip())
        elif stripped.startswith("For more details about this graph break"):
            current = None
        elif current is not None and line.startswith("    "):
            current.append(line[4:])
        elif current is not None and not stripped:
            current.append("")  # a blank line within a section (an explanation's paragraphs)
    return Message(
        gb_type=lines[0].strip() if lines else "",
        context="\n".join(sections["context"]).strip(),
        explanation="\n".join(sections["explanation"]).strip(),
        hints=tuple("\n".join(hint).strip() for hint in hints),
    )


def from_text(key: str, release: str) -> tuple[Message, list[str]]:
    """A break's message from its text (``message_key``'s), and what torch ``release`` does not say
    of it: a text of one line (torch 2.6) is named from the text, without explanation or hints."""
    structured = parse_break_text(key)
    if structured.explanation:
        return structured, []
    legacy = legacy_gb_type(key)
    first = key.splitlines()[0] if key else ""
    gap = (
        f"torch {release} gives this break as text only"
        + (": gbls names its gb_type from the text" if legacy else "")
        + "; no explanation or hints"
    )
    return Message(legacy or first, "", key, ()), [gap]


def shipped_ids() -> dict[str, str]:
    """gb_type → GB id as gbls ships them (from torch 2.15's registry), for the gaps of older ones."""
    try:
        with open(SHIPPED_IDS, encoding="utf-8") as handle:
            shipped: dict[str, str] = json.load(handle)
    except (OSError, ValueError):
        return {}
    return shipped


def shipped_id(gb_type: str, shipped: dict[str, str], why: str) -> tuple[str | None, list[str]]:
    """The GB id gbls's table gives ``gb_type``, and the gap that says where it came from (``why``
    the run's torch did not give it)."""
    gb_id = shipped.get(gb_type)
    if gb_id is None:
        return None, []
    return gb_id, [f"the GB id is from gbls's table, not from your torch ({why})"]


def site_link(gb_id: str | None) -> str | None:
    """The graph-break site's page of a GB id."""
    return f"{GRAPH_BREAK_SITE}gb{gb_id[2:]}.html" if gb_id else None
