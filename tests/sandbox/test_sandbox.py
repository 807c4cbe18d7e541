"""The sandbox under fault injection: every fault through ``gbls check`` and through one LSP session.

For each fault in ``fixtures/faults`` the file gets one diagnostic that names what happened, on
its line; the breaks found before the failure are kept; the server answers the next request; and
no process the analysis started is left alive. Processes are found by descent from the worker and
by the marker every process the worker starts carries in its environment.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import resource
import shutil
import signal
import site
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import LanguageClient

from gbls.runtime.sandbox import bwrap_support

from ..support import FIXTURES, ROOT, SECRETS
from ..support.lsp import (
    Recorder,
    close,
    initialized,
    open_and_wait,
    proofs_done,
    published_after,
    server,
    session,
    until,
    uri_of,
)
from ..support.schema import gbls_json
from ..support.worker import Analyse

FAULTS = FIXTURES / "faults"
CLEAN = FIXTURES / "engine" / "clean.py"
# An analysis's time limit: long enough that only a hang reaches it, however busy the machine is.
TIMEOUT = 120
# The hangs' own: they reach any limit, and a short one saves the wait.
HANG = 5
HANGS = ("loop_module.py", "loop_compiled.py", "stops_worker.py")
MEMORY_MB = 1024
HAS_BWRAP = bwrap_support() is not None
# Passed to the CLI and the server: none of the secrets may reach the analysed code, nor the GPU.
ENVIRONMENT = {**os.environ, **SECRETS, "CUDA_VISIBLE_DEVICES": "0", "TORCH_SHOW_CPP_STACKTRACES": "0"}
NOT_SANDBOXED = "analysed code runs without the gbls sandbox"


@dataclass(frozen=True)
class Fault:
    kind: str  # the failure's kind; "" when the analysis ends well; "cut": the budget ended it, no failure
    message: str  # how the failure message starts; {line}: the line it is on, {folder}: the faults folder
    lines: tuple[int, ...] = ()  # where the failure (or the cut) may be (a loop's header or its body)
    breaks: tuple[int, ...] = (6,)  # lines of the breaks found before the failure
    bwrap: bool = False  # the behaviour needs the bwrap sandbox


FAULT_TABLE = {
    "loop_module.py": Fault(
        "cut", f"cut after {HANG} s at loop_module.py:{{line}}: the program was", (11, 12)
    ),
    "loop_compiled.py": Fault(
        "cut",
        f"cut after {HANG} s at loop_compiled.py:{{line}}, while Dynamo was still translating `spin`",
        (7, 8),
    ),
    "segfault.py": Fault(
        "crashed", "crashed with a segmentation fault (SIGSEGV) while running line 13", (13,), (8,)
    ),
    "os_exit.py": Fault("exit", "the module called os._exit(3); the analysis stopped there", (13,), (8,)),
    "sys_exit.py": Fault("", "", (), (8,)),  # status 0: the program ended well
    "stdin.py": Fault("stdin", "read from stdin (input()), which is closed during analysis", (11,)),
    "prints.py": Fault("", ""),
    "memory.py": Fault("memory", f"ran out of memory (limit {MEMORY_MB} MB) allocating 1.0 GB", (12,)),
    "fork_bomb.py": Fault(
        "processes",
        "started more than 64 processes (a fork bomb?) and was stopped (the first fork is at line 17)",
        (17,),
        (9,),
    ),
    "recursion.py": Fault("raised", "RecursionError: maximum recursion depth exceeded", (11,)),
    "syntax_error.py": Fault("syntax", "SyntaxError: expected ':'", (5,), ()),
    "missing_import.py": Fault(
        "import", "ModuleNotFoundError: No module named 'gbls_no_such_module'", (3,), ()
    ),
    "raises_after_break.py": Fault("raised", "RuntimeError: the module fails after its first break", (11,)),
    "non_utf8.py": Fault(
        "syntax", "the file is not valid UTF-8 (byte 0xe9 on line 3), so Python cannot import it", (3,), ()
    ),
    "network.py": Fault(
        "network", "network access is blocked in the gbls sandbox (OSError: [Errno 101]", (13,), (8,), True
    ),
    # Its writes land in the sandbox's /tmp and in a throwaway layer over the workspace: nothing on disk.
    "writes_outside.py": Fault("", "", (), (8,), True),
    "deleted.py": Fault("", "", (), (15,)),
    "escapes_group.py": Fault("", "", (), (10,)),
    # A project's own random.py (and torch.py) next to the file: the worker starts all the same.
    "shadowing/shadows_random.py": Fault(
        "shadow",
        "{folder}/shadowing/random.py shadows the standard library's module `random`, which torch imports",
        (1,),
        (8,),
    ),
    "odd_lines.py": Fault("", "", (), (7,)),  # CRLF, U+2028 in a comment, a form feed, tabs
    # Nothing left by other analyses in /tmp or /dev/shm (without bwrap: the machine's own, as ever).
    "temporary_space.py": Fault("", "", (), (29,), bwrap=True),
    "stops_worker.py": Fault("worker", "the gbls worker process stopped answering (no result", (1,), ()),
    "kills_worker.py": Fault("worker", "the gbls worker process was killed by SIGKILL", (1,), ()),
    # Forged result lines for guessed ids go nowhere. Without bwrap, root's analysis can open the
    # worker's pipes through /proc (CAP_SYS_PTRACE), other analyses' event pipes among them.
    "forges_results.py": Fault("", "", (), (9,), bwrap=True),
    "forged_frames.py": Fault(
        "tampered",
        "the analysed code tampered with gbls's results (a frame names 'relative.py', which is no file, "
        "and 4 more)",
        (1,),
        (10, 14),
    ),
    "many_events.py": Fault(
        "truncated",
        "gbls output truncated: 35001 graph-break events past 5000 distinct chains were dropped; only the "
        "first 1000 of 5000 graph breaks are shown",
        (1,),
        (10,) * 1000,  # each on its root cause: helperN's line 10 (its split, line 14, beside it)
    ),
    # A well-formed event written into the event pipe the analysis inherits is not signed: not gbls's.
    "writes_event_pipe.py": Fault(
        "tampered",
        "the analysed code tampered with gbls's results (it wrote 1 line into gbls's event stream)",
        (1,),
        (10,),
    ),
    "huge_event_line.py": Fault(
        "flood", "wrote a line of more than 1 MB into gbls's event stream", (1,), (9,)
    ),
    "disables_dynamo.py": Fault(
        "disabled",
        "Dynamo was disabled by torch._dynamo.config.disable = True in the analysed code",
        (3,),
        (),
    ),
    "force_eager.py": Fault(
        "disabled",
        'Dynamo was disabled by torch.compiler.set_stance("force_eager") in the analysed code',
        (3,),
        (),
    ),
    "keyboard_interrupt.py": Fault("", "", (), (6,)),
    "replaces_builtins.py": Fault(
        "tampered",
        "the analysed code replaced builtins.__import__, builtins.open, json.dumps, which torch and gbls "
        "rely on",
        (1,),
        (9,),
    ),
}
# They take the warm worker down: through the CLI they run beside innocent files of their own
# (run again on a fresh worker, a file may find what it changed: deleted.py its file gone).
WORKER_KILLERS = ("kills_worker.py", "stops_worker.py")
INNOCENT = ("raises_after_break.py", "prints.py", "loop_module.py", "sys_exit.py")
# Breaks left after ``gbls check --fix``, where it fixes something.
FIXED = {"odd_lines.py": ()}
# Outside every workspace folder: forged_frames.py names its graph_break() as a break's root cause.
BAIT = Path("/tmp/gbls-fault-bait.py")
BAIT_TEXT = "import torch\n\n\ndef bait():\n    torch._dynamo.graph_break()\n"


def written_paths(faults: Path) -> tuple[Path, ...]:
    return (faults / "written-by-analysis.txt", Path("/tmp/gbls-fault-written.txt"))


def assert_nothing_written(faults: Path = FAULTS) -> None:
    """Nothing the analysed code tried to write outside its sandbox exists (nor is left for later tests)."""
    written = [path for path in written_paths(faults) if path.exists()]
    for path in written:
        path.unlink()
    assert written == [], f"the analysis wrote {written}"


@pytest.fixture(scope="session")
def bait() -> Iterator[Path]:
    """The file a forged break points at, outside the workspace: gbls must never edit it. It stays
    when the session ends: another run of the suite on this machine may be using it."""
    BAIT.write_text(BAIT_TEXT)
    yield BAIT
    assert BAIT.read_text() == BAIT_TEXT


def require_bwrap() -> None:
    if not HAS_BWRAP:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap (bwrap) is missing or does not work, and CI needs it")
        pytest.skip("bubblewrap (bwrap) is missing or does not work here")


def runnable(name: str, sandbox: str = "auto") -> bool:
    """Without bwrap, a fault that needs it is not run: writes_outside.py would really write.

    deleted.py is run where bwrap is: the test deletes it from one run at a time.
    """
    if sandbox == "off":
        return not FAULT_TABLE[name].bwrap and name != "deleted.py"
    return HAS_BWRAP or not FAULT_TABLE[name].bwrap


# -- processes --------------------------------------------------------------------------------


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return b""


def live_processes() -> dict[int, int]:
    """pid → parent pid of every process that is not a zombie."""
    table = {}
    for name in os.listdir("/proc"):
        fields = _read(f"/proc/{name}/stat").rsplit(b")", 1)[-1].split() if name.isdigit() else []
        if fields and fields[0] not in (b"Z", b"X"):
            table[int(name)] = int(fields[1])
    return table


def descendants(root: int) -> list[int]:
    table = live_processes()
    found, todo = [], [root]
    while todo:
        pid = todo.pop(0)
        children = [child for child, parent in table.items() if parent == pid]
        found += children
        todo += children
    return found


def worker_above(pid: int) -> int:
    """The warm worker that ``pid`` descends from (the analyses are forks of it, with its command line)."""
    table = live_processes()
    found = None
    while pid in table:
        pid = table[pid]
        if b"worker/__main__.py" in _read(f"/proc/{pid}/cmdline") and not is_bwrap(pid):
            found = pid
        elif found is not None:
            return found
    raise AssertionError("not under a gbls worker")


def marker_of(pid: int) -> str:
    return variable_of(pid, "GBLS_WORKER")


def variable_of(pid: int, name: str) -> str:
    """The environment variable ``name`` of process ``pid``, "" if it has none."""
    for entry in _read(f"/proc/{pid}/environ").split(b"\0"):
        if entry.startswith(name.encode() + b"="):
            return entry.split(b"=", 1)[1].decode()
    return ""


def is_bwrap(pid: int) -> bool:
    return os.path.basename(_read(f"/proc/{pid}/cmdline").split(b"\0")[0]) == b"bwrap"


def zygote_of(root: int, timeout: float = 120) -> int:
    """The warm worker started by process ``root`` (a CLI or the server), once it is there."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in descendants(root):
            if (
                b"worker/__main__.py" in _read(f"/proc/{pid}/cmdline")
                and not is_bwrap(pid)
                and marker_of(pid)
            ):
                return pid
        time.sleep(0.05)
    raise AssertionError(f"no gbls worker under process {root}")


