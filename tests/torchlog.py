"""torch's own graph-break log, as the oracle the engine's results are checked against.

Runs fixture files in a fresh interpreter with ``TORCH_LOGS=graph_breaks`` and every
``torch.compile`` on the eager backend, each as ``python file.py`` runs it (``__main__``), and
parses each logged break: its compile id, gb_type and GB id, and the user traceback with the caret
columns torch printed. Dynamo's compilation metrics of the same run say what became of each frame
it translated (compiled, or run eagerly). All the files of a folder run in one interpreter
(``torch._dynamo.reset()`` between them) so that torch is imported once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

_cache: dict[Path, list[LoggedBreak]] = {}
_compiles: dict[Path, list[LoggedCompile]] = {}

RUNNER = """
import json, os, sys, torch, torch._dynamo, torch._dynamo.utils as utils
utils.set_compilation_metrics_limit(100000)
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
    for metric in utils.get_compilation_metrics():
        record = [str(metric.compile_id), metric.co_name, metric.co_filename, bool(metric.has_guarded_code)]
        print(METRIC + json.dumps(record), file=sys.stderr, flush=True)
    utils.clear_compilation_metrics()
"""
MARKER = "=== oracle file: "
METRIC = "=== oracle metric: "

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


@dataclass
class LoggedCompile:
    """One translation of a frame, from Dynamo's compilation metrics."""

    compile_id: str  # frame/recompile, as the log's [0/1] says
    function: str  # the code's name: a resume function is torch_dynamo_resume_in_<f>_at_<line>
    path: str
    guarded: bool  # Dynamo produced code for it; False: the frame ran eagerly


def logged_breaks(path: Path) -> list[LoggedBreak]:
    if path not in _cache:
        _load(path)
    return _cache[path]


def logged_compiles(path: Path) -> list[LoggedCompile]:
    if path not in _compiles:
        _load(path)
    return _compiles[path]


def _load(path: Path) -> None:
    breaks, compiles = _run(sorted(path.parent.glob("*.py")))
    _cache.update(breaks)
    _compiles.update(compiles)


def _run(paths: list[Path]) -> tuple[dict[Path, list[LoggedBreak]], dict[Path, list[LoggedCompile]]]:
    # Nothing may download at run time: the Hugging Face fixtures build their models from configs.
    environment = dict(os.environ, TORCH_LOGS="graph_breaks", HF_HUB_OFFLINE="1")
    completed = subprocess.run(
        [sys.executable, "-c", f"MARKER = {MARKER!r}\nMETRIC = {METRIC!r}\n" + RUNNER, *map(str, paths)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    found: dict[Path, list[LoggedBreak]] = {}
    compiles: dict[Path, list[LoggedCompile]] = {}
    entries: list[LoggedBreak] = []
    current = Path()
    lines: list[str] = []
    for raw in completed.stderr.splitlines():
        if raw.startswith(MARKER):
            current = Path(raw[len(MARKER) :])
            entries = found.setdefault(current, [])
            compiles[current] = []
            continue
        if raw.startswith(METRIC):
            compile_id, function, path, guarded = json.loads(raw[len(METRIC) :])
            compiles[current].append(LoggedCompile(compile_id, function, path, guarded))
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
    return found, compiles


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
