"""The worker's capture in the calling process, around a block of the project's own test.

The capture (``analysis.capture``), the merge of its events (``supervisor.record.result_of``) and
the engine's report building are the ones ``gbls check`` uses; only where they run differs: here,
in the test's own process, with no fork and no sandbox. Torch is put back as it was afterwards,
and Dynamo's caches are cleared on both sides, so that the block compiles afresh and the tests
after it never run code compiled for the capture's backend.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import torch
import torch._dynamo

from ..engine.model import FileReport
from ..engine.report import build
from ..engine.sources import read_source
from ..worker.analysis.capture import Capture
from ..worker.shared.events import DoneEvent, Event, TargetEvent
from ..worker.shared.protocol import Request
from ..worker.supervisor.record import result_of


class Captured:
    """What ran under the capture: its events, folded into one report per file of compiled code."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.seconds = 0.0

    def reports(self) -> list[FileReport]:
        events = [*self.events, DoneEvent()]
        reports = []
        for path in dict.fromkeys(e.path for e in events if isinstance(e, TargetEvent)):
            # The merge keeps the targets of the file it is given (by their code, or where they were
            # compiled): each other file's targets are in that file's report, not in this one too.
            own = [e for e in events if not isinstance(e, TargetEvent) or e.path == path]
            source = read_source(path) or ""
            request = Request(id="pytest", path=path, source=source)
            result = result_of(
                request,
                own,
                ended_by="",
                status=0,
                output="",
                torch_version=torch_version(),
                seconds=self.seconds,
            )
            reports.append(build(path, source, result, (), read_source))
        return reports


def torch_version() -> str:
    return torch.__version__.split("+")[0]


def capturing_now() -> bool:
    return isinstance(getattr(torch.compile, "__self__", None), Capture)


@contextlib.contextmanager
def capturing() -> Iterator[Captured]:
    """Run the block with every ``torch.compile`` in it on the capture's backend, its breaks,
    compilations and recompilations captured; torch as it was afterwards."""
    if capturing_now():
        raise RuntimeError("gbls is capturing already: one check of gbls's cannot run inside another")
    captured = Captured()
    torch._dynamo.reset()
    capture = Capture(captured.events.append).install()
    started = time.monotonic()
    try:
        yield captured
    finally:
        captured.seconds = round(time.monotonic() - started, 3)
        capture.uninstall()
        torch._dynamo.reset()
