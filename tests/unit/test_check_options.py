"""``gbls check``'s options around CI and hooks that need no analysis to test: the files pre-commit
names, a baseline read before anything runs, the hooks pre-commit reads."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from gbls.cli import checked_files

from ..support.schema import gbls_json

ROOT = Path(__file__).parents[2]


def gbls(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gbls", *arguments],
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )


def files(folder: Path) -> tuple[Path, Path]:
    (folder / "model.py").write_text("import torch\nf = torch.compile(lambda x: x)\n")
    (folder / "plain.py").write_text("x = 1\n")
    return folder / "model.py", folder / "plain.py"


def test_only_compiling_leaves_out_the_named_files_that_cannot_compile(tmp_path: Path) -> None:
    model, plain = files(tmp_path)
    assert list(checked_files([str(model), str(plain)])) == [str(model), str(plain)]
    assert list(checked_files([str(model), str(plain)], only_compiling=True)) == [str(model)]


def test_with_nothing_to_analyse_no_worker_starts(tmp_path: Path) -> None:
    _, plain = files(tmp_path)
    # An interpreter that does not exist: starting a worker would fail.
    result = gbls(
        "check", "--python", "/nonexistent", "--only-compiling", "--format", "json", str(plain), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert gbls_json(result.stdout)["files"] == []


def test_a_baseline_is_read_before_anything_is_analysed(tmp_path: Path) -> None:
    model, _ = files(tmp_path)
    (tmp_path / "gbls-baseline.json").write_text("[]")
    for arguments, said in [
        (
            ["--baseline", "missing.json"],
            "gbls: cannot read the baseline missing.json: No such file or directory",
        ),
        (
            ["--baseline", "gbls-baseline.json"],
            "gbls: gbls-baseline.json is not a gbls baseline of format version 1",
        ),
        (["--update-baseline"], "gbls: --update-baseline needs the baseline file: --baseline FILE"),
    ]:
        result = gbls("check", "--python", "/nonexistent", *arguments, str(model), cwd=tmp_path)
        assert (result.returncode, result.stdout) == (2, ""), result.stderr
        assert result.stderr.startswith(said)


def test_the_pre_commit_hooks_run_gbls_check(tmp_path: Path) -> None:
    """Each hook's command, run as pre-commit runs it (its entry, then the changed files)."""
    hooks = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"gbls-check", "gbls-check-project"}
    for hook in hooks.values():
        assert (hook["language"], hook["types"], hook["require_serial"]) == ("system", ["python"], True)
        assert shlex.split(hook["entry"])[:2] == ["gbls", "check"]
    assert hooks["gbls-check-project"]["pass_filenames"] is False
    _, plain = files(tmp_path)
    command = shlex.split(hooks["gbls-check"]["entry"])[1:]
    result = gbls(*command, "--python", "/nonexistent", str(plain), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "Found no graph break: nothing to analyse.\n"), (
        result.stderr
    )