def strays(marker: str, zygote: int | None = None) -> list[str]:
    """Processes of the worker marked ``marker`` other than itself: they belong to analyses."""
    suspects = {pid for pid in live_processes() if marker_of(pid) == marker and not is_bwrap(pid)}
    if zygote is not None:
        suspects = (suspects | set(descendants(zygote))) - {zygote}
    return [describe(pid) for pid in sorted(suspects)]


def strays_left(marker: str, zygote: int | None = None, timeout: float = 60) -> list[str]:
    """The strays still there after ``timeout`` s: an analysis's processes take a moment to exit once
    it is answered (on a busy machine, longer); a process left behind stays."""
    deadline = time.monotonic() + timeout
    while (found := strays(marker, zygote)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def describe(pid: int) -> str:
    return f"{pid}: " + _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode()


# -- the CLI ----------------------------------------------------------------------------------


def gbls(
    *arguments: str, environment: dict[str, str] = ENVIRONMENT, cwd: Path = ROOT
) -> subprocess.Popen[str]:
    # The installed command, as users run it: ``python -m`` would put the working directory on
    # sys.path of gbls itself (a random.py there would break Python before gbls starts).
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "gbls"), "check", *arguments],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )


def delete_once_open(path: Path, running: Callable[[], bool]) -> None:
    """Delete ``path`` once an analysis holds it open (deleted.py does), i.e. while it is analysed."""
    target = str(path).encode()
    deadline = time.monotonic() + 120
    while running() and time.monotonic() < deadline:
        for fd_folder in (f"/proc/{pid}/fd" for pid in live_processes()):
            try:
                links = [os.readlink(f"{fd_folder}/{fd}").encode() for fd in os.listdir(fd_folder)]
            except OSError:
                continue
            if target in links:
                path.unlink()
                return
        time.sleep(0.02)


