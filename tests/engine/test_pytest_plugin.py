"""gbls's pytest plugin on a small project (tests/fixtures/testing): its checks, its marker and its
baseline, in pytest runs of the project's own tests; what they report checked against torch's logs."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from ..support import FIXTURES
from ..support.plugin_runs import failures, install_plugin
from ..support.torchlog import LoggedBreak, logged_breaks
from ..support.torchlog_recompiles import logged_recompiles

MODEL = FIXTURES / "testing" / "model.py"
LIBRARY = FIXTURES / "testing" / "talkative.py"

TESTS = """
import gbls
import pytest
import torch

import model

TORCH_COMPILE = torch.compile


def test_clean(graph_breaks):
    graph_breaks(model.clean, torch.randn(8))


def test_print():
    gbls.assert_no_graph_breaks(model.chatty, torch.randn(8))


def test_library_break():
    gbls.assert_no_graph_breaks(model.loud, torch.randn(8))


def test_library_break_in_own_code_only():
    gbls.assert_no_graph_breaks(model.loud, torch.randn(8), own_code_only=True)


def test_same_mode():
    gbls.assert_no_recompiles(model.pick, [(torch.randn(8), "a"), (torch.randn(8), "a")])


def test_another_mode():
    gbls.assert_no_recompiles(model.pick, [(torch.randn(8), "a"), (torch.randn(8), "b")])


@pytest.mark.fullgraph
def test_marked_clean():
    assert torch.compile(model.clean, fullgraph=True)(torch.ones(2)).tolist() == [3.0, 3.0]


@pytest.mark.fullgraph
def test_marked_print():
    torch.compile(model.chatty, fullgraph=True)(torch.randn(8))


def test_torch_is_itself_after_a_check():
    gbls.assert_no_graph_breaks(model.clean, torch.randn(8))
    assert torch.compile is TORCH_COMPILE
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The project: its model and its tests, with talkative.py as a library installed outside it."""
    library = tmp_path / "site-packages"
    library.mkdir()
    shutil.copy(LIBRARY, library)
    shutil.copy(MODEL, pytester.path)
    pytester.makepyfile(test_model=TESTS)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    install_plugin(monkeypatch, tmp_path / "entry-points", library)
    return pytester.path


def run(pytester: pytest.Pytester, *arguments: str) -> tuple[pytest.RunResult, dict[str, str]]:
    report = pytester.path / "report.xml"
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", f"--junitxml={report}", *arguments, timeout=600
    )
    return result, failures(report)


def logged_chain(entry: LoggedBreak) -> list[tuple[str, int, str]]:
    """A break's stack in torch's log, below the module's own code that called the compiled function."""
    return [(Path(f.path).name, f.line, f.function) for f in entry.stack if f.function != "<module>"]


def chain_of(message: str) -> list[tuple[str, int, str]]:
    """The chain a failure message lists, as (file name, line, function)."""
    found = re.findall(r"^    (\S+):(\d+):\d+ in (\w+)$", message, re.M)
    return [(Path(path).name, int(line), function) for path, line, function in found]


def test_the_checks_fail_with_each_break_and_recompilation_as_gbls_reports_it(
    pytester: pytest.Pytester, project: Path
) -> None:
    result, failed = run(pytester)
    assert {name for name, message in failed.items() if message} == {
        "test_print",
        "test_library_break",
        "test_another_mode",
        "test_marked_print",
    }, result.stdout.str()
    assert len(failed) == 9

    logged = {logged_chain(e)[0][2]: e for e in logged_breaks(MODEL) if e.stack}
    printed = logged["chatty"]
    message = failed["test_print"]
    assert "GraphBreaksFound: gbls: 1 graph break in `chatty`:" in message
    assert f"GB0059 {printed.gb_types[0]} (print)" in message
    # The location and the whole chain, as torch's log has them, the root cause last.
    assert chain_of(message) == logged_chain(printed)
    assert chain_of(message)[-1] == ("model.py", 11, "log_stats")
    assert f"hint: {printed.hints[0]}" in message
    assert chain_of(failed["test_marked_print"]) == chain_of(message)
    assert "in what the test compiled" in failed["test_marked_print"]

    assert chain_of(failed["test_library_break"]) == logged_chain(logged["loud"])
    assert chain_of(failed["test_library_break"])[-1] == ("talkative.py", 6, "shout")

    (recompiled,) = logged_recompiles(MODEL).recompiles
    message = failed["test_another_mode"]
    assert "RecompilesFound: gbls: `pick` recompiled:" in message
    assert "recompile `pick` recompiled once: guard `mode == 'a'` failed" in message
    (reason,) = recompiled.reasons
    if reason.located is not None:  # where torch says the guard was installed (2.10+)
        assert f"the guard was installed at model.py:{reason.located[1]}:" in message


