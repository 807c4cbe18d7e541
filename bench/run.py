"""gbls benchmark: gbls against what users run today, side by side on the same files, in one run.

    python bench/run.py [--quick] [--out bench/results/latest.json] [--sizes 1,10,50] [--projects]
    python bench/run.py --library [--quick]

Measures, on files with 1, 10 and 50 compiled functions (bench/generate.py):
  1. ``TORCH_LOGS=graph_breaks python file.py`` (default inductor backend; cold and warm caches)
  2. a fresh process calling ``torch._dynamo.explain`` on each compiled function
  3. the floor: one warm process translating the file with a no-op backend (no fork, no hooks),
     run in turn with the server's analyses so that both see the same load
  4. ``gbls check FILE`` from cold (the whole CLI, ``--no-cache``), and again from its persistent
     cache (the second check of an unchanged file, as in CI)
  5. the language server, warm: a full analysis (``gbls.analyseFile``) → publishDiagnostics and
     didSave after a one-line code edit (incremental: the other functions are kept) →
     publishDiagnostics (p50, p95); didSave of unchanged text (answered from gbls's cache)
  6. re-analysis after a one-line edit (code, comment, blank line): didChange → publishDiagnostics
  7. hover latency while an analysis runs, full or after an edit (p50, p99)
  8. server and worker RSS
  9. real projects (tests/fixtures/projects: transformers and diffusers code): discovery, ``gbls
     check`` against the bare translation (fresh ``python FILE``, no-op backend), didOpen → diagnostics
 10. what capturing recompilations costs: gbls's analysis with and without it, in turn (the
     files with 10 and 50 functions)
 11. a project run (bench/project: a GPT-2 from transformers in model.py, trained by train.py
     --compile --steps 3): ``python train.py ARGS`` on a no-op backend (the bare translation, its
     imports included), ``gbls run train.py ARGS`` from cold, and in the editor the first
     diagnostics of model.py (opened alone: the configured run reaches it) and a save of model.py
     → its diagnostics again, in turn
 12. a library's test file (bench/library: 50 tests of 50 building blocks a decorator compiles with
     dynamic=False, as HeavyBall's): ``python -m pytest tests`` on the eager backend, and ``gbls run
     -m pytest tests`` from cold, in turn (``--library`` alone)
 13. the project's fresh window → first diagnostics in real VS Code (code-server in Chromium, the
     end-to-end test's project scenario, ``--vscode`` alone): cold, and a window reopened on the
     unchanged project (gbls's cache), from the reload and from the moment the workbench showed
and, to see where the time goes, gbls's own pieces timed from this process (discovery,
worker round trip, report building) and the worker's child taken apart (bench/torch_side.py).

Prints a table of medians, the ratios against each baseline and the targets of issue 7; writes
the same numbers as JSON. Timings are wall-clock medians on a shared machine: expect noise.
This process never imports torch.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import functools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import generate
from lsp import LspClient, Message, diagnostics_for, rss_kib, worker_pid

BENCH = Path(__file__).parent
ROOT = BENCH.parent
PROJECTS = ROOT / "tests" / "fixtures" / "projects"  # files that compile transformers and diffusers code
TORCH_SIDE = BENCH / "torch_side.py"
RUN_TIMEOUT = 300  # seconds for the project run's analysis: the default 20 is for one file
DEBOUNCE_MS = 1  # gbls ignores 0 (settings accept only positive numbers); 1 ms is the smallest


@dataclass(frozen=True)
class Plan:
    """How many repeats of each measurement."""

    quick: bool
    fresh_inductor_cache: bool  # empty the inductor cache first: a cold run (tens of seconds)
    torch_logs_runs: int  # then this many warm runs
    torch_logs_max_size: int
    explain_runs: int
    check_runs: int
    save_runs: int  # side by side with as many floor runs
    edit_runs: int  # each edit and its undo
    hovers: int
    pieces_runs: int
    phases_runs: int  # 0: skip taking the worker's child apart
    capture_runs: int  # rounds of gbls's child with and without recompile capture

    @staticmethod
    def make(quick: bool) -> Plan:
        if quick:
            return Plan(
                quick=True,
                fresh_inductor_cache=False,  # bench/results/inductor-cache: warm after the first run
                torch_logs_runs=1,
                torch_logs_max_size=10,
                explain_runs=1,
                check_runs=1,
                save_runs=5,
                edit_runs=2,
                hovers=100,
                pieces_runs=2,
                phases_runs=0,
                capture_runs=4,
            )
        return Plan(
            quick=False,
            fresh_inductor_cache=True,
            torch_logs_runs=1,
            torch_logs_max_size=50,
            explain_runs=3,
            check_runs=3,
            save_runs=10,
            edit_runs=5,
            hovers=200,
            pieces_runs=5,
            phases_runs=5,
            capture_runs=10,
        )


def percentile(values: list[float], fraction: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def wall(command: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, str]:
    """Wall seconds of a whole process, and its stdout."""
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited with {done.returncode}: {done.stderr[-2000:]}")
    return seconds, done.stdout


def last_json(stdout: str) -> Any:
    return json.loads(stdout.strip().splitlines()[-1])


# -- baselines ----------------------------------------------------------------------------------


def torch_logs(path: Path, plan: Plan, cache: Path) -> dict[str, Any]:
    """``TORCH_LOGS=graph_breaks python file.py``: the default (inductor) backend, as users run it.

    With an inductor cache of its own: the first run in an empty one is the cold run.
    """
    env = {**os.environ, "TORCH_LOGS": "graph_breaks", "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    result: dict[str, Any] = {"cold": None, "warm": []}
    if plan.fresh_inductor_cache:
        shutil.rmtree(cache, ignore_errors=True)
    if not cache.exists():
        result["cold"], _ = wall([sys.executable, str(path)], env, path.parent)
    for _ in range(plan.torch_logs_runs):
        seconds, _ = wall([sys.executable, str(path)], env, path.parent)
        result["warm"].append(seconds)
    return result


def explain(path: Path, runs: int) -> dict[str, Any]:
    times, summary = [], None
    for _ in range(runs):
        seconds, stdout = wall([sys.executable, str(TORCH_SIDE), "explain", str(path)])
        times.append(seconds)
        summary = last_json(stdout)
    return {"runs": times, "summary": summary}


class Floor:
    """The floor's warm process (bench/torch_side.py floor-server): one timed run per call."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(TORCH_SIDE), "floor-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )

    def run(self, path: Path, guard_profiling: bool = True) -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{path} {int(guard_profiling)}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        if not answer:
            raise RuntimeError("the floor process died")
        return float(json.loads(answer)["seconds"])

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def gbls_command() -> str:
    """The gbls of this interpreter's environment, not whichever comes first on PATH."""
    beside = Path(sys.executable).parent / "gbls"
    return str(beside) if beside.exists() else shutil.which("gbls") or "gbls"