@dataclass
class CliRun:
    """``gbls check --fix`` of a copy of every fault that this sandbox mode can run: two runs, the
    hangs with their short time limit and the others."""

    faults: dict[str, Any]  # fault (relative to the faults folder) → its JSON entry
    statuses: tuple[int, ...]
    folder: Path  # the copy of the faults folder it checked
    originals: dict[str, bytes]  # each fault file's bytes before
    markers: tuple[str, ...]


@dataclass
class CliRuns:
    runs: dict[str, CliRun]  # by sandbox mode: bwrap (where it works) and off
    killers: dict[str, dict[str, Any]]  # by sandbox mode: the worker killers' and innocents' entries
    notes: dict[str, subprocess.CompletedProcess[str]]


def limits(seconds: int) -> tuple[str, ...]:
    return ("--timeout", str(seconds), "--memory-mb", str(MEMORY_MB))


@dataclass
class Started:
    processes: list[subprocess.Popen[str]]
    markers: tuple[str, ...]  # of their workers
    originals: dict[str, bytes]  # each fault file's bytes before


def start_faults(folder: Path, sandbox: str) -> Started:
    shutil.copytree(FAULTS, folder)
    originals = {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*.py")}
    names = [n for n in FAULT_TABLE if runnable(n, sandbox) and n not in WORKER_KILLERS] + ["environment.py"]
    runs = ((TIMEOUT, [n for n in names if n not in HANGS]), (HANG, [n for n in names if n in HANGS]))
    arguments = ("--format", "json", "--fix", "--sandbox", sandbox)
    processes = [gbls(*arguments, *limits(seconds), *(str(folder / n) for n in ns)) for seconds, ns in runs]
    # Now, while the hangs' run is sure to be on: it ends when they have timed out.
    markers = tuple(marker_of(zygote_of(process.pid)) for process in processes)
    return Started(processes, markers, originals)


def finished(started: dict[str, subprocess.Popen[str]]) -> dict[str, subprocess.CompletedProcess[str]]:
    done = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=600)
        done[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return done


def finish_faults(started: Started, folder: Path) -> CliRun:
    processes = started.processes
    delete_once_open(folder / "deleted.py", lambda: any(process.poll() is None for process in processes))
    entries: dict[str, Any] = {}
    for process in processes:
        out, err = process.communicate(timeout=900)
        assert out, err
        entries |= {str(Path(entry["path"]).relative_to(folder)): entry for entry in gbls_json(out)["files"]}
    statuses = tuple(process.returncode for process in processes)
    return CliRun(entries, statuses, folder, started.originals, started.markers)


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory, bait: Path) -> CliRuns:
    """Every fault through ``gbls check --fix`` in each sandbox mode, and the notes through more runs."""
    folder = tmp_path_factory.mktemp("cli") / "faults"
    faults = start_faults(folder, "auto")
    no_bwrap = {**ENVIRONMENT, "PATH": str(tmp_path_factory.mktemp("empty-path"))}
    # An interpreter under /tmp (a virtual environment there): bwrap's private /tmp must not hide it.
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    # Another interpreter that sees this one's packages (torch among them), wherever they are
    # installed: in a virtual environment of the user's, or system-wide.
    (site_packages,) = (venv / "lib").glob("python*/site-packages")
    (site_packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    disabled = {**ENVIRONMENT, "TORCH_COMPILE_DISABLE": "1"}
    runs = {"bwrap": finish_faults(faults, folder)}
    unsandboxed = tmp_path_factory.mktemp("cli-off") / "faults"
    runs["off"] = finish_faults(start_faults(unsandboxed, "off"), unsandboxed)
    started = {
        "venv": gbls("--python", str(venv / "bin" / "python"), str(FAULTS / "raises_after_break.py")),
        "off": gbls("--sandbox", "off", str(CLEAN), str(FAULTS / "raises_after_break.py")),
        "missing": gbls(str(CLEAN), str(FAULTS / "raises_after_break.py"), environment=no_bwrap),
        "required": gbls("--sandbox", "bwrap", str(CLEAN), environment=no_bwrap),
        # The workspace itself (the working directory) holds random.py and torch.py.
        "shadowed": gbls("--format", "json", "shadows_random.py", cwd=FAULTS / "shadowing"),
        "disabled": gbls("--format", "json", str(CLEAN), environment=disabled),
        "odd": gbls("--format", "json", str(FAULTS / "odd_lines.py")),
    }
    notes = finished(started)
    started = {
        # Alone, the worker it stops is the only one to blame: no second try, an answer in time.
        "stopped": gbls("--format", "json", *limits(HANG), str(FAULTS / "stops_worker.py")),
        **{
            f"killers-{sandbox}": gbls(
                "--format",
                "json",
                "--sandbox",
                sandbox,
                *limits(HANG),  # a stopped worker is found past it
                *(str(FAULTS / name) for name in WORKER_KILLERS + INNOCENT),
            )
            for sandbox in ("auto", "off")
        },
    }
    notes |= finished(started)
    killers = {
        mode: {Path(e["path"]).name: e for e in gbls_json(notes[f"killers-{sandbox}"].stdout)["files"]}
        for mode, sandbox in (("bwrap", "auto"), ("off", "off"))
    }
    return CliRuns(runs, killers, notes)


def check_cli_entry(entry: dict[str, Any], expected: Fault, folder: Path) -> None:
    breaks = sorted(brk["range"]["start"]["line"] for brk in entry["breaks"])
    assert breaks == list(expected.breaks), entry
    if expected.kind in ("", "cut"):
        assert (entry["status"], entry["message"], entry["failure"]) == ("ok", "", None)
        assert (entry["cut"] is not None) == (expected.kind == "cut"), entry
    if expected.kind == "cut":
        line = entry["cut"]["range"]["start"]["line"]
        assert line in expected.lines, entry["cut"]
        assert entry["cut"]["message"].startswith(expected.message.format(line=line)), entry["cut"]
    if expected.kind in ("", "cut"):
        return
    assert entry["status"] == "error"
    assert entry["failure"]["kind"] == expected.kind, entry["message"]
    line = entry["failure"]["range"]["start"]["line"]
    assert line in expected.lines, entry["message"]
    assert entry["message"].startswith(expected.message.format(line=line, folder=folder)), entry["message"]


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
@pytest.mark.parametrize("name", sorted(FAULT_TABLE))
def test_fault_through_the_cli(cli: CliRuns, name: str, sandbox: str) -> None:
    expected = FAULT_TABLE[name]
    if sandbox == "bwrap" and expected.bwrap:
        require_bwrap()
    if not runnable(name, sandbox):
        pytest.skip(f"{name} is not run without bwrap")
    if name in WORKER_KILLERS:
        check_cli_entry(cli.killers[sandbox][name], expected, FAULTS)
        return
    if name in FIXED:
        expected = dataclasses.replace(expected, breaks=FIXED[name])
    run = cli.runs[sandbox]
    check_cli_entry(run.faults[name], expected, run.folder)


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_a_dead_worker_fails_the_file_that_killed_it_only(cli: CliRuns, sandbox: str) -> None:
    for name in INNOCENT:
        check_cli_entry(cli.killers[sandbox][name], FAULT_TABLE[name], FAULTS)


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_cli_leaves_no_process_and_no_file_behind(cli: CliRuns, sandbox: str) -> None:
    run = cli.runs[sandbox]
    assert run.statuses == (2, 1)  # the hangs' run: cut, not failed, with the breaks they found
    assert [strays_left(marker) for marker in run.markers] == [[], []]
    assert_nothing_written(run.folder)


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_fix_writes_only_the_workspace_file_the_source_confirms(cli: CliRuns, sandbox: str) -> None:
    """``--fix`` on every fault: the one real fix (odd_lines.py's .item()) and nothing else, anywhere."""
    run = cli.runs[sandbox]
    changed = {
        name
        for name, data in run.originals.items()
        if name != "deleted.py" and (run.folder / name).read_bytes() != data  # the test deleted it
    }
    assert changed == {"odd_lines.py"}
    assert BAIT.read_text() == BAIT_TEXT  # forged_frames.py's break in it was not fixed
    old = run.originals["odd_lines.py"]
    # Inserted after the imports with the file's CRLF; every other byte kept (U+2028, form feed, tabs).
    inserted = b"torch._dynamo.config.capture_scalar_outputs = True\r\n"
    assert (run.folder / "odd_lines.py").read_bytes() == old.replace(b"\r\n", b"\r\n" + inserted, 1)


def test_columns_where_python_and_the_editor_count_them(cli: CliRuns) -> None:
    """The .item() on line 7 of odd_lines.py, after U+2028 and a form feed, behind a tab: columns 10-30."""
    (entry,) = gbls_json(cli.notes["odd"].stdout)["files"]
    (brk,) = entry["breaks"]
    assert brk["range"] == {"start": {"line": 7, "column": 10}, "end": {"line": 7, "column": 30}}


def test_user_failures_are_reported_as_the_users(cli: CliRuns) -> None:
    entry = cli.runs["bwrap"].faults["keyboard_interrupt.py"]
    (interrupted,) = [f for f in entry["functions"] if not f["analysed"]]
    reason = interrupted["reason"]
    assert reason.startswith("no synthesized input worked (") and ": KeyboardInterrupt" in reason


@pytest.mark.parametrize("sandbox", ["bwrap", "off"])
def test_the_analysis_sees_no_secret_and_no_gpu(cli: CliRuns, sandbox: str) -> None:
    run = cli.runs[sandbox]
    check_environment(run.faults["environment.py"]["message"], run.folder, ROOT)


def test_a_workspace_that_shadows_the_standard_library(cli: CliRuns) -> None:
    shadowed = cli.notes["shadowed"]
    (entry,) = gbls_json(shadowed.stdout)["files"]
    check_cli_entry(entry, FAULT_TABLE["shadowing/shadows_random.py"], FAULTS)
    assert "(also shadowing: torch.py)" in entry["message"]


def test_dynamo_disabled_by_the_environment_is_said(cli: CliRuns) -> None:
    (entry,) = gbls_json(cli.notes["disabled"].stdout)["files"]
    assert entry["failure"]["kind"] == "disabled"
    assert entry["message"].startswith("Dynamo was disabled by TORCH_COMPILE_DISABLE=1 in the environment")


def test_a_stopped_worker_alone_is_answered(cli: CliRuns) -> None:
    (entry,) = gbls_json(cli.notes["stopped"].stdout)["files"]
    check_cli_entry(entry, FAULT_TABLE["stops_worker.py"], FAULTS)


def check_environment(message: str, workspace: Path, cwd: Path) -> None:
    """What environment.py reports: variables, working directory (``cwd``: the folder the file is
    started in), stdin and limits."""
    seen = json.loads(message.removeprefix("LookupError: "))
    environ = seen["environ"]
    assert environ["CUDA_VISIBLE_DEVICES"] == ""
    assert environ["PYTHONPATH"].split(os.pathsep)[0] == str(workspace)
    assert environ["TORCH_SHOW_CPP_STACKTRACES"] == "0" and environ["HOME"] == os.environ["HOME"]
    assert not set(SECRETS) & set(environ)
    assert seen["cwd"] == str(cwd) and os.path.basename(seen["tempdir"]).startswith("gbls-")
    assert not os.path.exists(seen["tempdir"])  # removed afterwards (or only ever in the sandbox)
    assert seen["stdin"] == ""
    limits = seen["limits"]
    assert limits["RLIMIT_NOFILE"] <= 1024 and limits["RLIMIT_CORE"] == 0
    assert limits["RLIMIT_CPU"] == TIMEOUT * 2 + 10 and limits["RLIMIT_FSIZE"] == 1 << 30
    # The memory it writes, on top of what the worker has; not its address space (CUDA reserves far
    # more, and the outputs of graphs not computed are mapped without being written).
    assert 0 < limits["RLIMIT_DATA"] < (MEMORY_MB + 64 * 1024) << 20
    assert limits["RLIMIT_AS"] == resource.getrlimit(resource.RLIMIT_AS)[0]


def test_cli_sandbox_notes_and_interpreters(cli: CliRuns) -> None:
    off = cli.notes["off"]
    assert off.returncode == 2, off.stderr
    assert off.stderr.count(NOT_SANDBOXED) == 1 and "(the sandbox setting is off)" in off.stderr
    assert "Found 1 graph break in tests/fixtures/faults/raises_after_break.py" in off.stdout
    missing = cli.notes["missing"]
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.count(NOT_SANDBOXED) == 1 and "bubblewrap (bwrap) is missing" in missing.stderr
    assert "Found 1 graph break in tests/fixtures/faults/raises_after_break.py" in missing.stdout
    assert "the worker exited while starting" not in cli.notes["venv"].stderr
    venv = cli.notes["venv"]
    assert "Found 1 graph break in tests/fixtures/faults/raises_after_break.py" in venv.stdout, venv.stderr
    required = cli.notes["required"]
    assert required.returncode == 2
    assert "the sandbox setting asks for bwrap, but bubblewrap is missing" in required.stderr


async def test_output_is_bounded(analyse_file: Analyse) -> None:
    report = await analyse_file(FAULTS / "prints.py")
    assert [brk.span.line for brk in report.breaks] == [6]
    assert len(report.output) < 100_000
    assert "bytes of output dropped]" in report.output
    assert report.output.rstrip().endswith("99999 " + "x" * 90)


# -- the language server ----------------------------------------------------------------------


@pytest_lsp.fixture(scope="session", config=server(ENVIRONMENT))
async def client(
    lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LanguageClient]:
    settings = {"debounceMs": 200, "timeout": TIMEOUT, "memoryMb": MEMORY_MB}
    folders = {folder.name: folder for folder in (FIXTURES, tmp_path_factory.getbasetemp())}
    async with session(initialized(lsp_client, folders, settings, settings)) as client:
        yield client


def server_pid(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[union-attr]


async def configure(client: LanguageClient, **settings: Any) -> None:
    """Change settings: pushed with the notification, and there for the server to pull as well."""
    values = {"debounceMs": 200, "timeout": TIMEOUT, "memoryMb": MEMORY_MB, **settings}
    client.set_configuration(values, section="gbls")
    client.workspace_did_change_configuration(lsp.DidChangeConfigurationParams(settings={"gbls": values}))
    await answers(client)


async def answers(client: LanguageClient) -> None:
    """The server answers a request (and so has handled every notification sent before it)."""
    report = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.showReport", arguments=[uri_of(CLEAN)])
    )
    assert isinstance(report, str)


def check_diagnostics(diagnostics: list[lsp.Diagnostic], expected: Fault) -> None:
    # A break is a warning (an error where it raises) on its root cause; where its graph splits, on
    # another line, an information diagnostic says so (many_events.py's forged ones: line 14).
    found = (lsp.DiagnosticSeverity.Warning, lsp.DiagnosticSeverity.Error)
    breaks = sorted(
        d.range.start.line + 1 for d in diagnostics if str(d.code).startswith("GB") and d.severity in found
    )
    assert breaks == list(expected.breaks), diagnostics
    failures = [d for d in diagnostics if str(d.code).startswith("analysis-")]
    cuts = [d for d in diagnostics if d.code == "cut"]
    assert len(cuts) == (expected.kind == "cut"), diagnostics
    if expected.kind in ("", "cut"):
        assert failures == []
    if expected.kind == "cut":  # a note, not a failure: the program ran on
        (cut,) = cuts
        assert cut.severity == lsp.DiagnosticSeverity.Information
        line = cut.range.start.line + 1
        assert line in expected.lines, cut.message
        assert cut.message.startswith(expected.message.format(line=line)), cut.message
    if expected.kind in ("", "cut"):
        return
    (failure,) = failures
    assert failure.code == f"analysis-{expected.kind}", failure.message
    # What stopped the analysis is the news: inputs are no cure for it.
    assert not any("Declare inputs" in d.message for d in diagnostics)
    line = failure.range.start.line + 1
    assert line in expected.lines, failure.message
    prefix = "gbls could not analyse this file: "
    assert failure.message.startswith(prefix + expected.message.format(line=line, folder=FAULTS)), (
        failure.message
    )


async def analyse_over_lsp(client: LanguageClient, path: Path) -> list[lsp.Diagnostic]:
    # As an editor shows a file that is not UTF-8: undecodable bytes replaced.
    text = path.read_bytes().decode("utf-8", "replace")
    if path.name != "deleted.py":
        return await open_and_wait(client, path, text)
    uri = uri_of(path)
    recorder: Recorder = client.diagnostics  # type: ignore[assignment]
    seen = len(recorder.history)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
        )
    )
    await asyncio.to_thread(delete_once_open, path, lambda: True)
    assert not path.exists()
    return await published_after(client, seen, uri)


