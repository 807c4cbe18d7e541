"""The GitHub Action (action.yml): its shell steps run here as the runner runs them, with the inputs'
defaults, on a small project; GitHub's own step (the SARIF upload) is only read."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import yaml

from ..support import FIXTURES

ROOT = Path(__file__).parents[2]
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def job_python(folder: Path) -> Path:
    """A job's Python with the project's dependencies (torch among them) but no gbls: a virtual
    environment that sees this interpreter's packages, gbls left out (an installed gbls finds
    its checkout through a .pth file of the packages' folder, which is not read from there)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    packages = subprocess.run(
        [str(folder / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(packages) / "job.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return folder / "bin" / "python"


def action_checkout(folder: Path) -> Path:
    """What the runner checks out of the action's repository, as far as installing gbls needs it."""
    folder.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "gbls", folder / "gbls", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def evaluated(value: str, known: dict[str, str]) -> str:
    """``value`` with each ``${{ name }}`` the runner would put in it."""
    return EXPRESSION.sub(lambda match: known[match.group(1)], value)


def test_the_action_annotates_writes_sarif_and_fails_as_gbls_check(tmp_path: Path) -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    known = {f"inputs.{name}": str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    known["inputs.python"] = str(job_python(tmp_path / "venv"))
    path = action_checkout(tmp_path / "action")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.copy(FIXTURES / "engine" / "print_body.py", workspace)
    outputs = tmp_path / "github_output"
    environment = dict(
        os.environ,
        GITHUB_ACTION_PATH=str(path),
        GITHUB_OUTPUT=str(outputs),
        # The runner's pip reaches PyPI; here gbls's dependencies are installed already and nothing
        # may download, setuptools included (so no isolated build).
        PIP_NO_INDEX="1",
        PIP_NO_BUILD_ISOLATION="0",
    )
    environment.pop("PYTHONPATH", None)
    ran: dict[str, subprocess.CompletedProcess[str]] = {}
    for step in action["runs"]["steps"]:
        if "uses" in step:
            continue
        assert "${{" not in step["run"]  # expressions go through env: never spliced into a script
        assert step["shell"] == "bash"
        env = {name: evaluated(str(value), known) for name, value in step.get("env", {}).items()}
        completed = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=workspace,
            env=environment | env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        ran[step["name"]] = completed
        for line in outputs.read_text().splitlines() if outputs.exists() else []:
            name, _, value = line.partition("=")
            known[f"steps.{step.get('id')}.outputs.{name}"] = value
    install, check, fail = ran.values()
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed gbls" in install.stdout

    # The annotations, the SARIF file and the status, as gbls check gives them for the file.
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("::warning title=gbls (GB0059),file=print_body.py,line=7,col=5,")
    sarif: dict[str, Any] = json.loads((workspace / "gbls.sarif").read_text())
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "GB0059"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "print_body.py"
    assert known["steps.check.outputs.exit-code"] == "1"
    assert fail.returncode == 1

    (upload,) = [step for step in action["runs"]["steps"] if "uses" in step]
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "${{ inputs.sarif-file }}"