def check_cold(path: Path, runs: int) -> dict[str, Any]:
    """``gbls check`` from cold (no cache), then again from its persistent cache: the second run of an
    unchanged project, as in CI."""
    gbls = gbls_command()
    times, breaks = [], None
    for _ in range(runs):
        seconds, stdout = wall([gbls, "check", "--no-cache", "--format", "json", str(path)])
        times.append(seconds)
        breaks = sum(len(f["breaks"]) for f in json.loads(stdout)["files"])
    cached = []
    environment = {name: value for name, value in os.environ.items() if name != "GBLS_NO_CACHE"}
    with tempfile.TemporaryDirectory() as folder:
        command = [gbls, "check", "--cache-dir", folder, "--format", "json", str(path)]
        _, first = wall(command, environment)
        for _ in range(runs):
            seconds, stdout = wall(command, environment)
            if stdout != first:
                raise RuntimeError(f"gbls check of {path.name} printed something else from its cache")
            cached.append(seconds)
    # What a command that has nothing to do costs: the interpreter's start and gbls's imports.
    version = [wall([gbls, "--version"])[0] for _ in range(runs)]
    return {"runs": times, "breaks": breaks, "cached": cached, "version": version}


def reopen_cached(path: Path, runs: int, log: Path) -> list[float]:
    """A new editor window on an unchanged file: didOpen → first diagnostics of a fresh server, from
    the persistent cache a first server filled (the analysis behind them is not waited for)."""
    saved = dict(os.environ)
    seconds = []
    with tempfile.TemporaryDirectory() as folder:
        os.environ.pop("GBLS_NO_CACHE", None)  # the servers inherit the environment
        os.environ["GBLS_CACHE_DIR"] = folder
        try:
            for round_ in range(runs + 1):
                session = Session(path.parent, log, NEVER_MS)
                try:
                    took, _ = session.open(path)
                    deadline = time.monotonic() + 120
                    while round_ == 0 and not list(Path(folder).rglob("*.json")):  # written after publishing
                        if time.monotonic() > deadline:
                            raise RuntimeError(f"the server kept no cache entry of {path.name}")
                        time.sleep(0.1)
                finally:
                    session.close()
                if round_:
                    seconds.append(took)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    return seconds


# -- the language server ------------------------------------------------------------------------


class Session:
    """One ``python -m gbls`` for every file, driven by a stdio client that stamps arrivals."""

    def __init__(self, folder: Path, log: Path, debounce_ms: int) -> None:
        self.log = open(log, "wb")
        self.started = time.perf_counter()
        options = {"debounceMs": debounce_ms}
        self.client = LspClient([sys.executable, "-m", "gbls"], folder, options, self.log)
        self.client.call(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": folder.as_uri(),
                "workspaceFolders": [{"uri": folder.as_uri(), "name": folder.name}],
                "capabilities": {
                    "window": {"workDoneProgress": True},
                    "workspace": {"configuration": True},
                    "textDocument": {
                        "publishDiagnostics": {"versionSupport": True, "relatedInformation": True},
                        "hover": {"contentFormat": ["markdown", "plaintext"]},
                    },
                },
                "initializationOptions": {"gbls": options},
            },
        )
        self.client.notify("initialized", {})
        self.versions: dict[str, int] = {}

    def close(self) -> None:
        self.client.close()
        self.log.close()

    def rss(self) -> dict[str, Any]:
        server = self.client.process.pid
        worker = worker_pid(server)
        return {"server": rss_kib(server), "worker": rss_kib(worker) if worker else {}}

    def configure(self, **options: Any) -> None:
        """Change settings as an editor does (didChangeConfiguration, then the server pulls them)."""
        self.client.settings = {**self.client.settings, **options}
        self.client.notify("workspace/didChangeConfiguration", {"settings": {"gbls": self.client.settings}})
        time.sleep(1.0)  # the server pulls the settings and re-publishes open documents from its cache

    def open(self, path: Path) -> tuple[float, list[dict[str, Any]]]:
        """Open ``path``; seconds to its first diagnostics, and the diagnostics."""
        uri = path.as_uri()
        self.versions[uri] = 1
        after = self.client.mark()
        document = {"uri": uri, "languageId": "python", "version": 1, "text": path.read_text()}
        sent = self.client.notify("textDocument/didOpen", {"textDocument": document})
        arrived, message = self.client.wait(diagnostics_for(uri, 1), after, timeout=600)
        return arrived - sent, message["params"]["diagnostics"]

    def _change(self, uri: str, text: str) -> float:
        self.versions[uri] += 1
        document = {"uri": uri, "version": self.versions[uri]}
        return self.client.notify(
            "textDocument/didChange", {"textDocument": document, "contentChanges": [{"text": text}]}
        )

    def _diagnostics(self, uri: str, after: int, sent: float) -> float:
        arrived, _ = self.client.wait(diagnostics_for(uri, self.versions[uri]), after)
        return arrived - sent

    def reused(self, uri: str, after: int) -> int:
        """How many compiled functions the analysis finished after ``after`` kept from the last one."""

        def done(message: Message) -> bool:
            params = message.get("params") or {}
            return bool(
                message.get("method") == "gbls/status"
                and params.get("uri") == uri
                and params["state"] == "done"
            )

        _, message = self.client.wait(done, after)
        return len(message["params"].get("reused", []))

    def until_run(self, start: Callable[[], object]) -> float:
        """Seconds from ``start()`` to the configured run's analysis after it: its log line follows
        the publication of every file it reached."""
        after = self.client.mark()
        began = time.perf_counter()
        start()

        def ran(message: Message) -> bool:
            params = message.get("params") or {}
            return message.get("method") == "window/logMessage" and "analysed run" in params.get(
                "message", ""
            )

        arrived, _ = self.client.wait(ran, after, timeout=600)
        return arrived - began

    def save(self, uri: str, text: str | None = None) -> float:
        """didSave (after a didChange to ``text``, if given) → its diagnostics, in seconds."""
        after = self.client.mark()
        if text is not None:
            self._change(uri, text)
        sent = self.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        return self._diagnostics(uri, after, sent)

    def analyse_file(self, uri: str) -> float:
        """``gbls.analyseFile``: a full analysis, nothing reused → its diagnostics, in seconds."""
        after = self.client.mark()
        _, sent = self.client.request(
            "workspace/executeCommand", {"command": "gbls.analyseFile", "arguments": [uri]}
        )
        return self._diagnostics(uri, after, sent)

    def save_soon(self, uri: str, text: str) -> None:
        """didChange to ``text`` and didSave, without waiting for anything."""
        self._change(uri, text)
        self.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})

    def change(self, uri: str, text: str) -> float:
        """didChange to ``text`` → its diagnostics (the server's debounce included), in seconds."""
        after = self.client.mark()
        sent = self._change(uri, text)
        return self._diagnostics(uri, after, sent)

    def settle(self, uri: str) -> float:
        """A hover's round trip: it waits for whatever the server is still doing on its event loop."""
        position = {"line": 0, "character": 0}
        seconds, _ = self.client.call(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}
        )
        return seconds

    def hovers_during(
        self, uri: str, position: dict[str, int], count: int, start: Callable[[int], None]
    ) -> dict[str, Any]:
        """Hover every HOVER_INTERVAL while analyses run, each started by ``start(k)`` once the last ended.

        At least ``count`` hovers over at least three analyses. Only hovers answered before the
        analysis's diagnostics count; what the server does after publishing (remembering for the
        next edit) delays the first hovers of the next analysis.
        """
        latencies: list[float] = []
        answered = analyses = 0
        while (len(latencies) < count or analyses < 3) and analyses < 50:
            after = self.client.mark()
            start(analyses)
            analyses += 1
            done = diagnostics_for(uri, self.versions[uri])
            while not self.client.seen(done, after):
                began = time.perf_counter()
                seconds, result = self.client.call(
                    "textDocument/hover", {"textDocument": {"uri": uri}, "position": position}
                )
                if not self.client.seen(done, after):
                    latencies.append(seconds)
                    answered += result is not None
                time.sleep(max(0.0, HOVER_INTERVAL - (time.perf_counter() - began)))
            self.client.wait(done, after)
        return {"latencies": latencies, "with_content": answered, "analyses": analyses}