def publications(client: LanguageClient) -> int:
    return len(client.diagnostics.history)  # type: ignore[attr-defined]


async def edited_files(client: LanguageClient, path: Path, diagnostics: list[lsp.Diagnostic]) -> set[str]:
    """The URIs that the code actions for ``diagnostics`` would edit."""
    everywhere = lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0))
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri_of(path)), everywhere, lsp.CodeActionContext(diagnostics)
        )
    )
    edited: set[str] = set()
    for action in actions or []:
        edit = action.edit if isinstance(action, lsp.CodeAction) else None
        if edit is not None:
            edited |= set(edit.changes or {})
            edited |= {
                c.text_document.uri
                for c in edit.document_changes or []
                if isinstance(c, lsp.TextDocumentEdit)
            }
    return edited


def last_status(client: LanguageClient, uri: str) -> str:
    statuses: list[Any] = client.statuses  # type: ignore[attr-defined]
    mine = [status for status in statuses if status["uri"] == uri]
    return str(mine[-1]["state"]) if mine else ""


async def finally_done(client: LanguageClient, uri: str) -> bool:
    """The status after the publication: sent right after it, so it may still be on its way."""
    return await until(lambda: last_status(client, uri) == "done")


@pytest.mark.parametrize("name", sorted(FAULT_TABLE))
async def test_fault_through_the_language_server(
    client: LanguageClient, name: str, tmp_path_factory: pytest.TempPathFactory, bait: Path
) -> None:
    expected = FAULT_TABLE[name]
    if expected.bwrap:
        require_bwrap()
    path = FAULTS / name
    if name == "deleted.py":
        path = tmp_path_factory.mktemp("lsp") / name
        shutil.copy(FAULTS / name, path)
    if name in HANGS:
        await configure(client, timeout=HANG)
    try:
        diagnostics = await analyse_over_lsp(client, path)
        check_diagnostics(diagnostics, expected)
        assert await finally_done(client, uri_of(path))  # whatever happened, the analysis ended
        # Code actions edit the analysed file, and no other: never a file a forged break names.
        assert await edited_files(client, path, diagnostics) <= {uri_of(path)}
        zygote = zygote_of(server_pid(client))
        assert await asyncio.to_thread(strays_left, marker_of(zygote), zygote) == []
        assert_nothing_written()
        await answers(client)
        await close(client, path)
    finally:  # once the file is closed: a change of settings analyses the open files again
        if name in HANGS:
            await configure(client)


