"""How a project is run: the runs its users configured, read into the worker's ``Run``.

Three sources, one meaning (a script or a module, its arguments, its working directory, extra
environment variables):

- the command line, shaped like ``python`` and ``coverage run`` (``gbls run [OPTIONS] SCRIPT ARGS``,
  ``gbls run [OPTIONS] -m MODULE ARGS``), read by the CLI;
- ``[[tool.gbls.run]]`` tables in the project's ``pyproject.toml``;
- the Python launch configurations in ``.vscode/launch.json`` (``program``/``module``, ``args``,
  ``cwd``, ``env``, with ``${workspaceFolder}``, ``${file}`` and friends).

A run's working directory is the workspace folder unless it says otherwise, as VS Code's "Run
Python File" has it. Bad input loses nothing: each problem is said, with its file and entry, and
the other runs are still read.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..worker.shared.protocol import Run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PYPROJECT = "pyproject.toml"
LAUNCH = os.path.join(".vscode", "launch.json")
RUN_KEYS = {"name", "script", "module", "args", "cwd", "env"}


@dataclass(frozen=True)
class Runs:
    """The runs a folder configures, and what could not be read (each a sentence naming its place)."""

    runs: tuple[Run, ...] = ()
    problems: tuple[str, ...] = ()


def entry_of(run: Run) -> str:
    """The file a run starts with: its script, or the module's file ``python -m`` finds first (in the
    working directory), or "" for a module of an installed package."""
    if run.script:
        return run.script
    base = os.path.join(run.cwd, *run.module.split("."))
    for candidate in (base + ".py", os.path.join(base, "__main__.py")):
        if os.path.isfile(candidate):
            return candidate
    return ""


def command_line(
    folder: str,
    target: str,
    args: list[str],
    module: bool,
    cwd: str = "",
    env: Mapping[str, str] | None = None,
) -> Run:
    """The run ``gbls run [-m] TARGET ARGS`` describes, from ``folder``: a script relative to it."""
    where = os.path.abspath(os.path.join(folder, cwd or "."))
    env = env or {}
    if module:
        return Run(name=f"-m {target}", module=target, args=tuple(args), cwd=where, env=tuple(env.items()))
    script = os.path.abspath(os.path.join(folder, target))
    name = os.path.relpath(script, where) if _inside(script, where) else script
    return Run(name=name, script=script, args=tuple(args), cwd=where, env=tuple(env.items()))


def shell_command(run: Run, here: str) -> str:
    """The run as a command that does it when pasted in a shell in ``here``: ``cd DIR && NAME=VALUE
    python SCRIPT ARGS``, each word quoted as the shell needs."""
    script = os.path.relpath(run.script, run.cwd) if _inside(run.script, run.cwd) else run.script
    words = [
        *(f"{name}={shlex.quote(value)}" for name, value in run.env),
        shlex.join(["python", *(["-m", run.module] if run.module else [script]), *run.args]),
    ]
    if os.path.abspath(run.cwd) != os.path.abspath(here):
        folder = os.path.relpath(run.cwd, here) if _inside(run.cwd, here) else run.cwd
        words.insert(0, f"cd {shlex.quote(folder)} &&")
    return " ".join(words)


def configured(folder: str, current_file: str = "") -> Runs:
    """The runs of ``folder``'s pyproject.toml, then its launch configurations; ``current_file``: what
    ``${file}`` means (the editor's file), or "" where there is none (such a configuration is left out)."""
    found = from_pyproject(folder)
    launch = from_launch_json(folder, current_file)
    names = {run.name for run in found.runs}
    # A launch configuration that says what pyproject.toml says is one run; one of the same name
    # that says otherwise keeps its place, named apart.
    extra = [
        run if run.name not in names else dataclasses.replace(run, name=f"{run.name} (launch.json)")
        for run in launch.runs
        if run not in found.runs
    ]
    return Runs(found.runs + tuple(extra), found.problems + launch.problems)


def from_pyproject(folder: str) -> Runs:
    path = os.path.join(folder, PYPROJECT)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return Runs()
    except (OSError, tomllib.TOMLDecodeError) as error:
        return Runs(problems=(f"{path}: cannot be read ({error})",))
    tables = data.get("tool", {}).get("gbls", {}).get("run", [])
    if not isinstance(tables, list):
        return Runs(problems=(f"{path}: [tool.gbls.run] must be an array of tables ([[tool.gbls.run]])",))
    runs: list[Run] = []
    problems: list[str] = []
    for number, table in enumerate(tables, start=1):
        where = f"{path}: run {number}"
        if not isinstance(table, dict):
            problems.append(f"{where}: not a table")
            continue
        unknown = sorted(set(table) - RUN_KEYS)
        if unknown:
            problems.append(f"{where}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        run = _run(folder, where, table, problems)
        if run is not None:
            runs.append(run)
    return Runs(tuple(runs), tuple(problems))


def _run(folder: str, where: str, table: dict[str, Any], problems: list[str]) -> Run | None:
    """One run from a table (a pyproject run, or a launch configuration put in its terms)."""
    script, module = table.get("script"), table.get("module")
    if (script is None) == (module is None):
        problems.append(f"{where}: needs exactly one of `script` and `module`")
        return None
    target = script if script is not None else module
    if not isinstance(target, str) or not target:
        problems.append(f"{where}: `{'script' if script is not None else 'module'}` must be a string")
        return None
    args = table.get("args", [])
    if isinstance(args, str):
        args = shlex.split(args)
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        problems.append(f"{where}: `args` must be a list of strings (or one string)")
        return None
    cwd = table.get("cwd", "")
    env = table.get("env", {})
    if not isinstance(cwd, str):
        problems.append(f"{where}: `cwd` must be a string")
        return None
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        problems.append(f"{where}: `env` must be a table of strings")
        return None
    run = command_line(folder, target, args, module is not None, cwd, env)
    name = table.get("name")
    return Run(
        name=name if isinstance(name, str) and name else run.name,
        script=run.script,
        module=run.module,
        args=run.args,
        cwd=run.cwd,
        env=run.env,
    )


def from_launch_json(folder: str, current_file: str = "") -> Runs:
    """The Python launch configurations of ``.vscode/launch.json`` (JSON with comments and trailing
    commas, as VS Code reads it)."""
    path = os.path.join(folder, LAUNCH)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return Runs()
    except (OSError, UnicodeDecodeError) as error:
        return Runs(problems=(f"{path}: cannot be read ({error})",))
    try:
        data = json.loads(plain_json(text))
    except ValueError as error:
        return Runs(problems=(f"{path}: not valid JSON ({error})",))
    configurations = data.get("configurations", []) if isinstance(data, dict) else []
    runs: list[Run] = []
    problems: list[str] = []
    for number, entry in enumerate(configurations if isinstance(configurations, list) else [], start=1):
        if not isinstance(entry, dict) or entry.get("type") not in ("python", "debugpy"):
            continue
        if entry.get("request", "launch") != "launch":
            continue  # attaching to a running process starts nothing
        where = f"{path}: configuration {entry.get('name') or number}"
        uses_file = "${file" in json.dumps(entry)
        if uses_file and not current_file:
            continue  # "Python: Current File" means the file open in the editor, and there is none
        try:
            entry = _expanded(entry, folder, current_file)
        except KeyError as error:
            problems.append(f"{where}: unknown variable ${{{error.args[0]}}}")
            continue
        table = {
            "name": entry.get("name"),
            "args": entry.get("args", []),
            "cwd": entry.get("cwd", ""),
            "env": entry.get("env", {}),
        }
        if "program" in entry:
            table["script"] = entry["program"]
        if "module" in entry:
            table["module"] = entry["module"]
        run = _run(folder, where, table, problems)
        if run is not None:
            runs.append(run)
    return Runs(tuple(runs), tuple(problems))


def plain_json(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas made plain JSON; strings kept whole.
    The comments go first: a comma with a comment after it can be the trailing one."""
    comments = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
    commas = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])')
    text = comments.sub(lambda match: match.group(0) if match.group(0).startswith('"') else "", text)
    return commas.sub(lambda match: match.group(1) if match.group(1) is not None else match.group(0), text)


def _expanded(value: Any, folder: str, current_file: str) -> Any:
    """VS Code's variables in every string of a configuration; an unknown one raises KeyError."""
    if isinstance(value, dict):
        return {key: _expanded(item, folder, current_file) for key, item in value.items()}
    if isinstance(value, list):
        return [_expanded(item, folder, current_file) for item in value]
    if not isinstance(value, str):
        return value
    known = {
        "workspaceFolder": folder,
        "workspaceRoot": folder,
        "workspaceFolderBasename": os.path.basename(folder),
        "file": current_file,
        "fileDirname": os.path.dirname(current_file),
        "fileBasename": os.path.basename(current_file),
        "fileBasenameNoExtension": os.path.splitext(os.path.basename(current_file))[0],
        "relativeFile": os.path.relpath(current_file, folder) if current_file else "",
        "userHome": os.path.expanduser("~"),
        "cwd": folder,
        "pathSeparator": os.sep,
    }

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("env:"):
            return os.environ.get(name[len("env:") :], "")
        return known[name]

    return re.sub(r"\$\{([^}]+)\}", expand, value)


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)
