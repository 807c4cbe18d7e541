"""How to run a script that stopped for want of arguments, data or its package: the run to add.

A script whose analysis stops at ``argparse`` (exit status 2), at a relative file it cannot find,
or at a ``ModuleNotFoundError`` of the project's own package needs to be told how its users start
it. The remedy is a configured run (``runs``): a Python launch configuration in
``.vscode/launch.json`` or a ``[[tool.gbls.run]]`` table in ``pyproject.toml``, prefilled from the
command the project's README gives for the script (``python train.py --config c.json``,
``python -m scripts.train ...`` in a code block), else with no arguments. The edits insert text
into the files as they are, so that their other entries and comments stay as written.
"""

from __future__ import annotations

import json
import os
import re
import shlex

from ..worker.shared.protocol import Run
from . import runs

READMES = ("README.md", "README.rst", "README.txt", "README")
PYTHON = re.compile(r"^python(3(\.\d+)?)?$")
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
LAUNCH_EMPTY = '{\n    "version": "0.2.0",\n    "configurations": [\n%s\n    ]\n}\n'


def needs_a_run(kind: str, message: str, folder: str) -> bool:
    """Whether a script's failure (``kind``, ``message``, as its report has them) is one a configured
    run remedies: arguments (argparse), a relative file, its own package not on the path."""
    if kind == "exit":
        return "(argparse" in message or message.startswith("the program exited with status 2")
    if kind == "raised":
        return message.startswith("FileNotFoundError")
    if kind == "import":
        missing = re.match(r"ModuleNotFoundError: No module named '([\w.]+)'", message)
        top = missing.group(1).split(".")[0] if missing else ""
        return bool(top) and (
            os.path.isdir(os.path.join(folder, top)) or os.path.isfile(os.path.join(folder, top + ".py"))
        )
    return False


def suggested(folder: str, script: str, as_module: bool) -> Run:
    """The run to add for ``script`` (a file under ``folder``): the README's command for it if it has
    one, else ``python SCRIPT`` (``python -m`` its module, ``as_module``) with no arguments."""
    module = ".".join(os.path.splitext(os.path.relpath(script, folder))[0].split(os.sep))
    for command in readme_commands(folder):
        run = _as_run(folder, command, script, module)
        if run is not None:
            return run
    return runs.command_line(folder, module if as_module else script, [], as_module)


def readme_commands(folder: str) -> list[list[str]]:
    """The shell commands of the README's code blocks, each split as the shell would (``$`` prompts
    and line continuations taken away)."""
    for name in READMES:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as handle:
                text = handle.read(1_000_000)
        except OSError:
            continue
        found = []
        for line in _code_lines(text):
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                continue
            if words:
                found.append(words)
        return found
    return []


def _code_lines(text: str) -> list[str]:
    """The lines of a Markdown or reStructuredText file's code blocks, continuations joined."""
    lines, inside, indented = [], False, False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            inside = not inside
            continue
        if stripped.endswith("::") or stripped.startswith(".. code"):
            indented = True  # reST: the indented block that follows
            continue
        if indented and line and not line[0].isspace():
            indented = False
        if inside or (indented and stripped):
            lines.append(stripped.removeprefix("$ ").removeprefix("> "))
    joined: list[str] = []
    for line in lines:
        if joined and joined[-1].endswith("\\"):
            joined[-1] = joined[-1][:-1] + " " + line
        else:
            joined.append(line)
    return joined


def _as_run(folder: str, words: list[str], script: str, module: str) -> Run | None:
    """The run ``words`` (``[ENV=V ...] python [-m MOD | FILE] ARGS``) is, when it starts ``script``."""
    env = {}
    while words and ENV.match(words[0]):
        name, _, value = words[0].partition("=")
        env[name], words = value, words[1:]
    if len(words) < 2 or not PYTHON.match(os.path.basename(words[0])):
        return None
    if words[1] == "-m" and len(words) > 2 and words[2] == module:
        return runs.command_line(folder, module, words[3:], True, env=env)
    if words[1] != "-m" and os.path.abspath(os.path.join(folder, words[1])) == os.path.abspath(script):
        return runs.command_line(folder, words[1], words[2:], False, env=env)
    return None


