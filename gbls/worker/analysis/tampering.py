"""What gbls's own code relies on while the analysed code runs, taken before any of it runs."""

from __future__ import annotations

import builtins
import json
import os

# What gbls's own code calls while the analysed code runs: replaced, it is the analysed code's doing.
WATCHED = {
    "builtins.__import__": (builtins, "__import__"),
    "builtins.open": (builtins, "open"),
    "json.dumps": (json, "dumps"),
    "json.loads": (json, "loads"),
    "os.write": (os, "write"),
}
_originals = {name: getattr(owner, attribute) for name, (owner, attribute) in WATCHED.items()}


def replaced() -> list[str]:
    """What of ``WATCHED`` the analysed code replaced."""
    return [
        name
        for name, (owner, attribute) in WATCHED.items()
        if getattr(owner, attribute, None) is not _originals[name]
    ]