async def test_columns_over_lsp_count_utf16_units_on_python_lines(client: LanguageClient) -> None:
    """odd_lines.py: CRLF, U+2028 and a form feed above, a tab before; the .item() on (0-based) line 6."""
    path = FAULTS / "odd_lines.py"
    diagnostics = await analyse_over_lsp(client, path)
    (brk,) = [d for d in diagnostics if d.code == "GB0124"]
    assert brk.range == lsp.Range(lsp.Position(6, 9), lsp.Position(6, 29))
    await close(client, path)


async def test_the_analysis_sees_no_secret_and_no_gpu_over_lsp(client: LanguageClient) -> None:
    diagnostics = await open_and_wait(client, FAULTS / "environment.py")
    (failure,) = diagnostics
    check_environment(failure.message.removeprefix("gbls could not analyse this file: "), FIXTURES, FIXTURES)
    await close(client, FAULTS / "environment.py")


async def kill_the_worker_while_it_analyses(client: LanguageClient, path: Path) -> list[lsp.Diagnostic]:
    """Open ``path``, SIGKILL the worker once the module started a daemon; the diagnostics."""
    uri = uri_of(path)
    seen = publications(client)
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text())
        )
    )

    def daemon() -> list[int]:
        return [
            pid
            for pid in descendants(server_pid(client))
            if _read(f"/proc/{pid}/cmdline").startswith(b"sleep")
        ]

    try:
        # The worker that runs the analysis (a settings change may have just replaced the one before).
        (sleeping,) = await until(daemon, 60, 0.02)
        zygote = worker_above(sleeping)
        marker = marker_of(zygote)
        # The analysis's scratch directory (its TMPDIR), in the worker's: outside bwrap's own /tmp, on
        # this machine's, where the dead worker cannot remove it.
        scratch = Path(variable_of(sleeping, "TMPDIR"))
        assert scratch.parent.name.startswith("gbls-worker-")
        os.kill(zygote, signal.SIGKILL)
        diagnostics = await published_after(client, seen, uri)
        assert await asyncio.to_thread(strays_left, marker) == []
        assert not scratch.parent.exists()  # the server removed it before it said what happened
    finally:  # whatever failed: a file left open would loop again with every change of settings
        await close(client, path)
    return diagnostics


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_worker_death_is_reported_and_a_fresh_worker_takes_over(
    own_server: LanguageClient, sandbox: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # A server of its own: on the shared one an earlier test's analysis or proof could still be running
    # when the worker dies, and a request that died beside others runs again (here: loops till its
    # timeout) instead of being answered with the death.
    client = own_server
    # The kill ends the analysis: a timeout past it, so that a loaded machine cannot end it first.
    await configure(client, sandbox=sandbox, timeout=120)
    # A module that leaves a daemon in a session of its own, then loops: only the sweep after the
    # worker's death (or bwrap's PID namespace) can stop the daemon.
    path = tmp_path_factory.mktemp("death") / "daemon_then_loop.py"
    path.write_text((FAULTS / "escapes_group.py").read_text() + "\nwhile True:\n    pass\n")
    diagnostics = await kill_the_worker_while_it_analyses(client, path)
    (failure,) = [d for d in diagnostics if d.code == "analysis-worker"]
    assert failure.range.start.line == 0
    assert failure.message == (
        "gbls could not analyse this file: the gbls worker process was killed by SIGKILL, e.g. by the "
        "out-of-memory killer; a fresh one starts with the next analysis"
    )
    seen = len(client.log_messages)
    check_diagnostics(await open_and_wait(client, CLEAN), Fault("", "", (), ()))
    await proofs_done(client, CLEAN, seen)
    zygote = zygote_of(server_pid(client))
    assert await asyncio.to_thread(strays_left, marker_of(zygote), zygote) == []


async def test_disabled_means_no_analysis_and_no_diagnostics(client: LanguageClient) -> None:
    shown = FAULTS / "raises_after_break.py"
    assert await open_and_wait(client, shown)
    seen = publications(client)
    await configure(client, enable=False)
    assert await published_after(client, seen, uri_of(shown)) == []
    seen = publications(client)
    opened = FAULTS / "sys_exit.py"
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri_of(opened), language_id="python", version=1, text=opened.read_text())
        )
    )
    await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.analyseFile", arguments=[uri_of(opened)])
    )
    await asyncio.sleep(3)  # an analysis, had one started, would have been published by now
    assert publications(client) == seen
    await configure(client, enable=True)  # analyses every open document again
    check_diagnostics(await published_after(client, seen, uri_of(opened)), FAULT_TABLE["sys_exit.py"])
    await close(client, opened)
    await close(client, shown)