def code_edit(text: str, k: int) -> str:
    """Change one constant in the first compiled function on even ``k``; the original text on odd."""
    if k % 2:
        return text
    lines = text.splitlines(keepends=True)
    for number, line in enumerate(lines):
        if line.lstrip().startswith("y = x.sin() * "):
            lines[number] = line.replace("* 1.5", "* 7.5")
            return "".join(lines)
    raise ValueError("no line to edit")


def comment_edit(text: str, k: int) -> str:
    return text.replace("# revision 0", f"# revision {k + 1}", 1)


def blank_edit(text: str, k: int) -> str:
    """Insert a blank line near the top on even runs (every line below moves), remove it on odd ones."""
    return text.replace("# revision 0\n", "# revision 0\n\n", 1) if k % 2 == 0 else text


EDITS = {"code line": code_edit, "comment": comment_edit, "blank line": blank_edit}
FLOOR, FLOOR_UNPROFILED = "floor", "floor, guard profiling off"
FULL = "full analysis"  # gbls.analyseFile: nothing reused
SAVE = "save after code edit"  # incremental: only what the edit can change is translated again
BUSY = "busy after publishing"  # a hover sent with the diagnostics waits for what the server still does
NEVER_MS = 3_600_000  # a debounce so long that only didSave starts an analysis
HOVER_INTERVAL = 0.01  # seconds from one hover to the next: the samples cover the analysis evenly


def language_server(paths: list[Path], plan: Plan, log: Path) -> dict[str, Any]:
    """All files open in one server. First with a debounce that never fires (saves only), then 1 ms."""
    floor = Floor()
    session = Session(paths[0].parent, log, NEVER_MS)
    results: dict[str, Any] = {name: {} for name in (p.name for p in paths)}
    positions: dict[str, dict[str, int]] = {}
    try:
        for index, path in enumerate(paths):
            say(f"LSP: open {path.name}")
            first, diagnostics = session.open(path)
            results[path.name] |= {"first_diagnostics": first, "diagnostics": len(diagnostics)}
            positions[path.name] = (
                diagnostics[0]["range"]["start"] if diagnostics else {"line": 0, "character": 0}
            )
            if index == 0:
                results["start_to_first_diagnostics"] = time.perf_counter() - session.started
                results["rss_warm_idle"] = session.rss()
        for path in paths:
            say(f"LSP: full analyses and didSave, side by side with the floor: {path.name}")
            uri, text = path.as_uri(), path.read_text()
            entry = results[path.name]
            entry["save unchanged"] = [session.save(uri) for _ in range(plan.save_runs)]
            entry["floor first run"] = floor.run(path)
            for name in (FLOOR, FLOOR_UNPROFILED, FULL, SAVE, BUSY, "reused by full", "reused by save"):
                entry[name] = []
            for k in range(plan.save_runs):
                entry[FLOOR].append(floor.run(path))
                entry[FLOOR_UNPROFILED].append(floor.run(path, guard_profiling=False))
                after = session.client.mark()
                entry[FULL].append(session.analyse_file(uri))
                entry["reused by full"].append(session.reused(uri, after))
                entry[BUSY].append(session.settle(uri))  # the edit is timed from an idle server
                after = session.client.mark()
                entry[SAVE].append(session.save(uri, code_edit(text, k)))
                entry["reused by save"].append(session.reused(uri, after))
                entry[BUSY].append(session.settle(uri))
        session.configure(debounceMs=DEBOUNCE_MS)
        for path in paths:
            say(f"LSP: didChange {path.name}")
            uri, text = path.as_uri(), path.read_text()
            results[path.name]["edit"] = {
                name: [session.change(uri, edit(text, k)) for k in range(plan.edit_runs * 2)]
                for name, edit in EDITS.items()
            }
        for path in paths:
            say(f"LSP: hover during analysis {path.name}")
            uri, text, position = path.as_uri(), path.read_text(), positions[path.name]

            def full(k: int, uri: str = uri) -> None:
                session.client.request(
                    "workspace/executeCommand", {"command": "gbls.analyseFile", "arguments": [uri]}
                )

            def edit(k: int, uri: str = uri, text: str = text) -> None:
                session.save_soon(uri, code_edit(text, k))

            results[path.name]["hover, full"] = session.hovers_during(uri, position, plan.hovers, full)
            results[path.name]["hover, edit"] = session.hovers_during(uri, position, plan.hovers, edit)
        results["rss_end"] = session.rss()
    finally:
        session.close()
        floor.close()
    return results


def real_projects(runs: int, log: Path) -> dict[str, Any]:
    """Files in the style of real projects (Hugging Face models, a diffusers scheduler, a training
    script): discovery, ``gbls check`` against the bare translation (a fresh ``python FILE`` with a
    no-op backend), and the editor's first diagnostics after didOpen (all files open in one server)."""
    from gbls.engine.discovery import find_compiled

    gbls = gbls_command()
    paths = sorted(PROJECTS.glob("*.py"))
    found: dict[str, Any] = {}
    for path in paths:
        say(f"real projects: {path.name}")
        source = path.read_text()
        discovery = []
        for _ in range(20):
            start = time.perf_counter()
            find_compiled(source, str(path))
            discovery.append(time.perf_counter() - start)
        bare = [wall([sys.executable, str(TORCH_SIDE), "bare", str(path)])[0] for _ in range(runs)]
        check = [wall([gbls, "check", "--format", "json", str(path)])[0] for _ in range(runs)]
        found[path.name] = {"discovery": discovery, "bare": bare, "check": check}
    session = Session(PROJECTS, log, NEVER_MS)
    try:
        for path in paths:
            say(f"real projects, LSP: open {path.name}")
            found[path.name]["first_diagnostics"], _ = session.open(path)
    finally:
        session.close()
    return found


def project_run(runs: int, log: Path, against: str = "") -> dict[str, Any]:
    """A project run, side by side: the bare translation, ``gbls run`` from cold, and in the editor
    the first diagnostics of the model file and a save of it, each in turn (the same load). With
    ``against`` (a git revision), a longer run (``--steps 20``) to its end beside the same run under
    that revision's gbls (its early stop, say), in the same rounds."""
    folder = Path(tempfile.mkdtemp(prefix="gbls-bench-project-")) / "project"
    shutil.copytree(BENCH / "project", folder)
    arguments = ["--compile", "--steps", "3"]
    model = folder / "model.py"
    found: dict[str, Any] = {"bare": [], "run": [], "save": [], "long": [], "long_against": []}
    other = Path(tempfile.mkdtemp(prefix="gbls-bench-against-")) / "gbls" if against else None
    if other is not None:
        add = ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other), against]
        subprocess.run(add, check=True)
        found["against"] = against
    session = Session(folder, log, NEVER_MS)
    try:
        session.configure(timeout=RUN_TIMEOUT)  # a GPT-2's translation on a shared machine
        say("project run, LSP: open model.py (the configured run reaches it)")
        found["first_diagnostics"] = session.until_run(lambda: session.open(model))
        for round_ in range(runs):
            say(f"project run, round {round_ + 1}: bare, gbls run, a save of model.py")
            bare = [sys.executable, str(TORCH_SIDE), "bare-run", str(folder), "train.py", *arguments]
            found["bare"].append(wall(bare, cwd=folder)[0])
            run = [
                gbls_command(),
                "run",
                "--timeout",
                str(RUN_TIMEOUT),
                "--format",
                "json",
                "train.py",
                *arguments,
            ]
            found["run"].append(wall(run, cwd=folder)[0])
            if other is not None:
                longer = [*run[: -len(arguments)], "--compile", "--steps", "20"]
                found["long"].append(wall(longer, cwd=folder)[0])
                theirs = [sys.executable, "-m", "gbls", *longer[1:]]
                environment = dict(os.environ, PYTHONPATH=str(other))
                found["long_against"].append(wall(theirs, environment, cwd=folder)[0])
            # A code edit that keeps the break: the run analyses the model again.
            edited = model.read_text().replace(f"n_positions={64 + round_}", f"n_positions={65 + round_}")
            model.write_text(edited)
            found["save"].append(session.until_run(functools.partial(session.save, model.as_uri(), edited)))
    finally:
        session.close()
        shutil.rmtree(folder.parent, ignore_errors=True)
        if other is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=False)
    return found


