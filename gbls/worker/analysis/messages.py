"""Break messages as structured as the user's torch makes them, with their GB ids and what is missing.

Dynamo formats a break's message in one place and logs it in another: the structure (gb_type,
context, explanation, hints) is remembered by its text when it is formatted, and looked up by
that text when the break is logged. Torch 2.6 logs plain text only: its gb_type is named from
the text. GB ids come from the torch's own registry, else gbls's table (``gb_ids.json``).
"""

from __future__ import annotations

import weakref
from dataclasses import replace

from ..shared.protocol import Message
from . import flags, hookpoints

NESTED_BREAK_SEPARATOR = "\n\n*** While handling this graph break, another graph break occurred: ***\n\n"


class Messages:
    def __init__(self) -> None:
        self.structured: dict[str, Message] = {}
        # GB ids: the user's torch's own registry first (None: it has none), then gbls's table.
        self.torch_ids = hookpoints.registry_ids()
        self.shipped_ids = hookpoints.shipped_ids()
        # Exceptions already recorded: Dynamo can log one break twice, and handle it again at frame level.
        self.logged: weakref.WeakSet[BaseException] = weakref.WeakSet()
        self.columns: weakref.WeakKeyDictionary[BaseException, list[hookpoints.Columns]] = (
            weakref.WeakKeyDictionary()
        )

    def seen(self, exc: BaseException) -> bool:
        """Whether ``exc`` was recorded already; it is from now on."""
        if getattr(exc, "logged", False) or exc in self.logged:
            return True
        self.logged.add(exc)
        return False

    def remember_message(
        self, text: str, gb_type: str, context: str, explanation: str, hints: list[str]
    ) -> None:
        self.structured[hookpoints.message_key(text)] = Message(
            str(gb_type), str(context), str(explanation), tuple(map(str, hints))
        )

    def remember_columns(self, exc: BaseException, columns: list[hookpoints.Columns]) -> None:
        self.columns[exc] = columns

    def message(self, text: str) -> Message:
        """A break's message as structured as this torch makes it, with its GB id, and what is missing."""
        key = hookpoints.message_key(text)
        gaps: list[str] = []
        structured = self.structured.get(key)
        if structured is None:
            structured = parse_break_text(key)
            if not structured.explanation:  # plain text (torch 2.6, a few breaks of 2.7-2.10)
                legacy = hookpoints.legacy_gb_type(key)
                first = key.splitlines()[0] if key else ""
                structured = Message(legacy or first, "", key, ())
                gaps.append(
                    f"torch {hookpoints.TORCH_RELEASE} gives this break as text only"
                    + (": gbls names its gb_type from the text" if legacy else "")
                    + "; no explanation or hints"
                )
        gb_type = structured.gb_type
        gb_id = (self.torch_ids or {}).get(gb_type)
        if gb_id is None and gb_type in self.shipped_ids:
            gb_id = self.shipped_ids[gb_type]
            release = hookpoints.TORCH_RELEASE
            why = (
                f"torch {release} has no graph-break registry"
                if self.torch_ids is None
                else (f"the graph-break registry of torch {release} lacks this gb_type")
            )
            gaps.append(f"the GB id is from gbls's table, not from your torch ({why})")
        return replace(
            structured,
            gb_id=gb_id,
            url=hookpoints.documentation_link(gb_type, gb_id),
            gaps=tuple(gaps),
            classes=flags.hint_classes(structured.hints),
        )


def parse_break_text(text: str) -> Message:
    """Structure a break from Dynamo's formatted text, for messages the structured hook did not see."""
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
    return Message(
        gb_type=lines[0].strip() if lines else "",
        context="\n".join(sections["context"]).strip(),
        explanation="\n".join(sections["explanation"]).strip(),
        hints=tuple("\n".join(hint).strip() for hint in hints),
    )
