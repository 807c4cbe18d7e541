"""``gbls check`` as users and CI run it: a real process, real output formats, real exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from torch._dynamo import exc as dynamo_exc

from gbls.engine import words

from ..support import FIXTURES, ROOT
from ..support.schema import gbls_json
from ..support.torchlog import logged_breaks
from ..support.torchlog_recompiles import logged_recompiles
from .test_recompiles import marked, placed

ENGINE = FIXTURES / "engine"
RECOMPILES = FIXTURES / "recompiles"
SWITCH = RECOMPILES / "switch.py"
Runs = dict[str, subprocess.CompletedProcess[str]]


def gbls(*arguments: str, cwd: Path = ROOT) -> subprocess.Popen[str]:
    # This checkout's gbls from any folder, also where it is not installed (the compatibility venvs).
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.Popen(
        [sys.executable, "-m", "gbls", "check", *arguments],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(scope="module")
def runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every CLI run of this module, started together: each pays for its own worker start."""
    started = {
        "json": gbls("--format", "json", str(ENGINE / "deep_helpers.py"), str(ENGINE / "clean.py")),
        "sarif": gbls("--format", "sarif", str(ENGINE / "cross_module.py")),
        "github": gbls("--format", "github", "--python", sys.executable, str(ENGINE / "print_body.py")),
        "clean": gbls(str(ENGINE / "clean.py")),
        "broken": gbls(str(ENGINE / "syntax_error.py"), str(ENGINE / "missing_file.py")),
        "not run": gbls("--no-run-main", str(ENGINE / "main_decorated.py")),
        "from /tmp": gbls(str(ROOT / "examples" / "demo.py"), cwd=Path("/tmp")),
        "limit": gbls(str(RECOMPILES / "switch.py")),
        "recompiles json": gbls("--format", "json", str(RECOMPILES / "shapes.py")),
        "recompiles sarif": gbls("--format", "sarif", str(RECOMPILES / "switch.py")),
        "recompiles github": gbls("--format", "github", str(RECOMPILES / "shapes.py")),
        "ignored": gbls("--ignore", "gb0059", str(ENGINE / "print_body.py")),
        "ignored json": gbls("--format", "json", "--ignore", "GB0170,GB0059", str(ENGINE / "print_body.py")),
        "limit ignored": gbls("--ignore", "recompile", "--format", "sarif", str(RECOMPILES / "switch.py")),
        "own severity sarif": gbls(
            "--format", "sarif", "--severity-overrides", "gb0059=error", str(ENGINE / "cross_module.py")
        ),
        "own severity github": gbls(
            *("--format", "github", "--severity", "information"),
            *("--severity-overrides", "GB0059=hint"),
            *(str(ENGINE / "print_body.py"), str(RECOMPILES / "switch.py")),
        ),
    }
    finished = {}
    for name, process in started.items():
        out, err = process.communicate(timeout=600)
        finished[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return finished


def test_readme_quick_start_output_is_what_gbls_prints(
    record_property: Callable[[str, object], None],
) -> None:
    """On every torch the compatibility matrix runs: the same four breaks as the README shows."""
    record_property("fixture", "examples/demo.py")
    demo = gbls("examples/demo.py")
    out, err = demo.communicate(timeout=600)
    assert demo.returncode == 1, err
    readme = (ROOT / "README.md").read_text()
    printed = out.strip()
    assert printed in readme
    assert printed.splitlines()[0] == (
        "examples/demo.py:8:5: GB0059 Failed to trace builtin operator (print)"
        " [in preprocess via normalize → log_stats]"
    )


def test_json_output(runs: Runs) -> None:
    result = runs["json"]
    assert result.returncode == 1, result.stderr
    document = gbls_json(result.stdout)
    assert document["gbls"] and document["torch"].startswith("2.")
    deep, clean = document["files"]
    assert (deep["status"], clean["status"], clean["breaks"]) == ("ok", "ok", [])
    fused = clean["functions"][0]
    # What compiling it cost: measured, so only its shape is known here (tests/engine/test_costs.py).
    assert [cost["compile_id"] for cost in fused.pop("costs")] == ["0/0"]
    assert fused.pop("cost").startswith("`fused`: 1 compilation, ") and fused.pop("seconds") > 0
    assert fused | {"inputs": None} == {
        "name": "fused",
        "qualname": "fused",
        "line": 5,
        "analysed": True,
        "reason": "",
        "inputs": None,
        "input_source": "module",
        "inlined": None,
        "processes": [],
        "graphs": 1,
        "ops": 4,
        "breaks": 0,
        "suppressed": 0,
        "compilations": 1,
        "elided": [],
        "frames": [
            {
                "frame": "fused",
                "path": str(ENGINE / "clean.py"),
                "line": 4,
                "resumes_at": None,
                "own": True,
                "compile_ids": ["0/0"],
                "compilations": 1,
            }
        ],
        "compiled_at": {"path": str(ENGINE / "clean.py"), "line": 4},
        "untaken": None,
    }
    assert clean["recompiles"] == []
    (brk,) = deep["breaks"]
    assert (brk["function"], brk["gb_id"], brk["count"]) == ("g", "GB0059", 1)
    assert brk["functions"] == ["g"]
    assert brk["url"].endswith("/gb/gb0059.html")
    # On the print, where the cause is: 1-based columns, end exclusive; g splits at `normalize(y)`.
    assert brk["range"] == {"start": {"line": 5, "column": 5}, "end": {"line": 5, "column": 28}}
    assert (brk["split"]["function"], brk["split"]["line"], brk["split"]["column"]) == ("g", 17, 9)
    assert [(f["function"], f["line"], f["column"], f["end_column"]) for f in brk["chain"]] == [
        ("g", 17, 9, 21),
        ("normalize", 11, 12, 24),
        ("log_stats", 5, 5, 28),
    ]
    (logged,) = [entry for entry in logged_breaks(ENGINE / "deep_helpers.py") if entry.stack]
    release = ".".join(document["torch"].split(".")[:2])
    gaps = []
    if logged.explanations:
        # torch's explanation, its keyword-argument flag in words.
        assert brk["explanation"] == words.keywords(logged.explanations[0])
        assert [hint.splitlines()[0] for hint in brk["hints"]] == logged.hints
        assert brk["context"].startswith("builtin print")
    else:  # torch 2.6 says a break in one line of text, Dynamo's classes in it: gbls says what it lacks
        assert (brk["explanation"], brk["hints"], brk["context"]) == (words.builtins(logged.text), [], "")
        assert "torch._dynamo" not in brk["explanation"]
        text_only = f"torch {release} gives this break as text only: gbls names its gb_type from the text"
        gaps.append(f"{text_only}; no explanation or hints")
    if not Path(dynamo_exc.__file__).with_name("graph_break_registry.json").exists():
        registry = f"torch {release} has no graph-break registry"
        gaps.append(f"the GB id is from gbls's table, not from your torch ({registry})")
    assert brk["gaps"] == gaps


def test_sarif_output(runs: Runs) -> None:
    result = runs["sarif"]
    assert result.returncode == 1, result.stderr
    run = json.loads(result.stdout)["runs"][0]
    assert run["tool"]["driver"]["rules"][0]["id"] == "GB0059"
    assert run["tool"]["driver"]["rules"][0]["helpUri"].endswith("gb0059.html")
    (finding,) = run["results"]
    assert finding["level"] == "warning"
    # The print of helpers_lib.py, where the cause is; the chain from cross_module.py beside it.
    location = finding["locations"][0]["physicalLocation"]
    region = location["region"]
    assert location["artifactLocation"]["uri"].endswith("helpers_lib.py")
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == (2, 5, 28)
    related = [r["physicalLocation"]["artifactLocation"]["uri"] for r in finding["relatedLocations"]]
    assert related[0].endswith("cross_module.py") and related[-1].endswith("helpers_lib.py")


def test_github_annotations_with_an_explicit_interpreter(runs: Runs) -> None:
    result = runs["github"]
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(
        "::warning title=gbls (GB0059),file=tests/fixtures/engine/print_body.py,line=7,col=5,"
    )


def test_exit_codes(runs: Runs) -> None:
    assert runs["clean"].returncode == 0
    assert runs["clean"].stdout.splitlines() == [
        "Compile sites:",
        "  tests/fixtures/engine/clean.py:5:5  fused  compiled once, 1 graph, no graph break",
        "Found no graph break in tests/fixtures/engine/clean.py; 1 compile site, analysed.",
    ]
    broken = runs["broken"]
    assert broken.returncode == 2
    assert "syntax_error.py:5:13: error: SyntaxError: expected ':'" in broken.stdout
    assert "missing_file.py" in broken.stdout and "No such file" in broken.stdout


def test_a_compile_site_not_analysed_fails_ci_and_names_the_remedy(runs: Runs) -> None:
    result = runs["not run"]
    assert result.returncode == 2, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("tests/fixtures/engine/main_decorated.py:5:5: not analysed: project: ")
    assert "turn on the runMain setting (`gbls check --run-main`)" in lines[0]
    assert lines[-3] == "Compile sites:" and lines[-2].startswith(
        "  tests/fixtures/engine/main_decorated.py:5:5  project  not analysed: no synthesized input worked"
    )
    assert lines[-1] == (
        "Found no graph break in tests/fixtures/engine/main_decorated.py; 1 compile site, not analysed."
    )


def test_gbls_runs_from_tmp(runs: Runs) -> None:
    """bwrap's private /tmp is where every temporary file goes: /tmp itself must not cover it."""
    result = runs["from /tmp"]
    assert result.returncode == 1, result.stderr
    demo = ROOT / "examples" / "demo.py"
    # Relative to the working directory where it lies below it (a checkout cloned under /tmp).
    shown = demo.relative_to("/tmp") if demo.is_relative_to("/tmp") else demo
    assert (
        f"{shown}:39:16: GB0036 [*] Dynamic shape operator (torch.nonzero) [in Head]"
        in result.stdout.splitlines()
    )


def test_no_interpreter_is_an_error_not_a_crash() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "gbls", "check", "--python", "/nonexistent/python", "examples/demo.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("gbls: ")


def where_pick_recompiles() -> tuple[int, int, int]:
    """Where gbls marks the recompilations of switch.py's ``pick`` on the running torch (line, first
    and last column, 1-based, end exclusive): the check ``mode == "a"`` where torch's log places it
    with columns, ``mode`` in its line where without, else the argument ``mode`` in the def line."""
    text = marked(SWITCH, "pick", 'mode == "a"', "mode", "mode")
    line = 6 if placed(SWITCH, "pick") else 5
    column = SWITCH.read_text().splitlines()[line - 1].index(text) + 1
    return line, column, column + len(text)


def test_a_function_that_hits_the_recompile_limit_fails_the_check(runs: Runs) -> None:
    result = runs["limit"]
    assert result.returncode == 1, result.stderr
    line, column, _ = where_pick_recompiles()
    assert result.stdout.splitlines() == [
        f"tests/fixtures/recompiles/switch.py:{line}:{column}: recompile `pick` recompiled 8 times: "
        "guard `mode == 'a'` failed (the value of `mode` changes between calls); it hit the recompile limit "
        "(8), so from then on `pick` runs in eager mode whenever none of its compiled versions fits the call",
        "Compile sites:",
        "  tests/fixtures/recompiles/switch.py:5:5  pick  compiled 8 times, 8 graphs, no graph break, "
        "8 recompilations (guard `mode == 'a'` failed), hit the recompile limit (8)",
        "Found no graph break in tests/fixtures/recompiles/switch.py; 1 compile site, analysed; "
        "1 recompiling function (1 hit the recompile limit).",
    ]
    # The manual shows it as a torch that places the check with its columns prints it.
    documented = result.stdout.strip().replace(f"switch.py:{line}:{column}:", "switch.py:6:8:")
    assert documented in (ROOT / "docs" / "recompilations.md").read_text()


def test_recompilations_in_json_below_the_limit_do_not_fail_the_check(runs: Runs) -> None:
    result = runs["recompiles json"]
    assert result.returncode == 0, result.stderr
    (file,) = gbls_json(result.stdout)["files"]
    assert [(f["name"], f["compilations"], f["graphs"]) for f in file["functions"]] == [
        ("grow", 2, 2),
        ("fixed", 4, 4),
    ]
    grow, fixed = file["recompiles"]
    assert (grow["function"], grow["count"], grow["problem"], grow["dynamic"]) == ("grow", 1, False, True)
    assert (fixed["function"], fixed["count"], fixed["problem"], fixed["limit"]) == ("fixed", 3, True, None)
    assert fixed["compile_ids"] == ["1/1", "1/2", "1/3"]
    assert fixed["range"] == {"start": {"line": 10, "column": 11}, "end": {"line": 10, "column": 12}}
    assert fixed["guard"] == {
        "text": "tensor 'x' size mismatch at index 0. expected 2, actual 3",
        "kind": "shape",
        "subject": "x",
        "global": False,
        "hint": "",
        "location": None,
        "origin": None,
    }
    assert fixed["fix"]["message"] == "Compile `fixed` with dynamic=True (one graph for every size)"
    assert fixed["url"].startswith("https://docs.pytorch.org/") and "recompilation" in fixed["url"]


def test_recompilations_in_sarif_and_github_annotations(runs: Runs) -> None:
    sarif = runs["recompiles sarif"]
    assert sarif.returncode == 1, sarif.stderr
    run = json.loads(sarif.stdout)["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == ["recompile-limit"]
    (finding,) = run["results"]
    assert (finding["ruleId"], finding["level"]) == ("recompile-limit", "error")
    region = finding["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"], region["endColumn"]) == where_pick_recompiles()
    github = runs["recompiles github"]
    assert github.returncode == 0, github.stderr
    assert github.stdout.startswith(
        "::warning title=gbls (recompile),file=tests/fixtures/recompiles/shapes.py,line=10,col=11,"
    )


def test_an_ignored_code_is_neither_reported_nor_failed_on(runs: Runs) -> None:
    """``--ignore GB0059``: the print torch's log breaks at is not reported, in text and JSON, and the
    check passes; without it (the github run of the same file) it fails. The compile site still
    says what it compiled, as the editor's code lens does."""
    (logged,) = logged_breaks(ENGINE / "print_body.py")
    assert logged.at[1] == 7
    assert runs["github"].returncode == 1
    text = runs["ignored"]
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines() == [
        "Compile sites:",
        "  tests/fixtures/engine/print_body.py:5:5  scale  "
        "2 frames compiled (its code, and its rest after the break at line 7), 2 graphs, "
        "1 graph break (1 ignored)",
        "Found no graph break in tests/fixtures/engine/print_body.py; 1 compile site, analysed.",
    ]
    document = runs["ignored json"]
    assert document.returncode == 0, document.stderr
    (file,) = gbls_json(document.stdout)["files"]
    assert file["breaks"] == []
    assert [(f["name"], f["graphs"], f["breaks"]) for f in file["functions"]] == [("scale", 2, 1)]


def test_an_ignored_recompile_limit_fails_nothing(runs: Runs) -> None:
    assert logged_recompiles(RECOMPILES / "switch.py").limits  # torch hit the limit
    assert runs["limit"].returncode == 1
    result = runs["limit ignored"]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["runs"][0]["results"] == []


def test_a_codes_own_severity_in_sarif_and_github(runs: Runs) -> None:
    """The editor's severity settings: a code's own severity, and the severity of every other, a
    recompile limit hit a step above it."""
    sarif = runs["own severity sarif"]
    assert sarif.returncode == 1, sarif.stderr
    ((rule, level),) = [(r["ruleId"], r["level"]) for r in json.loads(sarif.stdout)["runs"][0]["results"]]
    assert (rule, level) == ("GB0059", "error")  # a warning by default (test_sarif_output's run)
    github = runs["own severity github"]
    assert github.returncode == 1, github.stderr
    assert [line.split(",line=")[0] for line in github.stdout.splitlines()] == [
        "::notice title=gbls (GB0059),file=tests/fixtures/engine/print_body.py",
        "::warning title=gbls (recompile),file=tests/fixtures/recompiles/switch.py",
    ]


def test_what_is_marked_fixable_is_what_fix_fixes(tmp_path: Path) -> None:
    """``[*]`` and the fixable count are the fixes ``--fix`` applies, proven by re-analysis: after
    ``--fix`` nothing it fixed is left, and nothing left is said fixable that it did not fix."""
    for name in ("checked", "fixed"):
        shutil.copy(FIXTURES / "fixes" / "fix_all.py", tmp_path / f"{name}.py")
    checked = gbls(str(tmp_path / "checked.py"))
    fixed = gbls("--fix", str(tmp_path / "fixed.py"))
    said, _ = checked.communicate(timeout=600)
    after, _ = fixed.communicate(timeout=600)
    marked = [line.split()[1] for line in said.splitlines() if " [*] " in line]
    assert marked == ["GB0025", "GB0124"] and "[*] 2 fixable with `gbls check --fix`." in said
    applied = [line.split()[1] for line in after.splitlines() if line.startswith("Fixed ")]
    assert applied == marked, after
    assert " [*] " not in after and "fixable with" not in after
    left = [line.split()[1] for line in after.splitlines() if line.startswith(f"{tmp_path / 'fixed.py'}:")]
    assert left == ["GB0059"]