def library_tests(runs: int) -> dict[str, Any]:
    """A library's test file, in turn: ``python -m pytest tests`` with every ``torch.compile`` on the
    eager backend (the graph run as it is), and ``gbls run -m pytest tests`` from cold (bench/library:
    50 tests of 50 building blocks compiled by a decorator with dynamic=False, as HeavyBall's), with
    what gbls found there."""
    folder = Path(tempfile.mkdtemp(prefix="gbls-bench-library-")) / "library"
    shutil.copytree(generate.write_library(), folder)
    found: dict[str, Any] = {"bare": [], "run": []}
    try:
        for round_ in range(runs):
            say(f"library tests, round {round_ + 1}: python -m pytest on the eager backend, gbls run")
            bare = [sys.executable, str(TORCH_SIDE), "bare-module", str(folder), "pytest", "-q", "tests"]
            found["bare"].append(wall(bare, cwd=folder)[0])
            run = [gbls_command(), "run", "--timeout", str(RUN_TIMEOUT), "--format", "json"]
            seconds, out = wall([*run, "-m", "pytest", "-q", "tests"], cwd=folder)
            found["run"].append(seconds)
            document = json.loads(out)
            functions = [f for file in document["files"] for f in file["functions"]]
            found["found"] = {
                "functions": len(functions),
                "compilations": sum(frame["compilations"] for f in functions for frame in f["frames"]),
                "recompilations": sum(r["count"] for file in document["files"] for r in file["recompiles"]),
                "breaks": sum(len(file["breaks"]) for file in document["files"]),
            }
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return found


def library_tests_table(found: dict[str, Any]) -> str:
    bare, run = (median(found[key]) or 0.0 for key in ("bare", "run"))
    seen = found.get("found", {})
    return (
        f"{'library tests (medians)':<26}{'eager':>9}{'gbls run':>10}{'run/eager':>11}   found\n"
        f"{'bench/library (50 tests)':<26}{bare:>8.1f}s{run:>9.1f}s{run / bare if bare else 0:>10.2f}x   "
        f"{seen.get('functions', 0)} functions, {seen.get('compilations', 0)} compilations, "
        f"{seen.get('recompilations', 0)} recompilations, {seen.get('breaks', 0)} breaks"
    )


def project_run_table(found: dict[str, Any]) -> str:
    bare, run, save = (median(found[key]) or 0.0 for key in ("bare", "run", "save"))
    table = (
        f"{'project run (medians)':<26}{'bare':>9}{'gbls run':>10}{'run/bare':>10}{'save→diag':>11}"
        f"{'save/bare':>11}{'open→diag':>11}\n"
        f"{'bench/project train.py':<26}{bare:>8.1f}s{run:>9.1f}s{run / bare if bare else 0:>9.2f}x"
        f"{save:>10.1f}s{save / bare if bare else 0:>10.2f}x{found['first_diagnostics']:>10.1f}s"
    )
    if found.get("long"):
        long, theirs = median(found["long"]) or 0.0, median(found["long_against"]) or 0.0
        table += (
            f"\n{'--steps 20, to its end':<26}{long:>8.1f}s   against {found['against']} (its stop): "
            f"{theirs:.1f}s, {long / theirs if theirs else 0:.2f}x"
        )
    return table


def projects_table(found: dict[str, Any]) -> str:
    lines = [
        f"{'real projects (medians)':<26}{'discovery':>11}{'bare':>9}{'check':>9}{'check/bare':>12}"
        f"{'didOpen→diagnostics':>21}"
    ]
    for name, row in found.items():
        bare, check = median(row["bare"]) or 0.0, median(row["check"]) or 0.0
        lines.append(
            f"{name:<26}{(median(row['discovery']) or 0) * 1000:>9.2f}ms{bare:>8.1f}s{check:>8.1f}s"
            f"{check / bare if bare else 0:>11.2f}x{row['first_diagnostics']:>20.1f}s"
        )
    return "\n".join(lines)


REAL_SIZE = ROOT / "tests" / "fixtures" / "runs" / "gpt2"  # GPT-2 124M as nanoGPT's train.py trains it


def watched_check(folder: Path, *options: str) -> dict[str, Any]:
    """``gbls check train.py`` in ``folder`` with the worker's log: the wall time of the answer, when
    the log said each compilation (from the command's start), and what the answer says."""
    command = [gbls_command(), "check", "--no-cache", "--format", "json", *options, "train.py"]
    environment = dict(os.environ, GBLS_WORKER_LOG="1")
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    compiled: list[float] = []
    assert process.stderr is not None and process.stdout is not None
    for line in process.stderr:
        if "gbls worker" in line and ": compiled, compile id" in line:
            compiled.append(time.perf_counter() - start)
    answer = json.loads(process.stdout.read())
    process.wait()
    seconds = time.perf_counter() - start
    (script,) = [entry for entry in answer["files"] if entry["path"] == str(folder / "train.py")]
    cut = script["cut"]
    where = f"{Path(cut['path']).name}:{cut['range']['start']['line']}" if cut and cut["range"] else ""
    return {
        "seconds": seconds,
        "compiled_at": compiled,
        "compilations": sum(f["compilations"] for entry in answer["files"] for f in entry["functions"]),
        "cut": where,
        "status": process.returncode,
    }


def real_size(runs: int) -> dict[str, Any]:
    """A program at its real size as it ships (GPT-2 124M, 12 x 1024 tokens, device "cuda", never
    ending), nothing configured, default settings, side by side: ``gbls check train.py``, the same
    with exact values, and the floor (the program with no gbls at all and its graphs not computed,
    until its second compilation: Dynamo alone on the same frames and inputs)."""
    folder = Path(tempfile.mkdtemp(prefix="gbls-bench-real-size-")) / "gpt2"
    shutil.copytree(REAL_SIZE, folder)
    subprocess.run([sys.executable, "data/openwebtext/prepare.py"], cwd=folder, check=True)
    found: dict[str, Any] = {"auto": [], "exact": [], "floor": []}
    try:
        for round_ in range(runs):
            say(f"real size, round {round_ + 1}: gbls check train.py, with exact values, the floor")
            found["auto"].append(watched_check(folder))
            found["exact"].append(watched_check(folder, "--values", "exact"))
            # On the CPU, where gbls maps the program's CUDA: python itself has no CUDA to run it on here.
            floor = [
                sys.executable,
                str(TORCH_SIDE),
                "real-floor",
                str(folder),
                "train.py",
                "2",
                "--device=cpu",
            ]
            seconds, stdout = wall(floor, cwd=folder)
            found["floor"].append({"seconds": seconds, **last_json(stdout)})
    finally:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return found


