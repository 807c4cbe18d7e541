"""What every layer loads: it imports neither torch nor pytest-lsp, so that tests/unit runs where
neither is installed. The tests of a layer that runs torch (through the warm worker, the server or
``gbls check``) are marked ``torch`` here, by their folder: ``pytest -m "not torch"`` leaves them out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Every `gbls check` and server the tests start analyses afresh, and writes no `.gbls_cache` into the
# repository: the tests of the persistent cache name their own folder and take this out.
os.environ["GBLS_NO_CACHE"] = "1"

TESTS = Path(__file__).parent
# tests/editors marks its own: its TypeScript tests need node, not torch.
TORCH_LAYERS = {"engine", "lsp", "sandbox", "projects"}
# pytest's own fixture for running pytest on small projects (gbls's plugin's tests).
pytest_plugins = ["pytester"]


# The files that take longest, longest first (the sums of their tests' times in a run of the whole
# suite). Under pytest-xdist each process takes whole files in this order, so that the processes end
# together rather than one starting the longest file when the others are done.
LONGEST_FIRST = (
    "sandbox/test_sandbox.py",
    "editors/test_vscode.py",
    "engine/test_fidelity.py",
    "projects/test_test_runs.py",
    "sandbox/test_spawned.py",
    "lsp/test_hover.py",
    "engine/test_timeouts.py",
    "engine/test_cuda.py",
    "sandbox/test_loopback.py",
    "projects/test_opened.py",
    "engine/test_hatches.py",
    "engine/test_cache.py",
    "engine/test_traces.py",
    "engine/test_cli.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.relative_to(TESTS).parts[0] in TORCH_LAYERS:
            item.add_marker(pytest.mark.torch)
    # A stable sort after pytest-randomly's shuffle: the order within and among the other files stays random.
    items.sort(key=lambda item: _rank(item.path.relative_to(TESTS).as_posix()))


def _rank(path: str) -> int:
    return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under pytest-xdist (``-n``), whole files to each process, in the order above: a file's module
    and session fixtures (a server, a CLI run of every fault) start once, in one process."""
    from xdist.scheduler import LoadFileScheduling  # type: ignore[import-untyped]

    config.option.loadscopereorder = False  # xdist's own order (most tests first) would put the e2e test last
    return LoadFileScheduling(config, log)