@pytest.fixture
async def unsandboxed(client: LanguageClient) -> AsyncIterator[LanguageClient]:
    """The shared server without the sandbox for one test, and with it again afterwards, whatever happens."""
    await configure(client, sandbox="off")
    try:
        yield client
    finally:
        await configure(client)


async def test_server_says_once_that_it_runs_without_the_sandbox(unsandboxed: LanguageClient) -> None:
    # Failures are never taken from the cache: each analysis below needs a worker that started.
    client = unsandboxed
    shown = FAULTS / "raises_after_break.py"
    check_diagnostics(await open_and_wait(client, shown), FAULT_TABLE[shown.name])
    await close(client, shown)
    await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="gbls.restartWorker", arguments=[])
    )
    check_diagnostics(await open_and_wait(client, shown), FAULT_TABLE[shown.name])
    await close(client, shown)
    notes = [m for m in client.log_messages if NOT_SANDBOXED in m.message]
    assert len(notes) == 1 and "(the sandbox setting is off)" in notes[0].message
    assert notes[0].type == lsp.MessageType.Warning


@pytest.mark.parametrize("name", ["fork_bomb.py", "escapes_group.py", "network.py", "memory.py"])
async def test_faults_without_the_sandbox(unsandboxed: LanguageClient, name: str) -> None:
    """Without bwrap's PID namespace and network cut, the worker's own limits still hold."""
    client = unsandboxed
    seen = len(client.log_messages)
    check_diagnostics(await open_and_wait(client, FAULTS / name), FAULT_TABLE[name])
    await proofs_done(client, FAULTS / name, seen)  # their analyses are the worker's children too
    zygote = zygote_of(server_pid(client))
    assert await asyncio.to_thread(strays_left, marker_of(zygote), zygote) == []
    await close(client, FAULTS / name)


@pytest_lsp.fixture(config=server(ENVIRONMENT))
async def own_server(
    lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LanguageClient]:
    """A server of its own, for a test that ends it or its worker (the shared one must live on)."""
    folders = {folder.name: folder for folder in (FIXTURES, tmp_path_factory.getbasetemp())}
    options = {"timeout": TIMEOUT, "memoryMb": MEMORY_MB}
    async with session(initialized(lsp_client, folders, options)) as client:
        yield client


async def test_every_process_ends_with_the_server(own_server: LanguageClient, bait: Path) -> None:
    """Frames naming /dev/stdin and /dev/zero block nothing, and no worker or bwrap outlives the server."""
    client = own_server
    path = FAULTS / "forged_frames.py"
    check_diagnostics(await open_and_wait(client, path), FAULT_TABLE["forged_frames.py"])
    hover = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri_of(path)), lsp.Position(13, 2))
    )
    assert hover is not None  # the forged break that was kept, on the call at line 14
    server = server_pid(client)
    zygote = zygote_of(server)
    family = set(descendants(server))
    assert zygote in family and any(is_bwrap(pid) for pid in family) == HAS_BWRAP
    await client.shutdown_session()
    assert await until(lambda: not (family | {server}) & set(live_processes()), 60)
