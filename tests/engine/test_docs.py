"""Every command output the README and the manual show is what gbls prints: each block marked
``<!-- gbls-output: COMMAND -->`` is COMMAND's stdout, run from the repository's root.
``GBLS_UPDATE_DOCS=1`` rewrites the blocks from the program instead (review the diff)."""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..support import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The marker, then the fenced block it names (its fence kept, so that a rewrite keeps it).
BLOCK = re.compile(
    r"^<!-- gbls-output: (?P<command>[^\n]+?) -->\n(?P<fence>```\w*\n)(?P<body>.*?)```\n", re.S | re.M
)
UPDATE = os.environ.get("GBLS_UPDATE_DOCS") == "1"


@dataclass(frozen=True)
class Block:
    page: Path
    command: str
    shown: str


def blocks() -> list[Block]:
    return [
        Block(page, match["command"], match["body"])
        for page in PAGES
        for match in BLOCK.finditer(page.read_text())
    ]


@functools.cache
def printed(command: str) -> str:
    """What ``command`` (``[cd DIR &&] gbls ARGS``) prints, run as a user runs it, with this venv's gbls."""
    words = shlex.split(command)
    cwd = ROOT
    if words[0] == "cd":
        cwd, words = ROOT / words[1], words[3:]
    assert words[0] == "gbls", f"not a gbls command: {command}"
    result = subprocess.run(
        [sys.executable, "-m", "gbls", *words[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "COLUMNS": "100"},  # argparse's help fits the terminal: one width here
    )
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def expected(block: Block) -> str:
    """The block as the program writes it: its ``$ command`` line, if it shows one, then the output."""
    output = printed(block.command)
    return f"$ {block.command}\n{output}" if block.shown.startswith("$ ") else output


def test_the_docs_mark_the_outputs_they_show() -> None:
    commands = {block.command for block in blocks()}
    assert "gbls check examples/demo.py" in commands
    assert len(commands) >= 4, commands


def rewritten(match: re.Match[str], command: str, output: str) -> str:
    """The marked block ``match`` with ``output`` in it, if it is ``command``'s."""
    if match["command"] != command:
        return match[0]
    start, end = match.start("body") - match.start(), match.end("body") - match.start()
    return match[0][:start] + output + match[0][end:]


@pytest.mark.parametrize("block", blocks(), ids=lambda block: f"{block.page.name}: {block.command}")
def test_a_shown_output_is_what_gbls_prints(block: Block) -> None:
    now = expected(block)
    if UPDATE:
        block.page.write_text(
            BLOCK.sub(lambda match: rewritten(match, block.command, now), block.page.read_text())
        )
        return
    assert block.shown == now, f"{block.page.name}: rerun with GBLS_UPDATE_DOCS=1 and review the diff"