def real_size_table(found: dict[str, Any]) -> str:
    def at(rows: list[dict[str, Any]], index: int) -> str:
        times = [row["compiled_at"][index] for row in rows if len(row["compiled_at"]) > index]
        return f"{median(times):.1f}s" if times else "never"

    lines = [
        f"{'GPT-2 124M trainer, as it ships (medians)':<44}{'answer':>9}{'1st compile':>13}"
        f"{'2nd (grad_mode)':>17}{'compilations':>14}  cut at"
    ]
    for key, label in (("auto", "gbls check train.py"), ("exact", "gbls check --values exact")):
        rows = found[key]
        lines.append(
            f"{label:<44}{median([r['seconds'] for r in rows]) or 0:>8.1f}s{at(rows, 0):>13}{at(rows, 1):>17}"
            f"{rows[-1]['compilations']:>14}  {rows[-1]['cut']}"
        )
    floor = found["floor"]
    seconds = median([r["seconds"] for r in floor]) or 0
    lines.append(
        f"{'floor: python train.py, not computed, no gbls':<44}{seconds:>8.1f}s"
        f"{'':>13}{median([r['to_compilations'] for r in floor]) or 0:>16.1f}s{2:>14}"
        f"  (Dynamo translating: {median([r['translating'] for r in floor]) or 0:.1f}s)"
    )
    return "\n".join(lines)


EXTENSION = ROOT / "vscode-extension"
# The window measured in real VS Code has 3 s to show a reopened project's diagnostics (issue 35).
REOPEN_TARGET_S = 3.0


def vscode_window(runs: int, log: Path) -> dict[str, Any]:
    """The project's "fresh window → first diagnostics" in real VS Code (code-server in Chromium), cold
    and reopened on gbls's cache: the end-to-end test's project scenario, which measures both."""
    found: dict[str, Any] = {"cold": [], "cached": [], "cached_after_workbench": []}
    if not (EXTENSION / ".e2e" / "code-server").is_dir() or not (EXTENSION / "gbls.vsix").exists():
        found["missing"] = "code-server or gbls.vsix: run vscode-extension/scripts/ci-setup.sh"
        return found
    with log.open("w") as written:
        for round_ in range(runs):
            say(f"VS Code, the project scenario, round {round_ + 1}")
            timings = log.with_suffix(f".{round_}.json")
            environment = dict(
                os.environ, GBLS_PYTHON=sys.executable, GBLS_E2E_ONLY="project", GBLS_E2E_TIMINGS=str(timings)
            )
            done = subprocess.run(
                ["npm", "run", "e2e"], cwd=EXTENSION, env=environment, capture_output=True, text=True
            )
            written.write(done.stdout + done.stderr)
            if done.returncode != 0:
                raise RuntimeError(f"the end-to-end test failed ({log}): {done.stdout[-2000:]}")
            measured = json.loads(timings.read_text())
            for key, name in (
                ("cold", "cold"),
                ("cached", "cached"),
                ("cachedAfterWorkbench", "cached_after_workbench"),
            ):
                found[name].append(measured[key])
    return found


def vscode_table(found: dict[str, Any]) -> str:
    if "missing" in found:
        return f"VS Code window: not measured ({found['missing']})"
    cold, cached, after = (median(found[key]) or 0.0 for key in ("cold", "cached", "cached_after_workbench"))
    verdict = "met" if after <= REOPEN_TARGET_S else "missed"
    return (
        f"{'VS Code window (medians)':<26}{'cold':>9}{'reopened':>10}{'of it, after the workbench':>28}\n"
        f"{'fixtures/project model.py':<26}{cold:>8.1f}s{cached:>9.1f}s{after:>27.1f}s"
        f"   (target {REOPEN_TARGET_S:.0f} s after the workbench: {verdict})"
    )


# -- gbls's pieces, timed from here ----------------------------------------------------------------


class Laps:
    """Named lists of durations."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def lap(self, label: str) -> Iterator[None]:
        start = time.perf_counter()
        yield
        self.add(label, time.perf_counter() - start)

    def add(self, label: str, seconds: float) -> None:
        self.times.setdefault(label, []).append(seconds)


async def pieces(paths: list[Path], runs: int) -> dict[str, Any]:
    """gbls's pieces as the server strings them together, timed one by one from this process.

    A full analysis: discovery, the worker's round trip, report, diagnostics, and what the
    server remembers for the next edit. Then the one-line edit: which functions can be kept, the
    worker's round trip with them kept, the report, and the kept results moved into it.
    """
    from gbls.engine import incremental, views
    from gbls.engine.discovery import find_compiled
    from gbls.engine.report import build
    from gbls.engine.sources import read_source
    from gbls.lsp.diagnostics import file_diagnostics
    from gbls.runtime.sandbox import launch
    from gbls.runtime.session import static_targets
    from gbls.runtime.workerclient import Worker
    from gbls.settings import Settings
    from gbls.worker.shared.protocol import Request

    settings = Settings()
    key = (settings.for_worker(), settings.worker_key())
    worker = Worker(lambda: launch(None, [str(paths[0].parent)], settings.sandbox))
    start = time.perf_counter()
    await worker.start()
    sandbox = worker.info.sandbox if worker.info else "unknown"
    results: dict[str, Any] = {"worker_start": time.perf_counter() - start, "sandbox": sandbox}

    async def analyse(path: Path, source: str, reuse: tuple[str, ...], laps: Laps, kind: str) -> Any:
        with laps.lap(f"discovery ({kind})"):
            sites = find_compiled(source, str(path))
        request = Request(
            id=worker.new_id(),
            path=str(path),
            source=source,
            settings=settings.for_worker(),
            targets=static_targets(sites),
            workspace=str(path.parent),
            reuse=reuse,
        )
        with laps.lap(f"worker round trip ({kind})"):
            result = await worker.analyse(request)
        laps.add(f"child, Result.seconds ({kind})", result.seconds)
        with laps.lap(f"report ({kind})"):
            report = build(str(path), source, result, sites, read_source)
        lines = source.splitlines()
        with laps.lap(f"diagnostics ({kind})"):
            file_diagnostics(views.by_file(report)[report.path], source, settings.severity, lambda _: lines)
        return report

    try:
        for path in paths:
            source, laps = path.read_text(), Laps()
            start = time.perf_counter()
            find_compiled(source, str(path))
            results.setdefault("discovery_first_call", {})[path.name] = time.perf_counter() - start
            for _ in range(runs):
                report = await analyse(path, source, (), laps, "full")
                with laps.lap("remember (incremental memory)"):
                    memory = incremental.remember(report, source, key, [], read_source)
                edited = code_edit(source, 0)
                with laps.lap("reusable (which functions to keep)"):
                    reuse = incremental.reusable(memory, edited, key, read_source)
                laps.add("functions kept", float(len(reuse)))
                fresh = await analyse(path, edited, tuple(reuse), laps, "after the edit")
                with laps.lap("combine (kept results moved in)"):
                    incremental.combine(fresh, memory, reuse, edited, read_source)
            results[path.name] = laps.times
    finally:
        await worker.stop()
    return results


def phases(path: Path, runs: int) -> dict[str, Any]:
    _, stdout = wall([sys.executable, str(TORCH_SIDE), "phases", str(path), str(runs)])
    return dict(last_json(stdout))


def capture_cost(path: Path, runs: int) -> dict[str, Any]:
    """gbls's child with and without recompile capture, in turn (``torch_side.py capture-cost``)."""
    _, stdout = wall([sys.executable, str(TORCH_SIDE), "capture-cost", str(path), str(runs)])
    return dict(last_json(stdout))


