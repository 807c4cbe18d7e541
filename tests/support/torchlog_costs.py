"""torch's own record of one plain run of a fixture, for what gbls measures and places: each
compilation's metrics (guards, ops, restarts: ``torchlog``'s records), its recompilations
(``TORCH_LOGS=recompiles``), the sizes torch made dynamic (``TORCH_LOGS=dynamic``: "marking L['x'] as
dynamic", torch 2.13+) and those it specialized (``TORCH_TRACE``'s ``symbolic_shape_specialization``
records, with the user's stack), and what the program wrote on stderr (the exception that ended it).

The fixture runs as ``python FILE`` runs it, every ``torch.compile`` on the eager backend, forked
from an interpreter that imported torch once (``forked``).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .forked import run_forked
from .torchlog import FRAME, MARKER, SETUP, LoggedCompile, parse
from .torchlog_recompiles import Logged
from .torchlog_recompiles import parse as parse_recompiles

TRACE_LINE = re.compile(r"^[A-Z]\d{4} [\d:.]+ +\d+ \S+\] (\{.*\})$")
DYNAMIC = re.compile(r"\] \[(\d+/\d+)(?:_\d+)?\] marking (\S+) as dynamic")
# The trace's folder is the runner's (torch reads TORCH_TRACE once): one for the session.
TRACES = tempfile.mkdtemp(prefix="gbls-oracle-trace-")


@dataclass
class LoggedSpecialization:
    compile_id: str
    sources: list[str]  # "L['x'].size()[0]"
    value: str
    stack: list[tuple[str, int, str]]  # the user's frames: (path, line, function), innermost last


@dataclass
class PlainRun:
    compiles: list[LoggedCompile]
    recompiles: Logged
    dynamic: list[tuple[str, str]]  # (compile id, the input's source name)
    specializations: list[LoggedSpecialization]
    stderr: str
    status: int


def plain_run(path: Path) -> PlainRun:
    """``python PATH`` on the eager backend, as its users run it, once, with torch's logs and trace."""
    setup = f"MARKER = {MARKER!r}\nFRAME = {FRAME!r}\n{SETUP}\n"
    setup += "import atexit\natexit.register(print_compilations)\n"  # once the program ended
    before = set(os.listdir(TRACES))
    environment = dict(os.environ, TORCH_LOGS="recompiles,dynamic", TORCH_TRACE=TRACES)
    with tempfile.NamedTemporaryFile("r", suffix=".log") as stderr:
        Path(stderr.name).write_text(f"{MARKER}{path}\n")
        ran = run_forked(
            path,
            cwd=path.parent,
            environment=environment,
            stdout=Path(os.devnull),
            stderr=Path(stderr.name),
            setup=setup,
        )
        text = stderr.read()
    specializations = []
    for name in sorted(set(os.listdir(TRACES)) - before):
        specializations += _specializations(Path(TRACES, name).read_text())
    _, compiles = parse(text)
    return PlainRun(
        compiles=compiles.get(path, []),
        recompiles=parse_recompiles(text).get(path, Logged()),
        dynamic=DYNAMIC.findall(text),
        specializations=specializations,
        stderr=text,
        status=ran.status,
    )


def _specializations(trace: str) -> list[LoggedSpecialization]:
    strings: dict[int, str] = {}
    found = []
    for line in trace.splitlines():
        match = TRACE_LINE.match(line)
        if not match:
            continue
        record = json.loads(match.group(1))
        if "str" in record:
            text, index = record["str"]
            strings[index] = text
        elif "symbolic_shape_specialization" in record:
            data = record["symbolic_shape_specialization"]
            stack = [
                (strings.get(frame["filename"], str(frame["filename"])), frame["line"], frame["name"])
                for frame in data.get("user_stack") or []
            ]
            compile_id = f"{record.get('frame_id')}/{record.get('frame_compile_id')}"
            found.append(LoggedSpecialization(compile_id, list(data["sources"]), str(data["value"]), stack))
    return found