def test_a_baseline_fails_only_on_what_it_does_not_hold(pytester: pytest.Pytester, project: Path) -> None:
    result, failed = run(pytester, "--gbls-baseline=gbls-baseline.json", "--gbls-update-baseline")
    assert not any(failed.values()), result.stdout.str()
    result.stdout.fnmatch_lines(["gbls: wrote 3 entries to gbls-baseline.json"])
    entries = json.loads((project / "gbls-baseline.json").read_text())["entries"]
    assert [(e["path"], e["function"], e["type"]) for e in entries] == [
        ("model.py", "chatty", "Failed to trace builtin operator"),
        ("model.py", "loud", "Failed to trace builtin operator"),
        ("model.py", "pick", "recompile"),
    ]
    assert [e["code"] for e in entries[:2]] == ['print("stats", x.shape)', 'print("shouting", x.shape)']

    # The print fixed, a new one in clean, and every line two lines further down.
    source = (project / "model.py").read_text()
    source = source.replace('    print("stats", x.shape)\n', "")
    source = source.replace("def clean(x):\n", 'def clean(x):\n    print("new")\n')
    (project / "model.py").write_text("\n\n" + source)
    result, failed = run(pytester, "--gbls-baseline=gbls-baseline.json")
    assert {name for name, message in failed.items() if message} == {
        "test_clean",
        "test_marked_clean",
        "test_torch_is_itself_after_a_check",
    }, result.stdout.str()
    assert "GraphBreaksFound: gbls: 1 graph break in `clean`:" in failed["test_clean"]
    assert chain_of(failed["test_clean"]) == [("model.py", 26, "clean")]
    result.stdout.fnmatch_lines(
        [
            "gbls: gbls-baseline.json: 1 entry no longer occurs; `--gbls-update-baseline` removes it:",
            '  model.py: Failed to trace builtin operator in chatty (print("stats", x.shape))',
        ]
    )


def printing(x: Any) -> Any:
    print("printing")
    return x + 1


def hooks() -> dict[tuple[str, str], int]:
    """Every function and class of torch and Dynamo, and of Dynamo's classes, by where it is: what the
    capture's hooks replace."""
    import torch

    found = {("torch", "compile"): id(torch.compile)}
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith("torch._dynamo"):
            continue
        owners = [(name, module)] + [
            (f"{name}.{value.__name__}", value)
            for value in vars(module).values()
            if isinstance(value, type) and value.__module__ == name
        ]
        for where, owner in owners:
            found |= {(where, key): id(value) for key, value in vars(owner).items() if callable(value)}
    return found


def test_a_check_leaves_torch_as_it_found_it() -> None:
    """In the test's own process, as the plugin checks: after it, torch is as it was before it."""
    import torch

    from gbls.testing.checks import GraphBreaksFound, assert_no_graph_breaks

    torch.compile(printing, backend="eager")(torch.randn(2))  # Dynamo's own imports, done
    before = hooks()
    with pytest.raises(GraphBreaksFound, match="1 graph break in `printing`"):
        assert_no_graph_breaks(printing, torch.randn(2))
    assert hooks() == before
