"""The sandbox under fault injection: every fault through ``gbls check`` and through one LSP session.

For each fault in ``fixtures/faults`` the file gets one diagnostic that names what happened, on
its line; the breaks found before the failure are kept; the server answers the next request; and
no process the analysis started is left alive. Processes are found by descent from the worker and
by the marker every process the worker starts carries in its environment.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import site
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from gbls.runtime.sandbox import bwrap_support, worker_environment

from .conftest import FIXTURES, Analyse
from .lsp import Recorder, close, open_and_wait, published_after, until, uri_of

ROOT = Path(__file__).parent.parent
FAULTS = FIXTURES / "faults"
CLEAN = FIXTURES / "engine" / "clean.py"
TIMEOUT = 5
MEMORY_MB = 1024
HAS_BWRAP = bwrap_support() is not None
# Passed to the CLI and the server: none of the secrets may reach the analysed code, nor the GPU.
SECRETS = {
    "TORCH_HUB_TOKEN": "t0ken",
    "PYTORCH_API_KEY": "k3y",
    "AWS_SECRET_ACCESS_KEY": "s3cret",
    "GITHUB_TOKEN": "gh",
}
ENVIRONMENT = {**os.environ, **SECRETS, "CUDA_VISIBLE_DEVICES": "0", "TORCH_SHOW_CPP_STACKTRACES": "0"}
NOT_SANDBOXED = "analysed code runs without the gbls sandbox"


@dataclass(frozen=True)
class Fault:
    kind: str  # the failure's kind; "" when the analysis ends well
    message: str  # how the failure message starts; {line} is the line it is on
    lines: tuple[int, ...] = ()  # where the failure may be (a loop's header or its body)
    breaks: tuple[int, ...] = (6,)  # lines of the breaks found before the failure
    bwrap: bool = False  # the behaviour needs the bwrap sandbox


FAULT_TABLE = {
    "loop_module.py": Fault("timeout", f"timed out after {TIMEOUT} s while running line {{line}}", (11, 12)),
    "loop_compiled.py": Fault(
        "timeout", f"timed out after {TIMEOUT} s while Dynamo was tracing line {{line}} (in spin)", (7, 8)
    ),
    "segfault.py": Fault(
        "crashed", "crashed with a segmentation fault (SIGSEGV) while running line 13", (13,), (8,)
    ),
    "os_exit.py": Fault("exit", "the module called os._exit(3); the analysis stopped there", (13,), (8,)),
    "sys_exit.py": Fault("exit", "the module called sys.exit(0) while being imported", (13,), (8,)),
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
    "writes_outside.py": Fault(
        "write",
        "writing outside the scratch directory (tempfile.gettempdir()) is refused in the gbls sandbox "
        "(OSError: [Errno 30] Read-only file system",
        (15,),
        (8,),
        True,
    ),
    "deleted.py": Fault("", "", (), (15,)),
    "escapes_group.py": Fault("", "", (), (10,)),
}
WRITTEN = (FAULTS / "written-by-analysis.txt", Path("/tmp/gbls-fault-written.txt"))


def assert_nothing_written() -> None:
    """Nothing the analysed code tried to write outside its sandbox exists (nor is left for later tests)."""
    written = [path for path in WRITTEN if path.exists()]
    for path in written:
        path.unlink()
    assert written == [], f"the analysis wrote {written}"


def require_bwrap() -> None:
    if not HAS_BWRAP:
        if os.environ.get("CI") == "true":
            pytest.fail("bubblewrap (bwrap) is missing or does not work, and CI needs it")
        pytest.skip("bubblewrap (bwrap) is missing or does not work here")


def runnable(name: str) -> bool:
    """Without bwrap, a fault that needs it is not run: writes_outside.py would really write."""
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
    for entry in _read(f"/proc/{pid}/environ").split(b"\0"):
        if entry.startswith(b"GBLS_WORKER="):
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


def describe(pid: int) -> str:
    return f"{pid}: " + _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ").decode()


# -- the CLI ----------------------------------------------------------------------------------


def gbls(*arguments: str, environment: dict[str, str] = ENVIRONMENT) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gbls", "check", *arguments],
        cwd=ROOT,
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
class CliRuns:
    faults: dict[str, Any]  # file name → its JSON entry
    faults_status: int
    marker: str
    notes: dict[str, subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> CliRuns:
    """Every fault through one ``gbls check``, and the sandbox notes through three more, all at once."""
    folder = tmp_path_factory.mktemp("cli")
    deleted = folder / "deleted.py"
    shutil.copy(FAULTS / "deleted.py", deleted)
    files = [str(FAULTS / name) for name in FAULT_TABLE if name != "deleted.py" and runnable(name)]
    files += [str(deleted), str(FAULTS / "environment.py")]
    limits = ["--timeout", str(TIMEOUT), "--memory-mb", str(MEMORY_MB)]
    faults = gbls("--format", "json", *limits, *files)
    no_bwrap = {**ENVIRONMENT, "PATH": str(tmp_path_factory.mktemp("empty-path"))}
    # An interpreter under /tmp (a virtual environment there): bwrap's private /tmp must not hide it.
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    # Another interpreter that sees this one's packages (torch among them), wherever they are
    # installed: in a virtual environment of the user's, or system-wide.
    (site_packages,) = (venv / "lib").glob("python*/site-packages")
    (site_packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    started = {
        "venv": gbls("--python", str(venv / "bin" / "python"), str(FAULTS / "raises_after_break.py")),
        "off": gbls("--sandbox", "off", str(CLEAN), str(FAULTS / "raises_after_break.py")),
        "missing": gbls(str(CLEAN), str(FAULTS / "raises_after_break.py"), environment=no_bwrap),
        "required": gbls("--sandbox", "bwrap", str(CLEAN), environment=no_bwrap),
    }
    marker = marker_of(zygote_of(faults.pid))
    delete_once_open(deleted, lambda: faults.poll() is None)
    out, err = faults.communicate(timeout=600)
    assert out, err
    entries = {Path(entry["path"]).name: entry for entry in json.loads(out)["files"]}
    notes = {}
    for name, process in started.items():
        stdout, stderr = process.communicate(timeout=600)
        notes[name] = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return CliRuns(entries, faults.returncode, marker, notes)


def check_cli_entry(entry: dict[str, Any], expected: Fault) -> None:
    breaks = sorted(brk["range"]["start"]["line"] for brk in entry["breaks"])
    assert breaks == list(expected.breaks), entry
    if not expected.kind:
        assert (entry["status"], entry["message"], entry["failure"]) == ("ok", "", None)
        return
    assert entry["status"] == ("timeout" if expected.kind == "timeout" else "error")
    assert entry["failure"]["kind"] == expected.kind, entry["message"]
    line = entry["failure"]["range"]["start"]["line"]
    assert line in expected.lines, entry["message"]
    assert entry["message"].startswith(expected.message.format(line=line)), entry["message"]


@pytest.mark.parametrize("name", sorted(FAULT_TABLE))
def test_fault_through_the_cli(cli: CliRuns, name: str) -> None:
    expected = FAULT_TABLE[name]
    if expected.bwrap:
        require_bwrap()
    check_cli_entry(cli.faults[name], expected)


def test_cli_leaves_no_process_and_no_file_behind(cli: CliRuns) -> None:
    assert cli.faults_status == 2
    assert strays(cli.marker) == []
    assert_nothing_written()


def test_the_analysis_sees_no_secret_and_no_gpu(cli: CliRuns) -> None:
    check_environment(cli.faults["environment.py"]["message"], ROOT)


def check_environment(message: str, workspace: Path) -> None:
    """What environment.py reports: variables, working directory, stdin and limits."""
    seen = json.loads(message.removeprefix("LookupError: "))
    environ = seen["environ"]
    assert environ["CUDA_VISIBLE_DEVICES"] == ""
    assert environ["PYTHONPATH"].split(os.pathsep)[0] == str(workspace)
    assert environ["TORCH_SHOW_CPP_STACKTRACES"] == "0" and environ["HOME"] == os.environ["HOME"]
    assert not set(SECRETS) & set(environ)
    assert seen["cwd"] == seen["tempdir"] and os.path.basename(seen["cwd"]).startswith("gbls-")
    assert not os.path.exists(seen["cwd"])  # removed afterwards (or only ever in the sandbox)
    assert seen["stdin"] == ""
    limits = seen["limits"]
    assert limits["RLIMIT_NOFILE"] <= 1024 and limits["RLIMIT_CORE"] == 0
    assert limits["RLIMIT_CPU"] == TIMEOUT * 2 + 10 and limits["RLIMIT_FSIZE"] == 1 << 30
    assert 0 < limits["RLIMIT_AS"] < (MEMORY_MB + 64 * 1024) << 20  # on top of what the worker maps


def test_environment_filter() -> None:
    base = {**SECRETS, "PATH": "/bin", "HOME": "/home/u", "PYTHONPATH": "/lib", "LC_ALL": "C", "EDITOR": "vi"}
    environment = worker_environment(base)
    assert environment["PYTHONPATH"] == "/lib"  # the workspace comes per analysis, after the imports
    assert environment["CUDA_VISIBLE_DEVICES"] == ""
    assert {"PATH", "HOME", "LC_ALL"} <= set(environment)
    assert not ({"EDITOR", *SECRETS} & set(environment))


def test_cli_sandbox_notes_and_interpreters(cli: CliRuns) -> None:
    off = cli.notes["off"]
    assert off.returncode == 2, off.stderr
    assert off.stderr.count(NOT_SANDBOXED) == 1 and "(the sandbox setting is off)" in off.stderr
    assert "Found 1 graph break in 2 files" in off.stdout
    missing = cli.notes["missing"]
    assert missing.returncode == 2, missing.stderr
    assert missing.stderr.count(NOT_SANDBOXED) == 1 and "bubblewrap (bwrap) is missing" in missing.stderr
    assert "Found 1 graph break in 2 files" in missing.stdout
    assert "the worker exited while starting" not in cli.notes["venv"].stderr
    assert "Found 1 graph break in 1 file" in cli.notes["venv"].stdout, cli.notes["venv"].stderr
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


@pytest_lsp.fixture(
    scope="session",
    config=ClientServerConfig(server_command=[sys.executable, "-m", "gbls"], server_env=ENVIRONMENT),
)
async def client(
    lsp_client: LanguageClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LanguageClient]:
    lsp_client.diagnostics = Recorder()
    settings = {"debounceMs": 200, "timeout": TIMEOUT, "memoryMb": MEMORY_MB}
    lsp_client.set_configuration(settings, section="gbls")
    folders = [FIXTURES, tmp_path_factory.getbasetemp()]
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            workspace_folders=[lsp.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in folders],
            initialization_options={"gbls": settings},
        )
    )
    yield lsp_client
    await lsp_client.shutdown_session()


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
    breaks = sorted(d.range.start.line + 1 for d in diagnostics if str(d.code).startswith("GB"))
    assert breaks == list(expected.breaks), diagnostics
    failures = [d for d in diagnostics if str(d.code).startswith("analysis-")]
    if not expected.kind:
        assert failures == []
        return
    (failure,) = failures
    assert failure.code == f"analysis-{expected.kind}", failure.message
    # What stopped the analysis is the news: inputs are no cure for it.
    assert not any("Declare inputs" in d.message for d in diagnostics)
    line = failure.range.start.line + 1
    assert line in expected.lines, failure.message
    prefix = "gbls could not analyse this file: "
    assert failure.message.startswith(prefix + expected.message.format(line=line)), failure.message


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


@pytest.mark.parametrize("name", sorted(FAULT_TABLE))
async def test_fault_through_the_language_server(
    client: LanguageClient, name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    expected = FAULT_TABLE[name]
    if expected.bwrap:
        require_bwrap()
    path = FAULTS / name
    if name == "deleted.py":
        path = tmp_path_factory.mktemp("lsp") / name
        shutil.copy(FAULTS / name, path)
    check_diagnostics(await analyse_over_lsp(client, path), expected)
    zygote = zygote_of(server_pid(client))
    assert strays(marker_of(zygote), zygote) == []
    assert_nothing_written()
    await answers(client)
    await close(client, path)


async def test_the_analysis_sees_no_secret_and_no_gpu_over_lsp(client: LanguageClient) -> None:
    diagnostics = await open_and_wait(client, FAULTS / "environment.py")
    (failure,) = diagnostics
    check_environment(failure.message.removeprefix("gbls could not analyse this file: "), FIXTURES)
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

    # The worker that runs the analysis (a settings change may have just replaced the one before).
    (sleeping,) = await until(daemon, 60, 0.02)
    zygote = worker_above(sleeping)
    marker = marker_of(zygote)
    os.kill(zygote, signal.SIGKILL)
    diagnostics = await published_after(client, seen, uri)
    assert strays(marker) == []
    await close(client, path)
    return diagnostics


@pytest.mark.parametrize("sandbox", ["auto", "off"])
async def test_worker_death_is_reported_and_a_fresh_worker_takes_over(
    client: LanguageClient, sandbox: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    await configure(client, sandbox=sandbox)
    try:
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
        check_diagnostics(await open_and_wait(client, CLEAN), Fault("", "", (), ()))
        zygote = zygote_of(server_pid(client))
        assert strays(marker_of(zygote), zygote) == []
        await close(client, CLEAN)
    finally:
        await configure(client)


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
    check_diagnostics(await open_and_wait(client, FAULTS / name), FAULT_TABLE[name])
    zygote = zygote_of(server_pid(client))
    assert strays(marker_of(zygote), zygote) == []
    await close(client, FAULTS / name)
