"""Where gbls's manual is published (``mkdocs.yml``'s ``site_url``, ``pyproject.toml``'s Documentation
URL; ``tests/unit/test_docs.py`` keeps the three one): the page a diagnostic, a hover or a note links
for what it says."""

from __future__ import annotations

MANUAL = "https://gbls.github.io/gbls/"


def page(name: str, anchor: str = "") -> str:
    """The published ``docs/NAME.md`` (MkDocs serves each page as a folder), at ``anchor``."""
    return f"{MANUAL}{name}/" + (f"#{anchor}" if anchor else "")
