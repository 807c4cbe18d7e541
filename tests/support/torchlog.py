"""torch's own graph-break log, as the oracle the engine's results are checked against.

Runs fixture files in an interpreter of their own with ``TORCH_LOGS=graph_breaks`` (and recompiles,
for ``torchlog_recompiles``: one run for both logs) and every ``torch.compile`` on the eager
backend, each as ``python file.py`` runs it (``__main__``), and parses each logged break: its
compile id, gb_type and GB id, and the user traceback with the caret columns torch printed. What
became of each frame Dynamo translated (compiled, or run eagerly) is whether Dynamo produced code
for it (its bytecode hook ran in that compilation), for each compilation its metrics recorded (their
own ``has_guarded_code`` is wrong for frames dropped by a loop break in torch 2.7-2.10). All the
files of a folder run in one interpreter (``torch._dynamo.reset()`` between them), forked from an
interpreter of the test session's that imported torch once (``run_eagerly``): a fresh interpreter
would spend seconds importing it again.

The log's shape differs between releases: torch 2.6 prints ``Reason: <text>`` and no structure,
2.7-2.9 put the gb_type on the ``Graph Break Reason:`` line, 2.10+ put a line of what Dynamo did
before the message; GB ids appear in links from 2.9 (not for every break before 2.11); carets
appear from 2.13 (to the end of the line before 2.15).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .forked import ask, run_forked

_cache: dict[Path, list[LoggedBreak]] = {}
_compiles: dict[Path, list[LoggedCompile]] = {}

# torch on the eager backend (or, where ``ELIDE`` is set, gbls's: graphs of more element-operations
# than ``ELIDE`` not computed), each translation's metrics kept and printed by ``print_compilations``.
SETUP = r"""
import json, os, re, signal, sys, time, torch, torch._dynamo, torch._dynamo.utils as utils
import torch._dynamo.convert_frame as convert_frame
utils.set_compilation_metrics_limit(100000)
produced = set()
def produced_code(code, new_code):
    compile_id = torch._guards.CompileContext.current_trace_id().compile_id
    produced.add(f"{compile_id.frame_id}/{compile_id.frame_compile_id}")
convert_frame.register_bytecode_hook(produced_code)
original = torch.compile
backend = "eager"
if globals().get("ELIDE") is not None:  # gbls's backend: graphs past that much work not computed
    from gbls.worker.analysis import elision
    def backend(gm, example_inputs):
        return elision.elided(gm, ELIDE)[0] or gm.forward
def eager_compile(model=None, **options):
    options["backend"] = backend
    options.pop("mode", None)
    if model is None:
        return lambda actual: original(actual, **options)
    return original(model, **options)
torch.compile = eager_compile
def print_compilations():
    for metric in utils.get_compilation_metrics():
        compile_id = "/".join(re.findall(r"\d+", str(metric.compile_id))[:2])
        failed_at = [metric.fail_user_frame_filename, metric.fail_user_frame_lineno]
        record = [compile_id, metric.co_name, metric.co_filename, compile_id in produced]
        record += [str(metric.fail_reason or ""), failed_at]
        reasons = [str(reason).strip() for reason in metric.restart_reasons or ()]
        restarts = sorted(reason.splitlines()[0] for reason in reasons if reason)
        record += [metric.guard_count, metric.graph_op_count, restarts]
        print(FRAME + json.dumps(record), file=sys.stderr, flush=True)
    utils.clear_compilation_metrics()
    produced.clear()
"""
# Imports torch, then for each request (a JSON list of files, and where their stderr goes) forks a
# child that runs the files, and answers once the child is done (or killed after TIMEOUT seconds).
# No torch operation runs before the fork: the child starts as a fresh interpreter would.
RUNNER = (
    r"""
import os
answers = os.fdopen(os.dup(1), "w")  # stdout is the children's, and nothing reads it
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
"""
    + SETUP
    + r"""
