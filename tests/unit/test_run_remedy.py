"""The run gbls offers to add for a script that stopped for want of how to run it: prefilled from
the README, inserted into launch.json (comments and other configurations kept) or pyproject.toml,
and read back by ``runs`` as the same run."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from gbls.engine import run_remedy, runs
from gbls.engine.model import FailureKind, failure_report
from gbls.engine.sources import Sources, read_source
from gbls.lsp.actions import run_actions
from gbls.worker.shared.protocol import Run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

README = """# nanoproject

Train it:

```sh
$ python train.py --config configs/small.json \\
    --steps 3   # a short run
python -m scripts.base_train --depth=4
CUDA_VISIBLE_DEVICES=0 python3 other.py -x
```

    python train.py --not-a-code-block
"""


def project(tmp_path: Path, readme: str = README, name: str = "README.md") -> Path:
    (tmp_path / name).write_text(readme)
    (tmp_path / "scripts").mkdir()
    for script in ("train.py", "other.py", "plain.py", "scripts/base_train.py"):
        (tmp_path / script).write_text("")
    return tmp_path


def test_the_readme_s_command_for_the_script_prefills_the_run(tmp_path: Path) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "train.py"), as_module=False)
    assert run == Run(
        "train.py",
        str(folder / "train.py"),
        "",
        ("--config", "configs/small.json", "--steps", "3"),
        str(folder),
    )
    other = run_remedy.suggested(str(folder), str(folder / "other.py"), as_module=False)
    assert (other.args, other.env) == (("-x",), (("CUDA_VISIBLE_DEVICES", "0"),))


def test_a_module_the_readme_starts_with_python_m_is_a_module_run(tmp_path: Path) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "scripts" / "base_train.py"), as_module=False)
    assert (run.module, run.args, run.cwd) == ("scripts.base_train", ("--depth=4",), str(folder))


def test_a_script_the_readme_does_not_name_gets_no_arguments(tmp_path: Path) -> None:
    folder = project(tmp_path)
    plain = run_remedy.suggested(str(folder), str(folder / "plain.py"), as_module=False)
    assert (plain.script, plain.args) == (str(folder / "plain.py"), ())
    module = run_remedy.suggested(str(folder), str(folder / "scripts" / "base_train.py"), as_module=True)
    (tmp_path / "README.md").unlink()
    bare = run_remedy.suggested(str(folder), str(folder / "scripts" / "base_train.py"), as_module=True)
    assert module.module == bare.module == "scripts.base_train" and bare.args == ()


def test_a_restructuredtext_readme_s_code_blocks_are_read(tmp_path: Path) -> None:
    folder = project(tmp_path, "Usage::\n\n    python train.py --fast\n\nText.\n", "README.rst")
    run = run_remedy.suggested(str(folder), str(folder / "train.py"), as_module=False)
    assert run.args == ("--fast",)


@pytest.mark.parametrize(
    ("kind", "message", "needs"),
    [
        (
            "exit",
            "the program exited with status 2: the following arguments are required: --config "
            "(argparse; usage in the output)",
            True,
        ),
        ("exit", "the program exited with status 1", False),
        ("raised", "FileNotFoundError: [Errno 2] No such file or directory: 'configurator.py'", True),
        ("raised", "ValueError: bad", False),
        ("import", "ModuleNotFoundError: No module named 'scripts.base_train'", True),
        ("import", "ModuleNotFoundError: No module named 'numpyy'", False),
        ("memory", "ran out of memory", False),
    ],
)
def test_the_failures_a_run_remedies(tmp_path: Path, kind: str, message: str, needs: bool) -> None:
    assert run_remedy.needs_a_run(kind, message, str(project(tmp_path))) == needs


def inserted(text: str | None, run: Run, folder: Path) -> str:
    found = run_remedy.launch_insertion(text, run, str(folder))
    assert found is not None
    at, new = found
    return (text or "")[:at] + new + (text or "")[at:]


def written_launch(folder: Path, text: str) -> runs.Runs:
    (folder / ".vscode").mkdir(exist_ok=True)
    (folder / ".vscode" / "launch.json").write_text(text)
    return runs.from_launch_json(str(folder))


def test_a_new_launch_json_holds_the_run(tmp_path: Path) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "train.py"), as_module=False)
    read = written_launch(folder, inserted(None, run, folder))
    assert read.problems == () and read.runs == (run,)


def test_an_existing_launch_json_keeps_its_configurations_and_comments(tmp_path: Path) -> None:
    folder = project(tmp_path)
    before = """{
    // VS Code's launch file, with comments
    "version": "0.2.0",
    "configurations": [
        /* attach to a server */
        {"name": "attach", "type": "debugpy", "request": "attach", "connect": {"port": 5678}},
        {"name": "other", "type": "debugpy", "request": "launch",
         "program": "${workspaceFolder}/other.py", // a comment after the trailing comma
        },
    ],
}
"""
    run = run_remedy.suggested(str(folder), str(folder / "scripts" / "base_train.py"), as_module=True)
    after = inserted(before, run, folder)
    for line in before.splitlines():
        assert line in after.splitlines()  # every line as it was
    read = written_launch(folder, after)
    assert read.problems == ()
    assert [r.name for r in read.runs] == ["-m scripts.base_train", "other"]
    assert read.runs[0] == run


@pytest.mark.parametrize(
    "before",
    [
        '{"version": "0.2.0"}',
        '{"version": "0.2.0", "configurations": []}',
        "{}",
        '{"name": "configurations", "configurations": [ // none\n]}',
    ],
)
def test_a_launch_json_without_configurations_gets_them(tmp_path: Path, before: str) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "train.py"), as_module=False)
    assert written_launch(folder, inserted(before, run, folder)).runs == (run,)


@pytest.mark.parametrize("before", ["[]", '{"configurations": {}}', "{not json"])
def test_a_launch_json_of_another_shape_is_left_alone(tmp_path: Path, before: str) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "train.py"), as_module=False)
    assert run_remedy.launch_insertion(before, run, str(folder)) is None


@pytest.mark.parametrize(
    "before",
    [
        None,
        "",
        '[project]\nname = "x"',
        '[project]\nname = "x"\n\n[[tool.gbls.run]]\nname = "first"\nscript = "other.py"\n\n'
        "[tool.ruff]\nline-length = 100\n",
    ],
)
def test_the_run_appended_to_pyproject_toml_reads_back(tmp_path: Path, before: str | None) -> None:
    folder = project(tmp_path)
    run = run_remedy.suggested(str(folder), str(folder / "other.py"), as_module=False)
    at, new = run_remedy.pyproject_insertion(before, run, str(folder))
    text = (before or "")[:at] + new + (before or "")[at:]
    tomllib.loads(text)  # valid TOML
    (folder / "pyproject.toml").write_text(text)
    read = runs.from_pyproject(str(folder))
    assert read.problems == () and read.runs[-1] == run


def offered(
    folder: Path, script: Path, kind: FailureKind, message: str, executed: tuple[str, ...]
) -> list[str]:
    """The titles of the code actions offered on the failure diagnostic of ``script``."""
    report = dataclasses.replace(failure_report(str(script), kind, message), executed=executed)
    diagnostic = lsp.Diagnostic(
        range=lsp.Range(lsp.Position(0, 0), lsp.Position(0, 1)),
        message=message,
        source="gbls",
        data={"kind": "failure", "failure": kind},
    )
    found = run_actions(str(script), diagnostic, lambda _: report, Sources(read_source), [str(folder)])
    return [action.title for action in found]


def test_a_script_of_a_package_that_cannot_import_it_is_offered_a_module_run(tmp_path: Path) -> None:
    folder = project(tmp_path, "")
    (folder / "nanopkg").mkdir()
    (folder / "nanopkg" / "__init__.py").write_text("")
    script = folder / "scripts" / "base_train.py"
    missing = "ModuleNotFoundError: No module named 'nanopkg'"
    assert offered(folder, script, "import", missing, (str(script),)) == [
        "Add a run to .vscode/launch.json: python -m scripts.base_train",
        "Add a run to pyproject.toml ([[tool.gbls.run]]): python -m scripts.base_train",
    ]
    # Another file's analysis failed there: the file is no script to run.
    assert offered(folder, script, "import", missing, (str(folder / "train.py"), str(script))) == []
    # A library that is not installed is no matter of how the script is started.
    assert (
        offered(folder, script, "import", "ModuleNotFoundError: No module named 'numpyy'", (str(script),))
        == []
    )
