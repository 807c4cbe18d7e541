"""``gbls run`` and ``gbls check`` say what they analysed: every compile site with what became of it
(its compilations, graphs and breaks, or why it was not analysed, or the branch the run did not
take), the run as a command that does it when pasted, and counts that say what they count; each
checked against torch's own log of the same run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

from gbls.worker.shared.frames import base_name
from gbls.worker.shared.protocol import Run

from ..support import FIXTURES, ROOT
from ..support.torchlog_runs import logged_run

FASTGEN = FIXTURES / "runs" / "fastgen"
ECHOED = FIXTURES / "runs" / "echoed"
TWOFILE = FIXTURES / "runs" / "twofile"


def gbls(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gbls", arguments[0], "--no-cache", *arguments[1:]],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),  # this checkout's gbls, wherever it runs from
        capture_output=True,
        text=True,
        timeout=600,
    )


def sites(stdout: str) -> list[tuple[str, str, str]]:
    """The compile sites ``gbls`` listed: (where, which, what became of it)."""
    lines = stdout.splitlines()
    listed = lines[lines.index("Compile sites:") + 1 :]
    rows = []
    for line in listed:
        if not line.startswith("  "):
            break
        where, name, state = line.split(maxsplit=2)
        rows.append((where, name, state))
    return rows


def compiled_by_torch(run: Run) -> Counter[str]:
    """How many times torch compiled each function (its resume functions its own) in ``run``."""
    return Counter(
        base_name(c.function) for c in logged_run(run).compiles if c.guarded and "resume" not in c.function
    )


def test_a_fast_generation_run_names_every_compile_site_and_a_branch_not_taken_is_no_failure() -> None:
    """The default run compiles only the decoding step: the draft model's forward (under
    ``if is_speculative:``) and the prefill (under ``if compile_prefill:``) are not compiled, which
    is what this run is, not a failure: it exits 0."""
    result = gbls("run", "generate.py", "--compile", cwd=FASTGEN)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "run `generate.py` (ok): python generate.py --compile"
    torch = compiled_by_torch(
        Run("generate.py", str(FASTGEN / "generate.py"), "", ("--compile",), str(FASTGEN))
    )
    assert set(torch) == {"decode_one_token"}
    assert sites(result.stdout) == [
        (
            "generate.py:60:29",
            "model_forward",
            "not compiled in this run: `if is_speculative:` (line 58) was false",
        ),
        ("generate.py:63:28", "decode_one_token", "compiled once, 1 graph, no graph break"),
        (
            "generate.py:66:23",
            "prefill",
            "not compiled in this run: `if compile_prefill:` (line 65) was false",
        ),
    ]
    assert torch["decode_one_token"] == 1
    assert lines[-1] == (
        "Found no graph break in generate.py and model.py; 3 compile sites: 1 analysed, "
        "2 not compiled in this run."
    )


def test_the_speculative_run_compiles_every_site() -> None:
    arguments = ("--compile", "--draft", "--compile_prefill")
    result = gbls("run", "generate.py", *arguments, cwd=FASTGEN)
    assert result.returncode == 0, result.stdout + result.stderr
    torch = compiled_by_torch(Run("generate.py", str(FASTGEN / "generate.py"), "", arguments, str(FASTGEN)))
    listed = sites(result.stdout)
    assert [name for _, name, _ in listed] == ["model_forward", "decode_one_token", "prefill"]
    for _, name, state in listed:
        times = "once" if torch[name] == 1 else f"{torch[name]} times"
        assert state == f"compiled {times}, 1 graph, no graph break"
    assert result.stdout.splitlines()[-1].endswith("3 compile sites, all analysed.")


def test_the_echoed_command_does_the_run_when_pasted() -> None:
    """Its quoting kept, its variables and its folder included: the script exits 1 otherwise."""
    script = ECHOED / "check_args.py"
    result = gbls(
        "run",
        "--cwd",
        str(ECHOED.relative_to(ROOT)),
        "--env",
        "MODE=a b",
        str(script.relative_to(ROOT)),
        "--label",
        "two words",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    first = result.stdout.splitlines()[0]
    command = "cd tests/fixtures/runs/echoed && MODE='a b' python check_args.py --label 'two words'"
    assert first == f"run `check_args.py` (ok): {command}"
    python = os.path.dirname(sys.executable)
    pasted = subprocess.run(
        ["sh", "-c", command],
        cwd=ROOT,
        env={**os.environ, "PATH": f"{python}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pasted.returncode == 0, pasted.stderr
    assert shlex.split(command)[-3:] == ["check_args.py", "--label", "two words"]


def test_a_count_says_what_it_counts() -> None:
    """One run of train.py finds its model's breaks in model.py: the summary says where they are and
    what reached them, not "in 2 files"."""
    result = gbls("run", "train.py", cwd=TWOFILE)
    assert result.returncode == 1, result.stdout + result.stderr
    logged = logged_run(Run("train.py", str(TWOFILE / "train.py"), "", (), str(TWOFILE)))
    breaks = {entry.at for entry in logged.breaks}
    assert {Path(path).name for path, _ in breaks} == {"model.py"}
    summary = next(line for line in result.stdout.splitlines() if line.startswith("Found "))
    assert summary.startswith(f"Found {len(breaks)} graph breaks in model.py, reached from train.py; ")
    (site,) = sites(result.stdout)
    assert site[:2] == ("train.py:9:13", "TinyNet")
