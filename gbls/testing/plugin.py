"""gbls's pytest plugin, the ``pytest11`` entry point ``gbls``.

pytest loads it in every run where gbls is installed, so it only registers what a test can ask
for: the ``graph_breaks`` fixture, the ``fullgraph`` marker and the ``--gbls-*`` options. It
imports neither torch nor the checks (``checks``) until a test uses one of them, and a run that
uses none runs as it would without gbls.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import pytest

from ..engine import baseline
from . import state

MARKER = (
    "fullgraph(own_code_only=False): fail the test with every graph break, as gbls reports it, in what "
    "it compiles (own_code_only: only breaks whose root cause is the project's own code)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gbls", "graph breaks and recompilations of torch.compile (gbls)")
    group.addoption(
        "--gbls-baseline",
        metavar="FILE",
        help="fail only on graph breaks and recompilations that the gbls baseline FILE does not hold",
    )
    group.addoption(
        "--gbls-update-baseline",
        action="store_true",
        help="fail on none: write what gbls's checks find to the --gbls-baseline file",
    )
    parser.addini(
        "gbls_baseline", "the gbls baseline of the tests, relative to the rootdir (--gbls-baseline)"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    option = config.getoption("gbls_baseline")
    ini = config.getini("gbls_baseline")
    path = config.invocation_params.dir / option if option else config.rootpath / ini if ini else None
    update = bool(config.getoption("gbls_update_baseline"))
    if update and path is None:
        raise pytest.UsageError("--gbls-update-baseline needs a baseline file: --gbls-baseline FILE")
    try:
        project = state.Project(config.rootpath, path, update)
    except baseline.BaselineError as error:
        raise pytest.UsageError(f"gbls: {error}") from None
    state.start(project)


def pytest_unconfigure(config: pytest.Config) -> None:
    state.start(None)


@pytest.fixture
def graph_breaks() -> Callable[..., Any]:
    """``graph_breaks(fn, *args, own_code_only=False, **kwargs)``: ``gbls.assert_no_graph_breaks``."""
    from .checks import assert_no_graph_breaks

    return assert_no_graph_breaks


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    marker = item.get_closest_marker("fullgraph")
    if marker is None:
        return (yield)
    from .checks import fullgraph

    with fullgraph(**marker.kwargs):
        return (yield)


def pytest_sessionfinish(session: pytest.Session) -> None:
    project = state.current()
    if project.update and project.baseline_path is not None:
        baseline.dump(str(project.baseline_path), project.updated())


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    project = state.current()
    path = project.baseline_path
    if path is None:
        return
    from ..formats import common, text  # only here: text imports the fixes' catalogue, which takes a while

    if project.update:
        terminalreporter.write_line(
            f"gbls: wrote {len(project.updated())} entries to {common.relative(str(path))}"
        )
        return
    removable = project.removable()
    if removable:
        terminalreporter.write_line(f"gbls: {text.removable(str(path), removable, '--gbls-update-baseline')}")