for request in iter(sys.stdin.readline, ""):
    paths, stderr = json.loads(request)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(os.open(stderr, os.O_WRONLY), 2)
        sys.stdin = open(os.devnull)
        sys.argv = ["-c", *paths]
        # At the module's level, as in the fresh interpreter before: no function of the runner in the stacks.
        try:
            for path in paths:
                torch._dynamo.reset()
                print(MARKER + path, file=sys.stderr, flush=True)
                sys.path.insert(0, os.path.dirname(path))
                try:
                    exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__", "__file__": path})
                except BaseException:
                    pass
                print_compilations()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
    deadline = time.monotonic() + TIMEOUT
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.05)
    print(json.dumps(paths), file=answers, flush=True)
"""
)
MARKER = "=== oracle file: "
FRAME = "=== oracle compile: "

LINE = re.compile(r"\] \[(\d+)/(\d+)(?:_\d+)?\] \[__graph_breaks\] ?(.*)$")
STACK_FRAME = re.compile(r'^ {1,2}File "([^"]+)", line (\d+), in (\S+)$')


@dataclass
class LoggedFrame:
    path: str
    line: int
    function: str
    carets: tuple[int, int] | None = None  # start, end within the stripped source line


@dataclass
class LoggedBreak:
    frame_id: int
    compile_id: int
    suppressed: bool
    at: tuple[str, int]
    gb_ids: list[str] = field(default_factory=list)
    gb_types: list[str] = field(default_factory=list)
    explanations: list[str] = field(default_factory=list)  # the first line of each, root cause first
    hints: list[str] = field(default_factory=list)  # the first line of each, in order
    text: str = ""  # torch 2.6: the reason as printed, its only description of the break
    skipped: bool = False  # "Graph break: …", a frame Dynamo gave up on (2.6, 2.10)
    stack: list[LoggedFrame] = field(default_factory=list)


@dataclass
class LoggedCompile:
    """One translation of a frame, from Dynamo's compilation metrics and its bytecode hook."""

    compile_id: str  # frame/recompile, as the log's [0/1] says
    function: str  # the code's name: a resume function is torch_dynamo_resume_in_<f>_at_<line>
    path: str
    guarded: bool  # Dynamo produced code for it; False: the frame ran eagerly
    failure: str = ""  # why Dynamo gave up on the frame, if it did
    failed_at: tuple[str, int] | None = None  # the user's line it gave up at
    guards: int | None = None  # the guards of its compiled code, as its metrics count them
    ops: int | None = None  # the ops of its graph
    restarts: tuple[str, ...] = ()  # the first line of each reason Dynamo restarted it for


def logged_breaks(path: Path) -> list[LoggedBreak]:
    if path not in _cache:
        _load(path)
    return _cache[path]


def logged_compiles(path: Path) -> list[LoggedCompile]:
    if path not in _compiles:
        _load(path)
    return _compiles[path]


def _load(path: Path) -> None:
    breaks, compiles = parse(folder_log(path))
    _cache.update(breaks)
    _compiles.update(compiles)


# Both logs at once: each parser reads only its own lines (``[__graph_breaks]``, ``[__recompiles]``).
LOGS = "graph_breaks,recompiles"
_logs: dict[tuple[Path, ...], str] = {}


def folder_log(path: Path) -> str:
    """torch's log (``LOGS``) of every file of ``path``'s folder, run in one interpreter: one run for
    the breaks and the recompilations (``torchlog_recompiles``) of the folder's files alike."""
    paths = tuple(sorted(path.parent.glob("*.py")))
    if paths not in _logs:
        # Nothing may download at run time: the Hugging Face fixtures build their models from configs.
        environment = dict(os.environ, TORCH_LOGS=LOGS, HF_HUB_OFFLINE="1")
        _logs[paths] = run_eagerly(list(paths), environment)
    return _logs[paths]


def run_eagerly(paths: list[Path], environment: dict[str, str]) -> str:
    """Run ``paths`` in one interpreter on the eager backend; what they wrote on stderr (log, markers).
    A runner per environment: torch reads TORCH_LOGS once, when it is imported."""
    code = f"MARKER = {MARKER!r}\nFRAME = {FRAME!r}\nTIMEOUT = 600\n" + RUNNER
    with tempfile.NamedTemporaryFile("r", suffix=".log") as stderr:
        if not ask(code, environment, [list(map(str, paths)), stderr.name]):
            raise RuntimeError(f"torch's log runner ended before running {paths}")
        return stderr.read()


