"""torch's own graph-break log, as the oracle the engine's results are checked against.

Runs fixture files in a fresh interpreter with ``TORCH_LOGS=graph_breaks`` and every
``torch.compile`` on the eager backend, each as ``python file.py`` runs it (``__main__``), and
parses each logged break: its compile id, gb_type and GB id, and the user traceback with the caret
columns torch printed. All the files of a folder run in one interpreter (``torch._dynamo.reset()``
between them) so that torch is imported once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_cache: dict[Path, list[LoggedBreak]] = {}

RUNNER = """
import os, sys, torch, torch._dynamo
original = torch.compile
def eager_compile(model=None, **options):
    options["backend"] = "eager"
    options.pop("mode", None)
    if model is None:
        return lambda actual: original(actual, **options)
    return original(model, **options)
torch.compile = eager_compile
for path in sys.argv[1:]:
    torch._dynamo.reset()
    print(MARKER + path, file=sys.stderr, flush=True)
    sys.path.insert(0, os.path.dirname(path))
    try:
        exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__", "__file__": path})
    except BaseException:
        pass
"""
MARKER = "=== oracle file: "

LINE = re.compile(r"\] \[(\d+)/(\d+)(?:_\d+)?\] \[__graph_breaks\] ?(.*)$")
FRAME = re.compile(r'^  File "([^"]+)", line (\d+), in (\S+)$')


@dataclass
class LoggedFrame:
    path: str
    line: int
    function: str
    carets: tuple[int, int] | None = None  # start, end within the stripped source line


@dataclass
class LoggedBreak:
    frame_id: int
    compile_id: int
    suppressed: bool
    at: tuple[str, int]
    gb_ids: list[str] = field(default_factory=list)
    gb_types: list[str] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)  # the first line of each, root cause first
    hints: list[str] = field(default_factory=list)  # the first line of each, in order
    stack: list[LoggedFrame] = field(default_factory=list)


def logged_breaks(path: Path) -> list[LoggedBreak]:
    if path not in _cache:
        _cache.update(_run(sorted(path.parent.glob("*.py"))))
    return _cache[path]


def _run(paths: list[Path]) -> dict[Path, list[LoggedBreak]]:
    # Nothing may download at run time: the Hugging Face fixtures build their models from configs.
    environment = dict(os.environ, TORCH_LOGS="graph_breaks", HF_HUB_OFFLINE="1")
    completed = subprocess.run(
        [sys.executable, "-c", f"MARKER = {MARKER!r}\n" + RUNNER, *map(str, paths)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    found: dict[Path, list[LoggedBreak]] = {}
    entries: list[LoggedBreak] = []
    lines: list[str] = []
    for raw in completed.stderr.splitlines():
        if raw.startswith(MARKER):
            entries = found.setdefault(Path(raw[len(MARKER) :]), [])
            continue
        match = LINE.search(raw)
        if not match:
            continue
        text = match.group(3)
        if text.startswith("Graph break") and "in user code at" in text:
            where, _, line = text.rsplit(" at ", 1)[1].rpartition(":")
            entries.append(
                LoggedBreak(
                    int(match.group(1)), int(match.group(2)), "suppressed" in text, (where, int(line))
                )
            )
            lines = []
        if entries:
            _feed(entries[-1], lines, text)
    return found


def _feed(entry: LoggedBreak, previous: list[str], text: str) -> None:
    gb = re.search(r"/gb/gb(\d+)\.html", text)
    if gb:
        entry.gb_ids.append(f"GB{gb.group(1)}")
    if text.startswith("  Explanation:") and previous:
        entry.gb_types.append(previous[-1].strip())
        entry.explanations.append(text[len("  Explanation:") :].strip())
    if text.startswith("  Hint:"):
        entry.hints.append(text[len("  Hint:") :].strip())
    frame = FRAME.match(text)
    if frame:
        entry.stack.append(LoggedFrame(frame.group(1), int(frame.group(2)), frame.group(3)))
    elif (
        entry.stack
        and previous
        and previous[-1].startswith("    ")
        and set(text.strip()) <= set("^~")
        and text.strip()
    ):
        start = len(text) - len(text.lstrip()) - 4
        entry.stack[-1].carets = (start, len(text.rstrip()) - 4)
    previous.append(text)
