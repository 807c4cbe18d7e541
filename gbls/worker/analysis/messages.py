"""Break messages as structured as the user's torch makes them, with their GB ids and what is missing.

Dynamo formats a break's message in one place and logs it in another: the structure (gb_type,
context, explanation, hints) is remembered by its text when it is formatted, and looked up by
that text when the break is logged. Torch 2.6 logs plain text only: its gb_type is named from
the text (``shared.messages``). GB ids come from the torch's own registry, else gbls's table.
"""

from __future__ import annotations

import weakref
from dataclasses import replace

from ..shared.messages import from_text, message_key, shipped_id, shipped_ids
from ..shared.protocol import Message
from . import flags, hookpoints


class Messages:
    def __init__(self) -> None:
        self.structured: dict[str, Message] = {}
        # GB ids: the user's torch's own registry first (None: it has none), then gbls's table.
        self.torch_ids = hookpoints.registry_ids()
        self.shipped_ids = shipped_ids()
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
        # Without the whitespace torch leaves around them (an explanation ending in "\n    "): the
        # formatted text, all that a trace or log keeps, has none, and both must read alike.
        self.structured[message_key(text)] = Message(
            str(gb_type), str(context).strip(), str(explanation).strip(), tuple(str(h).strip() for h in hints)
        )

    def remember_columns(self, exc: BaseException, columns: list[hookpoints.Columns]) -> None:
        self.columns[exc] = columns

    def message(self, text: str) -> Message:
        """A break's message as structured as this torch makes it, with its GB id, and what is missing."""
        key = message_key(text)
        gaps: list[str] = []
        structured = self.structured.get(key)
        if structured is None:
            structured, gaps = from_text(key, hookpoints.TORCH_RELEASE)
        gb_type = structured.gb_type
        gb_id = (self.torch_ids or {}).get(gb_type)
        if gb_id is None:
            release = hookpoints.TORCH_RELEASE
            why = (
                f"torch {release} has no graph-break registry"
                if self.torch_ids is None
                else (f"the graph-break registry of torch {release} lacks this gb_type")
            )
            gb_id, said = shipped_id(gb_type, self.shipped_ids, why)
            gaps += said
        return replace(
            structured,
            gb_id=gb_id,
            url=hookpoints.documentation_link(gb_type, gb_id),
            gaps=tuple(gaps),
            classes=flags.hint_classes(structured.hints),
        )