def parse(stderr: str) -> tuple[dict[Path, list[LoggedBreak]], dict[Path, list[LoggedCompile]]]:
    """Each logged break and compilation, by the file the marker line before them named."""
    found: dict[Path, list[LoggedBreak]] = {}
    compiles: dict[Path, list[LoggedCompile]] = {}
    entries: list[LoggedBreak] = []
    current = Path()
    lines: list[str] = []
    for raw in stderr.splitlines():
        if raw.startswith(MARKER):
            current = Path(raw[len(MARKER) :])
            entries = found.setdefault(current, [])
            compiles[current] = []
            continue
        if raw.startswith(FRAME):
            record = json.loads(raw[len(FRAME) :])
            compile_id, function, path, guarded, failure, (failed_in, failed_line) = record[:6]
            guards, ops, restarts = record[6:]
            failed_at = (failed_in, failed_line) if failed_in and failed_line else None
            compiles[current].append(
                LoggedCompile(
                    compile_id, function, path, guarded, failure, failed_at, guards, ops, tuple(restarts)
                )
            )
            continue
        lines = _parse(raw, entries, lines)
    return found, compiles


def _parse(raw: str, entries: list[LoggedBreak], lines: list[str]) -> list[str]:
    """Add what one line of the log says to ``entries``; the lines of the entry being read."""
    match = LINE.search(raw)
    if not match:
        return lines
    text = match.group(3)
    if text.startswith("Graph break") and "in user code at" in text:
        where, _, line = text.rsplit(" at ", 1)[1].rpartition(":")
        entries.append(
            LoggedBreak(int(match.group(1)), int(match.group(2)), "suppressed" in text, (where, int(line)))
        )
        lines = []
    elif text.startswith("Graph break:"):
        # A frame Dynamo gave up on ("skip: from user code at:" in 2.6, "cannot properly resume"
        # in 2.10): where is its innermost frame, why its exception or message below.
        entries.append(LoggedBreak(int(match.group(1)), int(match.group(2)), False, ("", 0), skipped=True))
        lines = []
    if entries:
        _feed(entries[-1], lines, text)
    return lines


# Installed as sitecustomize in every interpreter a script starts (its spawned ranks too): torch.compile
# on the eager backend, as the runner above has it.
EAGER_SITE = """
import torch
original = torch.compile
backend = "eager"
if globals().get("ELIDE") is not None:  # gbls's backend: graphs past that much work not computed
    from gbls.worker.analysis import elision
    def backend(gm, example_inputs):
        return elision.elided(gm, ELIDE)[0] or gm.forward
def eager_compile(model=None, **options):
    options["backend"] = backend
    options.pop("mode", None)
    if model is None:
        return lambda actual: original(actual, **options)
    return original(model, **options)
torch.compile = eager_compile
"""
# A log line's process id; once a process group is up, torch puts the rank in front of it.
PROCESS = re.compile(r"^(?:\[rank\d+\]:)?[A-Z]\d{4} [\d:.]+ +(\d+) ")


@dataclass
class ScriptLog:
    """torch's log of a script's run, process by process."""

    main: list[LoggedBreak]  # the script's own process
    children: list[list[LoggedBreak]]  # each process it started that logged, in the order they first did
    # The frames of the script's own process that Dynamo would not convert at all, as its log says
    # ("WON'T CONVERT produce FILE line 6"), each with torch's reason ("Attempt to trace generator"):
    # a compiled generator's is in no graph-break log.
    refused: list[tuple[str, str]] = field(default_factory=list)


# Dynamo's log (``TORCH_LOGS=dynamo``) of a frame it would not convert, and the exception that said why.
REFUSED = re.compile(r"\] WON'T CONVERT (\S+) ")
REFUSED_BECAUSE = re.compile(r"\] torch\._dynamo\.exc\.\w+: (.+)$")


_site: list[str] = []


def _eager_site() -> str:
    """A folder whose sitecustomize.py is ``EAGER_SITE``, for every script this session logs."""
    if not _site:
        site = tempfile.mkdtemp(prefix="gbls-eager-site-")
        Path(site, "sitecustomize.py").write_text(EAGER_SITE)
        atexit.register(shutil.rmtree, site, True)
        _site.append(site)
    return _site[0]