def launch_configuration(run: Run, folder: str) -> dict[str, object]:
    """``run`` as VS Code's Python debugger launches it."""
    entry: dict[str, object] = {"name": run.name, "type": "debugpy", "request": "launch"}
    if run.module:
        entry["module"] = run.module
    else:
        entry["program"] = "${workspaceFolder}/" + os.path.relpath(run.script, folder).replace(os.sep, "/")
    entry["args"] = list(run.args)
    entry["cwd"] = "${workspaceFolder}"
    if run.env:
        entry["env"] = dict(run.env)
    entry["console"] = "integratedTerminal"
    return entry


def launch_insertion(text: str | None, run: Run, folder: str) -> tuple[int, str] | None:
    """Where to insert ``run`` into ``.vscode/launch.json`` of text ``text`` (None: there is none, the
    whole file is the text to write, at 0), and what; None when its shape is not one to edit (no
    object at the top, ``configurations`` not a list)."""
    entry = json.dumps(launch_configuration(run, folder), indent=4)
    body = "\n".join("        " + line for line in entry.splitlines())
    if text is None or not text.strip():
        return 0, LAUNCH_EMPTY % body
    try:
        data = json.loads(runs.plain_json(text))
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("configurations", []), list):
        return None
    at = _configurations(text)
    if at is None:
        opening = _first_code(text, 0)
        if opening is None or text[opening] != "{":
            return None
        after = _first_code(text, opening + 1)
        comma = "" if after is not None and text[after] == "}" else ","
        return opening + 1, f'\n    "configurations": [\n{body}\n    ]{comma}'
    following = _first_code(text, at + 1)
    comma = "" if following is not None and text[following] == "]" else ","
    return at + 1, f"\n{body}{comma}"


def _configurations(text: str) -> int | None:
    """The offset of the ``[`` that opens the top-level ``configurations`` list, if there is one."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group(0)
        if token in "{[":
            depth += 1
        elif token in "}]":
            depth -= 1
        elif depth == 1 and token == '"configurations"':
            colon = _first_code(text, match.end())
            if colon is None or text[colon] != ":":
                continue  # a value, not the key
            value = _first_code(text, colon + 1)
            return value if value is not None and text[value] == "[" else None
    return None


_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|[{}\[\]]', re.DOTALL)
_SKIP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)


def _first_code(text: str, start: int) -> int | None:
    """The offset of the first character at or after ``start`` that is neither space nor comment."""
    end = _SKIP.match(text, start)
    at = end.end() if end else start
    return at if at < len(text) else None


def pyproject_table(run: Run, folder: str) -> str:
    """``run`` as a ``[[tool.gbls.run]]`` table."""
    lines = ["[[tool.gbls.run]]", f"name = {json.dumps(run.name)}"]
    if run.module:
        lines.append(f"module = {json.dumps(run.module)}")
    else:
        lines.append(f"script = {json.dumps(os.path.relpath(run.script, folder).replace(os.sep, '/'))}")
    lines.append(f"args = [{', '.join(json.dumps(arg) for arg in run.args)}]")
    if run.cwd != folder:
        lines.append(f"cwd = {json.dumps(os.path.relpath(run.cwd, folder))}")
    if run.env:
        lines.append("env = { " + ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in run.env) + " }")
    return "\n".join(lines) + "\n"


def pyproject_insertion(text: str | None, run: Run, folder: str) -> tuple[int, str]:
    """``run``'s table appended to ``pyproject.toml`` of text ``text`` (None: there is none)."""
    if not text:
        return 0, pyproject_table(run, folder)
    gap = "\n" if text.endswith("\n") else "\n\n"
    return len(text), gap + pyproject_table(run, folder)
