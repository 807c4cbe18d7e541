"""``gbls check``'s pieces that run no analysis: the README's test command is what CI runs, and the
files a folder holds."""

from __future__ import annotations

import re
from pathlib import Path

from ..support import ROOT


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)\n```", readme, re.S)
    quick_start = [block for block in blocks if "\n" not in block]
    assert quick_start[0].endswith("gbls check examples/demo.py")
    test_command = quick_start[1]
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_folders_are_walked_for_files_that_compile(tmp_path: Path) -> None:
    from gbls.cli import checked_files

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "model.py").write_text("import torch\nf = torch.compile(lambda x: x)\n")
    (tmp_path / "pkg" / "plain.py").write_text("x = 1\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "site.py").write_text("torch.compile\n")
    assert list(checked_files([str(tmp_path)])) == [str(tmp_path / "pkg" / "model.py")]