def logged_script(path: Path, *arguments: str, cwd: Path | None = None, seconds: float = 600) -> ScriptLog:
    """The breaks (and the frames Dynamo refused whole) of ``python PATH ARGUMENTS`` as its users run
    it (its own ``sys.argv``, its processes); every interpreter of the run (a spawned rank too)
    compiles on the eager backend, by a sitecustomize put first on its ``PYTHONPATH``. A script
    still running after ``seconds`` is killed, with what it logged until then. Forked from an
    interpreter that imported torch (``forked``), the sitecustomize's first."""
    python_path = os.pathsep.join(filter(None, [_eager_site(), os.environ.get("PYTHONPATH", "")]))
    environment = dict(
        os.environ, TORCH_LOGS="graph_breaks,dynamo", HF_HUB_OFFLINE="1", PYTHONPATH=python_path
    )
    with tempfile.NamedTemporaryFile("r", suffix=".log") as stderr:
        ran = run_forked(
            path,
            arguments,
            cwd=cwd or path.parent,
            environment=environment,
            stdout=Path(os.devnull),
            stderr=Path(stderr.name),
            seconds=seconds,
        )
        log = stderr.read()
    found: dict[int, list[LoggedBreak]] = {}
    reading: dict[int, list[str]] = {}  # each process's lines of the entry it is logging
    refused: list[tuple[str, str]] = []
    for raw in log.splitlines():
        logged_by = PROCESS.match(raw)
        if logged_by:
            pid = int(logged_by.group(1))
            reading[pid] = _parse(raw, found.setdefault(pid, []), reading.get(pid, []))
            if pid != ran.pid:
                continue
            named, because = REFUSED.search(raw), REFUSED_BECAUSE.search(raw)
            if named:
                refused.append((named.group(1), ""))
            elif because and refused and not refused[-1][1]:
                refused[-1] = (refused[-1][0], because.group(1))
    # The runner's own frames, outermost in the child's stacks: a fresh interpreter has none.
    for entry in found.get(ran.pid, []):
        while entry.stack and entry.stack[0].path in ("<string>", "<frozen runpy>"):
            del entry.stack[0]
    main = found.pop(ran.pid, [])
    return ScriptLog(main, list(found.values()), refused)


def _feed(entry: LoggedBreak, previous: list[str], text: str) -> None:
    gb = re.search(r"/gb/gb(\d+)\.html", text)
    if gb:
        entry.gb_ids.append(f"GB{gb.group(1)}")
    if text.startswith("  Explanation:") and previous:
        # 2.7-2.9 put the gb_type on the reason's line; a skipped frame's exception line holds it too.
        gb_type = re.sub(r"^(Graph Break Reason:|torch\._dynamo\.exc\.\w+:)", "", previous[-1].strip())
        entry.gb_types.append(gb_type.strip())
        entry.explanations.append(text[len("  Explanation:") :].strip())
    reason = re.match(r"(Graph Break )?Reason: (Unsupported: )?(.*)", text)
    if reason and not entry.text:  # all that torch 2.6 (and 2.7-2.10 for a few breaks) says of it
        entry.text = reason.group(3)
    elif text.strip() and previous[-2:] == [f"Graph Break Reason: {entry.text}", ""]:
        entry.text = text.strip()  # 2.10+: what Dynamo did, a blank line, then the message
    if text.startswith("  Hint:"):
        entry.hints.append(text[len("  Hint:") :].strip())
    if "Traceback (most recent call last):" in previous:
        # torch 2.6's skipped frame: Dynamo's own traceback, the last exception in it the one it raised.
        raised = re.match(r"torch\._dynamo\.exc\.\w+: (.*)", text)
        entry.text = raised.group(1) if raised else entry.text
        previous.append(text)
        return
    frame = STACK_FRAME.match(text)
    if frame and entry.skipped:
        entry.at = (frame.group(1), int(frame.group(2)))  # the innermost frame
    if frame:
        entry.stack.append(LoggedFrame(frame.group(1), int(frame.group(2)), frame.group(3)))
    elif (
        entry.stack
        and previous
        and previous[-1].startswith("    ")
        and set(text.strip()) <= set("^~")
        and text.strip()
    ):
        start = len(text) - len(text.lstrip()) - 4
        entry.stack[-1].carets = (start, len(text.rstrip()) - 4)
    previous.append(text)
