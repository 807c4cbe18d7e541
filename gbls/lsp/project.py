"""What reaches a file the editor opens, beyond what ``engine.reach`` finds for both front ends: the
runs a workspace folder configures, and the project's tests that import the file."""

from __future__ import annotations

from ..engine import reaching_tests, runs
from ..engine.model import FileView
from ..engine.sources import TextOf
from ..runtime.session import entry_of
from ..worker.shared.protocol import Run


def starting(path: str, folder: str) -> Run | None:
    """The configured run that starts the script ``path`` (not one that runs whatever file is open,
    ``${file}``), if any: its result is the script's."""
    return next((run for run in runs.configured(folder).runs if entry_of(run) == path), None)


def unreached(view: FileView | None, path: str) -> bool:
    """Whether a compiled function of ``path`` is not analysed in ``view``, what reached the file."""
    return view is not None and any(not f.analysed for f in view.functions if f.path == path)


def tests_run(path: str, folder: str, text_of: TextOf) -> Run | None:
    """The run of the project's tests that import ``path`` (``reaching_tests``), if it has any."""
    tests = reaching_tests.tests_of([path], folder, text_of)
    return reaching_tests.test_run(folder, tests) if tests else None