# -- report -------------------------------------------------------------------------------------


def seconds_text(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 0.01:
        return f"{value * 1000:.1f} ms"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def ratio_text(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}x"


# Table rows (seconds, medians unless a percentile is named).
LOGS_COLD = "TORCH_LOGS=graph_breaks, cold inductor cache"
LOGS_WARM = "TORCH_LOGS=graph_breaks, warm inductor cache"
EXPLAIN = "fresh process + torch._dynamo.explain"
FLOOR_ROW = "floor: warm translator, no-op backend"
CHECK = "gbls check, cold"
CHECK_CACHED = "gbls check, again (persistent cache)"
VERSION = "gbls --version"
REOPEN_CACHED = "editor reopen → first diagnostics (persistent cache)"
FULL_ROW = "LSP full analysis, warm (gbls.analyseFile)"
SAVE_ROW = "LSP didSave after a one-line edit (incremental)"
BASELINES = {
    "TORCH_LOGS (cold cache)": LOGS_COLD,
    "TORCH_LOGS (warm cache)": LOGS_WARM,
    "fresh-process explain": EXPLAIN,
    "floor (warm translator)": FLOOR_ROW,
    "gbls check (cold)": CHECK,
}
HOVER_FULL_P99 = "hover during a full analysis, p99"
HOVER_EDIT_P99 = "hover during didSave-after-edit analyses, p99"
MEASURED = {"full analysis": FULL_ROW, "didSave after an edit": SAVE_ROW}


def summarise(data: dict[str, Any], names: list[str]) -> dict[str, dict[str, float | None]]:
    """Per file, the median (or a percentile) of every measurement, in seconds."""

    def p95(values: list[float]) -> float | None:
        return percentile(values, 0.95) if values else None

    rows: dict[str, dict[str, float | None]] = {}
    for name in names:
        lsp = data["lsp"].get(name, {})
        logs = data["torch_logs"].get(name, {})
        hover = lsp.get("hover, full", {}).get("latencies", [])
        hover_edit = lsp.get("hover, edit", {}).get("latencies", [])
        rows[name] = {
            LOGS_COLD: logs.get("cold"),
            LOGS_WARM: median(logs.get("warm", [])),
            EXPLAIN: median(data["explain"].get(name, {}).get("runs", [])),
            FLOOR_ROW: median(lsp.get(FLOOR, [])),
            "floor, Dynamo's guard-latency profiling off": median(lsp.get(FLOOR_UNPROFILED, [])),
            CHECK: median(data["check"].get(name, {}).get("runs", [])),
            CHECK_CACHED: median(data["check"].get(name, {}).get("cached", [])),
            VERSION: median(data["check"].get(name, {}).get("version", [])),
            REOPEN_CACHED: median(data["check"].get(name, {}).get("reopen", [])),
            "LSP didOpen → first diagnostics": lsp.get("first_diagnostics"),
            FULL_ROW: median(lsp.get(FULL, [])),
            FULL_ROW + ", p95": p95(lsp.get(FULL, [])),
            SAVE_ROW: median(lsp.get(SAVE, [])),
            SAVE_ROW + ", p95": p95(lsp.get(SAVE, [])),
            "LSP didSave, text unchanged (cached)": median(lsp.get("save unchanged", [])),
            "LSP server busy after publishing (hover sent then)": median(lsp.get(BUSY, [])),
            **{
                f"LSP didChange ({kind}), debounce 1 ms": median(times)
                for kind, times in lsp.get("edit", {}).items()
            },
            "hover during a full analysis, p50": median(hover),
            HOVER_FULL_P99: percentile(hover, 0.99) if hover else None,
            "hover during didSave-after-edit analyses, p50": median(hover_edit),
            HOVER_EDIT_P99: percentile(hover_edit, 0.99) if hover_edit else None,
            "hover during either, max": max(hover + hover_edit, default=None),
        }
    return rows


def memory(data: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """VmRSS and VmHWM (peak), MiB, of the server and the worker: idle after the first file, at the end."""
    found: dict[str, dict[str, dict[str, float]]] = {}
    for moment, key in (("idle after the first file", "rss_warm_idle"), ("at the end", "rss_end")):
        for process in ("server", "worker"):
            status = data["lsp"].get(key, {}).get(process, {})
            found.setdefault(process, {})[moment] = {name: kib / 1024 for name, kib in status.items()}
    return found


def memory_line(found: dict[str, dict[str, dict[str, float]]]) -> str:
    parts = []
    for process, moments in found.items():
        for moment, status in moments.items():
            parts.append(f"{process} {status.get('VmRSS', 0):.0f} / {status.get('VmHWM', 0):.0f} ({moment})")
    return "RSS / peak RSS, MiB: " + ", ".join(parts)


def ratios(rows: dict[str, dict[str, float | None]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Each baseline divided by each of gbls's warm latencies (how many times faster gbls is)."""
    found: dict[str, dict[str, dict[str, float | None]]] = {}
    for measured, key in MEASURED.items():
        found[measured] = {}
        for name, row in rows.items():
            gbls = row.get(key)
            found[measured][name] = {
                label: (row[baseline] / gbls if row.get(baseline) and gbls else None)  # type: ignore[operator]
                for label, baseline in BASELINES.items()
            }
    return found


def paired(data: dict[str, Any], names: list[str]) -> dict[str, float | None]:
    """Median over rounds of full analysis / floor in the same round: less exposed to the load's drift."""
    found: dict[str, float | None] = {}
    for name in names:
        lsp = data["lsp"].get(name, {})
        pairs = zip(lsp.get(FULL, []), lsp.get(FLOOR, []), strict=False)
        found[name] = median([full / floor for full, floor in pairs if floor > 0])
    return found


def targets(rows: dict[str, dict[str, float | None]], names: list[str]) -> list[dict[str, Any]]:
    """Issue 7's targets on the 10-function file, for the didSave after an edit and for a full analysis."""
    ten = next((n for n in names if n.endswith("010.py")), names[-1])
    row = rows[ten]
    found: list[dict[str, Any]] = []

    def target(name: str, value: float | None, limit: float, at_most: bool, unit: str) -> None:
        met = None if value is None else (value <= limit if at_most else value >= limit)
        found.append({"target": name, "value": value, "limit": limit, "unit": unit, "met": met})

    def over(numerator: float | None, denominator: float | None) -> float | None:
        return numerator / denominator if numerator and denominator else None

    for measured, key in MEASURED.items():
        warm = row.get(key)
        target(f"{measured}: ≤ 1.5x the floor ({ten})", over(warm, row.get(FLOOR_ROW)), 1.5, True, "x")
        target(f"{measured}: ≤ 0.3 s ({ten})", warm, 0.3, True, "s")
        target(
            f"{measured}: ≥ 20x faster than TORCH_LOGS, warm cache",
            over(row.get(LOGS_WARM), warm),
            20,
            False,
            "x",
        )
        target(
            f"{measured}: ≥ 20x faster than TORCH_LOGS, cold cache",
            over(row.get(LOGS_COLD), warm),
            20,
            False,
            "x",
        )
        target(
            f"{measured}: ≥ 5x faster than fresh-process explain", over(row.get(EXPLAIN), warm), 5, False, "x"
        )
        sized = sorted((int(n[4:7]), rows[n].get(key)) for n in names if rows[n].get(key))
        if len(sized) >= 3:
            (n1, t1), (n2, t2), (n3, t3) = sized[0], sized[1], sized[-1]
            early, late = (t2 - t1) / (n2 - n1), (t3 - t2) / (n3 - n2)  # type: ignore[operator]
            target(
                f"{measured}: linear in functions (cost per function {n2}→{n3} / {n1}→{n2} ≤ 1.5)",
                late / early if early > 0 else None,
                1.5,
                True,
                "x",
            )
    for name in names:  # as ruff's cached run: the answer from the cache costs a fraction of the work
        cached = over(rows[name].get(CHECK_CACHED), rows[name].get(CHECK))
        target(f"gbls check from the persistent cache ≤ 0.1x the cold check ({name})", cached, 0.1, True, "x")
    for label, key in (("a full analysis", HOVER_FULL_P99), ("didSave-after-edit analyses", HOVER_EDIT_P99)):
        hover = [value for r in rows.values() if (value := r.get(key)) is not None]
        target(
            f"hover p99 ≤ 50 ms during {label} (worst file)", max(hover) if hover else None, 0.05, True, "s"
        )
    return found


def table(rows: dict[str, dict[str, float | None]], names: list[str]) -> str:
    labels = list(next(iter(rows.values())))
    width = max(len(label) for label in labels) + 2
    lines = [f"{'median wall time':<{width}}" + "".join(f"{generate_label(n):>12}" for n in names)]
    for label in labels:
        lines.append(f"{label:<{width}}" + "".join(f"{seconds_text(rows[n].get(label)):>12}" for n in names))
    return "\n".join(lines)


def ratio_table(
    found: dict[str, dict[str, dict[str, float | None]]], names: list[str], paired: dict[str, float | None]
) -> str:
    width = max(len(f"baseline / {measured} p50") for measured in found) + 2
    lines = []
    for measured, by_file in found.items():
        title = f"baseline / {measured} p50"
        lines.append(f"{title:<{width}}" + "".join(f"{generate_label(n):>12}" for n in names))
        for label in BASELINES:
            lines.append(
                f"  {label:<{width - 2}}" + "".join(f"{ratio_text(by_file[n][label]):>12}" for n in names)
            )
    title = "full analysis / floor, by round"
    lines.append(f"{title:<{width}}" + "".join(f"{ratio_text(paired[n]):>12}" for n in names))
    return "\n".join(lines)


def generate_label(name: str) -> str:
    count = int(name[4:7])
    return f"{count} fn{'s' * (count != 1)}"


def target_lines(found: list[dict[str, Any]]) -> str:
    lines = []
    for item in found:
        mark = {True: "met    ", False: "NOT MET", None: "n/a    "}[item["met"]]
        value = item["value"]
        shown = "—" if value is None else (seconds_text(value) if item["unit"] == "s" else f"{value:.2f}x")
        lines.append(f"  [{mark}] {item['target']}: {shown}")
    return "\n".join(lines)


CAPTURE_LIMIT = 1.10  # recompile capture may cost at most 10% of the analysis without it


def capture_lines(found: dict[str, Any]) -> str:
    """Recompile capture's cost, per file: medians with and without it, and the ratio by round."""
    header = f"{'':<34}{'with':>10}{'without':>10}{'ratio':>10}"
    lines = [f"  {header}"]
    for name, measured in found.items():
        for key in ("cpu", "wall"):
            with_, without = median(measured[f"{key} with"]), median(measured[f"{key} without"])
            ratio = measured[f"{key} ratio by round"]
            label = f"{generate_label(name)}, {key.upper() if key == 'cpu' else key} seconds"
            lines.append(f"  {label:<34}{seconds_text(with_):>10}{seconds_text(without):>10}{ratio:>9.3f}x")
    return "\n".join(lines)


def capture_targets(found: dict[str, Any]) -> list[dict[str, Any]]:
    """Recompile capture within 10% of the analysis without it: CPU time, median ratio by round."""
    return [
        {
            "target": (
                f"recompile capture: ≤ {CAPTURE_LIMIT:.2f}x the analysis without it, CPU time "
                f"({generate_label(name)})"
            ),
            "value": ratio,
            "limit": CAPTURE_LIMIT,
            "unit": "x",
            "met": ratio <= CAPTURE_LIMIT,
        }
        for name, measured in found.items()
        for ratio in [measured["cpu ratio by round"]]
    ]


def phase_lines(data: dict[str, Any]) -> str:
    """The waterfall: where a warm analysis's time goes, from the floor to the editor."""
    lines = []
    for name, times in data.get("pieces", {}).items():
        if isinstance(times, dict) and "discovery (full)" in times:
            lines.append(f"  {name}, gbls's pieces timed one by one:")
            for label, values in times.items():
                value = median(values)
                shown = (
                    f"{value:.0f}" if label == "functions kept" and value is not None else seconds_text(value)
                )
                lines.append(f"    {label:<52}{shown:>10}")
    for name, found in data.get("phases", {}).items():
        lines.append(f"  {name}, forked from a parent warmed as gbls's worker is:")
        lines.append(f"    {'':<52}{'wall':>10}{'CPU':>10}{'faults':>10}")
        for label, run in found["medians"].items():
            lines.append(
                f"    {label:<52}{seconds_text(run['wall']):>10}{seconds_text(run['cpu']):>10}"
                f"{run['page faults']:>10.0f}"
            )
        lines.append(
            "    inside gbls's child as it is (outermost calls; collections happen during translation):"
        )
        inside = found["inside_child"].get("gbls child", {})
        for label, value in sorted(inside.items(), key=lambda item: -item[1]):
            lines.append(f"      {label:<50}{seconds_text(value):>10}")
        profile = found["profile"]
        lines.append("    self time by category under cProfile (one run, gbls's child as it is):")
        for label, value in profile["self_seconds_by_category"].items():
            lines.append(f"      {label:<50}{seconds_text(value):>10}")
        lines.append("    top functions by self time:")
        for row in profile["top_self"][:6]:
            lines.append(f"      {row['function'][-70:]:<72}{seconds_text(row['self']):>10}")
    return "\n".join(lines)


# -- main -------------------------------------------------------------------------------------------


def report(data: dict[str, Any], rows: dict[str, dict[str, float | None]], names: list[str]) -> str:
    """Everything run.py prints: the table, the ratios, memory, the targets and where the time goes."""
    load = ", ".join(f"{x:.1f}" for x in data["meta"]["load_average_before"])
    reused = ", ".join(
        f"{generate_label(n)} {median(data['lsp'][n].get('reused by save', [])) or 0:.0f}" for n in names
    )
    return "\n".join(
        [
            f"gbls benchmark, {data['meta']['date']}, {data['meta']['machine']}, load average {load}",
            "",
            table(rows, names),
            "",
            ratio_table(data["ratios"], names, data["paired_ratio_to_floor"]),
            f"compiled functions the incremental didSave kept (median): {reused}",
            "",
            memory_line(data["memory"]),
            "",
            projects_table(data["projects"]),
            "",
            library_tests_table(data["library_tests"]),
            "",
            vscode_table(data["vscode"]),
            "",
            "targets (issue 7):",
            target_lines(data["targets"]),
            "",
            "recompile capture (issue 15): gbls's child with and without it, medians; ratio by round:",
            capture_lines(data["capture_cost"]),
            target_lines(data["capture_targets"]),
            "",
            "where the time goes (medians):",
            phase_lines(data),
            "",
        ]
    )


def git_state() -> dict[str, Any]:
    def git(*arguments: str) -> str:
        done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--", "gbls"))}


def nothing_to_do(sizes: str | None, runs: int) -> int:
    """The rows of a command with nothing to do: ``gbls --version``, and ``gbls check`` answered from
    its cache beside the cold check it answers for."""
    paths = generate.write(tuple(int(s) for s in sizes.split(",")) if sizes else generate.SIZES[:2])
    found = {}
    for path in paths:
        say(f"gbls check, cold and cached, gbls --version: {path.name}")
        found[path.name] = check_cold(path, runs)
    for name, measured in found.items():
        cold, cached, version = (median(measured[key]) or 0.0 for key in ("runs", "cached", "version"))
        print(
            f"{name}: {CHECK} {cold:.2f} s, {CHECK_CACHED} {cached:.3f} s ({cached / cold:.2f}x), "
            f"{VERSION} {version:.3f} s"
        )
    return 0


def one_row(out: Path, key: str, found: dict[str, Any], table: str) -> int:
    """A run of one row alone: its numbers as JSON under ``key`` beside the date and the load, and its
    table printed."""
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"), "load": os.getloadavg()}
    out.write_text(json.dumps({"meta": meta, key: found}, indent=1) + "\n")
    print(table)
    return 0


def main(argv: list[str] | None = None) -> int:
    # Every measurement is from cold, but the cached row's (check_cold): no `.gbls_cache` of an earlier
    # run serves the servers, `gbls check` or `gbls run` here.
    os.environ["GBLS_NO_CACHE"] = "1"
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no cold TORCH_LOGS, no profile")
    parser.add_argument("--out", type=Path, default=BENCH / "results" / "latest.json")
    parser.add_argument("--sizes", help="numbers of compiled functions (default 1,10,50; --quick: 1,10)")
    parser.add_argument("--projects", action="store_true", help="only the real-projects row")
    parser.add_argument("--project-run", action="store_true", help="only the project-run row")
    parser.add_argument(
        "--against", default="", help="with --project-run: a git revision of gbls whose runs to time beside"
    )
    parser.add_argument("--vscode", action="store_true", help="only the VS Code window row (code-server)")
    parser.add_argument("--library", action="store_true", help="only the library-tests row")
    parser.add_argument(
        "--real-size",
        action="store_true",
        help="only the GPT-2 trainer as it ships, its answer and its floor",
    )
    parser.add_argument(
        "--nothing-to-do", action="store_true", help="only gbls --version and gbls check, cold and cached"
    )
    arguments = parser.parse_args(argv)
    if arguments.nothing_to_do:
        return nothing_to_do(arguments.sizes, 3 if arguments.quick else 5)
    if arguments.project_run:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        runs = 1 if arguments.quick else 3
        found = project_run(runs, arguments.out.with_suffix(".project-run.log"), arguments.against)
        return one_row(arguments.out, "project_run", found, project_run_table(found))
    if arguments.real_size:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        found = real_size(1 if arguments.quick else 3)
        return one_row(arguments.out, "real_size", found, real_size_table(found))
    if arguments.library:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        found = library_tests(1 if arguments.quick else 3)
        return one_row(arguments.out, "library_tests", found, library_tests_table(found))
    if arguments.vscode:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        found = vscode_window(1 if arguments.quick else 3, arguments.out.with_suffix(".vscode.log"))
        return one_row(arguments.out, "vscode", found, vscode_table(found))
    if arguments.projects:
        arguments.out.parent.mkdir(parents=True, exist_ok=True)
        found = real_projects(1 if arguments.quick else 3, arguments.out.with_suffix(".projects.log"))
        return one_row(arguments.out, "projects", found, projects_table(found))
    plan = Plan.make(arguments.quick)
    sizes = tuple(int(s) for s in arguments.sizes.split(",")) if arguments.sizes else generate.SIZES
    if arguments.quick and not arguments.sizes:
        sizes = sizes[:2]
    paths = generate.write(sizes)
    names = [p.name for p in paths]
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    data: dict[str, Any] = {
        "meta": {
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "quick": plan.quick,
            "plan": plan.__dict__,
            "python": platform.python_version(),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
            "load_average_before": os.getloadavg(),
            **git_state(),
        },
        "torch_logs": {},
        "explain": {},
        "check": {},
    }
    # --quick keeps its inductor caches (warm after the first run); a full run starts each file cold.
    caches = BENCH / "results" / "inductor-cache" if plan.quick else Path(tempfile.mkdtemp(prefix="gbls-"))
    for path in paths:
        if int(path.name[4:7]) <= plan.torch_logs_max_size:
            say(f"TORCH_LOGS=graph_breaks python {path.name}")
            data["torch_logs"][path.name] = torch_logs(path, plan, caches / path.stem)
        say(f"explain, gbls check: {path.name}")
        data["explain"][path.name] = explain(path, plan.explain_runs)
        data["check"][path.name] = check_cold(path, plan.check_runs)
        say(f"editor reopen from the persistent cache: {path.name}")
        log = arguments.out.with_suffix(".reopen.log")
        data["check"][path.name]["reopen"] = reopen_cached(path, plan.check_runs, log)
    if not plan.quick:
        shutil.rmtree(caches, ignore_errors=True)
    log = arguments.out.with_suffix(".server.log")
    data["lsp"] = language_server(paths, plan, log)
    data["projects"] = real_projects(plan.check_runs, arguments.out.with_suffix(".projects.log"))
    data["project_run"] = project_run(plan.check_runs, arguments.out.with_suffix(".project-run.log"))
    data["library_tests"] = library_tests(plan.check_runs)
    data["vscode"] = vscode_window(1 if plan.quick else 3, arguments.out.with_suffix(".vscode.log"))
    say("gbls's pieces: discovery, worker round trip, report")
    data["pieces"] = asyncio.run(pieces(paths, plan.pieces_runs))
    data["phases"] = {}
    if plan.phases_runs:
        for path in paths:
            if path.name.endswith(("001.py", "010.py")):  # the fixed cost, and the cost per function
                say(f"the worker's child taken apart: {path.name}")
                data["phases"][path.name] = phases(path, plan.phases_runs)
    data["capture_cost"] = {}
    for path in paths:
        if int(path.name[4:7]) >= 10:
            say(f"recompile capture, with and without: {path.name}")
            data["capture_cost"][path.name] = capture_cost(path, plan.capture_runs)
    rows = summarise(data, names)
    data["summary"] = rows
    data["memory"] = memory(data)
    data["ratios"] = ratios(rows)
    data["paired_ratio_to_floor"] = paired(data, names)
    data["targets"] = targets(rows, names)
    data["capture_targets"] = capture_targets(data["capture_cost"])
    data["meta"]["load_average_after"] = os.getloadavg()
    data["meta"]["seconds"] = time.perf_counter() - began
    arguments.out.write_text(json.dumps(data, indent=1) + "\n")
    print(report(data, rows, names))
    print(f"JSON: {arguments.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
