"""The benchmark's measurements that need torch; run.py starts this script in a fresh process.

    python bench/torch_side.py explain FILE          the fresh-process ``torch._dynamo.explain`` baseline
    python bench/torch_side.py phases FILE RUNS      where a gbls analysis's time goes, from a warm parent
    python bench/torch_side.py capture-cost FILE RUNS  gbls's analysis with and without recompile capture
    python bench/torch_side.py floor-server          the warm-translator floor (no-op backend, no fork),
                                                     one run per line ``PATH PROFILE`` on stdin
    python bench/torch_side.py bare FILE             the bare translation: ``python FILE`` in a fresh
                                                     process, torch.compile on a no-op backend
    python bench/torch_side.py bare-run CWD SCRIPT ARGS   ``python SCRIPT ARGS`` so, from CWD
    python bench/torch_side.py bare-module CWD MODULE ARGS  ``python -m MODULE ARGS`` so (pytest)

The others print one JSON object on the last line of stdout. The module's own prints go to /dev/null.
"""

from __future__ import annotations

import ast
import contextlib
import cProfile
import dataclasses
import gc
import json
import os
import pstats
import selectors
import statistics
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
import torch._dynamo
import torch._dynamo.guards as guards

Backend = Callable[[torch.fx.GraphModule, list[Any]], Callable[..., Any]]


REAL_GUARD_PROFILING = getattr(guards, "profile_guard_manager", None)


def guard_profiling(on: bool) -> None:
    """Dynamo times each new guard set once, after flushing the CPU cache, for a metric only."""
    if REAL_GUARD_PROFILING is not None:
        setattr(guards, "profile_guard_manager", REAL_GUARD_PROFILING if on else lambda *args: 0.0)  # noqa: B010


def noop_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
    return gm.forward


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The analysed module prints; keep our stdout for the one JSON line."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextlib.contextmanager
def compile_replaced(backend: Backend | None) -> Iterator[None]:
    """``torch.compile`` forced to ``backend``, or (``None``) the identity: every call runs eagerly."""
    real = torch.compile

    def forced(model: Any = None, **options: Any) -> Any:
        if model is None:
            return lambda actual: forced(actual, **options)
        if backend is None:
            return model
        options["backend"] = backend
        options.pop("mode", None)
        options.pop("options", None)
        return real(model, **options)

    torch.compile = forced
    try:
        yield
    finally:
        torch.compile = real


def execute(path: str, source: str) -> types.ModuleType:
    """Run the file's text as a fresh module, as gbls's child does (not as ``__main__``)."""
    module = types.ModuleType(os.path.splitext(os.path.basename(path))[0])
    module.__file__ = path
    sys.modules[module.__name__] = module
    exec(compile(source, path, "exec", dont_inherit=True), module.__dict__)
    return module


def module_calls(source: str) -> list[tuple[str, str]]:
    """The module-level calls ``name(args)``: each compiled function's original callable and its inputs."""
    calls = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if isinstance(call.func, ast.Name) and call.func.id != "print":
                arguments = ", ".join(ast.unparse(a) for a in call.args)
                calls.append((call.func.id, f"({arguments},)" if arguments else "()"))
    return calls


def explain(path: str) -> dict[str, Any]:
    """Baseline: a fresh process (this one) calls ``torch._dynamo.explain`` on every compiled function."""
    source = open(path).read()
    with quiet(), compile_replaced(None):
        namespace = execute(path, source).__dict__
        graphs = breaks = 0
        for name, args in module_calls(source):
            torch.manual_seed(0)
            output = torch._dynamo.explain(namespace[name])(*eval(args, namespace))
            graphs += output.graph_count
            breaks += output.graph_break_count
    return {"functions": len(module_calls(source)), "graphs": graphs, "breaks": breaks}


def bare(path: str) -> dict[str, Any]:
    """Baseline for real projects: ``python FILE`` (``__main__``, its imports included), every
    ``torch.compile`` on a no-op backend: Dynamo translates, nothing is compiled."""
    start = time.perf_counter()
    with quiet(), compile_replaced(noop_backend):
        module = types.ModuleType("__main__")
        module.__file__ = path
        exec(compile(open(path).read(), path, "exec", dont_inherit=True), module.__dict__)
    return {"seconds_in_process": time.perf_counter() - start}


def bare_run(cwd: str, script: str, arguments: list[str]) -> dict[str, Any]:
    """Baseline for a project run: ``python SCRIPT ARGS`` from ``cwd`` (its imports included), every
    ``torch.compile`` on a no-op backend."""
    import runpy

    start = time.perf_counter()
    os.chdir(cwd)
    sys.argv = [script, *arguments]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    with quiet(), compile_replaced(noop_backend):
        runpy.run_path(script, run_name="__main__")
    return {"seconds_in_process": time.perf_counter() - start}


def real_floor(cwd: str, script: str, compilations: int, arguments: list[str]) -> dict[str, Any]:
    """The floor of a program at its real size: ``python SCRIPT ARGS`` from ``cwd`` with no gbls at all
    (no fork, no sandbox, no hooks), its graphs not computed as gbls does not compute them (else one
    GPT-2 evaluation batch is 30 s of arithmetic), until Dynamo has compiled ``compilations`` times.
    Its time to there, from this process's start, and the seconds Dynamo spent translating."""
    import runpy

    from gbls.worker.analysis import elision

    started = time.perf_counter()
    done: list[float] = []
    translating: list[float] = []
    original = torch._dynamo.convert_frame._compile

    def counted(*args: Any, **kwargs: Any) -> Any:
        begin = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            translating.append(time.perf_counter() - begin)
            done.append(time.perf_counter() - started)
            if len(done) == compilations:
                raise SystemExit(0)  # the program runs on for ever: the floor ends here

    def elided(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        return elision.elided(gm)[0] or gm.forward

    torch._dynamo.convert_frame._compile = counted
    os.chdir(cwd)
    sys.argv = [script, *arguments]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    with contextlib.suppress(SystemExit), quiet(), compile_replaced(elided):
        runpy.run_path(script, run_name="__main__")
    return {"to_compilations": done[-1] if done else None, "translating": sum(translating)}


def bare_module(cwd: str, module: str, arguments: list[str]) -> dict[str, Any]:
    """Baseline for a library's tests: ``python -m MODULE ARGS`` from ``cwd`` (``pytest``), every
    ``torch.compile`` on a no-op backend (the graph run as it is: the eager backend)."""
    import runpy

    start = time.perf_counter()
    os.chdir(cwd)
    sys.argv = [module, *arguments]
    sys.path.insert(0, cwd)
    with quiet(), compile_replaced(noop_backend), contextlib.suppress(SystemExit):
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    return {"seconds_in_process": time.perf_counter() - start}


def floor_server() -> None:
    """The floor, as a warm process that stays up: run.py times it side by side with the server.

    Reads lines ``PATH PROFILE`` on stdin; for each, resets Dynamo and runs the file's module with
    a no-op backend, then answers ``{"seconds": ...}`` on one line. ``PROFILE`` 0 turns off
    Dynamo's guard-latency profiling (a metric that flushes the CPU cache once per compiled frame).
    """
    answers = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)  # the module's prints must not reach the answers
    sources: dict[str, str] = {}
    for line in sys.stdin:
        path, profile = line.split()
        source = sources.setdefault(path, open(path).read())
        guard_profiling(profile == "1")
        torch._dynamo.reset()
        with compile_replaced(noop_backend):
            start = time.perf_counter()
            execute(path, source)
            seconds = time.perf_counter() - start
        answers.write(json.dumps({"seconds": seconds}) + "\n")
        answers.flush()


# -- phases: the warm gbls worker's child, taken apart ------------------------------------------


Measured = dict[str, float]


def _reap(pid: int, start: float) -> Measured:
    """Wait for ``pid``: wall seconds since ``start``, its CPU seconds, its minor page faults."""
    _, _, usage = os.wait4(pid, 0)
    return {
        "wall": time.perf_counter() - start,
        "cpu": usage.ru_utime + usage.ru_stime,
        "page faults": float(usage.ru_minflt),
    }


def _fork_and_wait(child: Callable[[], None]) -> Measured:
    """Fork, run ``child`` there (it must end with os._exit), and reap it."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            child()
        finally:
            os._exit(70)
    return _reap(pid, start)


def _floor_child(path: str, source: str) -> None:
    with quiet(), compile_replaced(noop_backend):
        execute(path, source)
    os._exit(0)


class Timed:
    """Wraps module attributes so that the child can say how long each phase took (outermost calls)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._depth: dict[str, int] = {}
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)

    def _gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_start = time.perf_counter()
        else:
            label = f"garbage collection (generation {info['generation']})"
            self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - self._gc_start

    def wrap(self, owner: Any, attribute: str, label: str) -> None:
        original = getattr(owner, attribute)

        def timed(*args: Any, **kwargs: Any) -> Any:
            depth = self._depth.get(label, 0)
            self._depth[label] = depth + 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self._depth[label] = depth
                if depth == 0:
                    self.seconds[label] = self.seconds.get(label, 0.0) + time.perf_counter() - start

        setattr(owner, attribute, timed)


def _gbls_child(request: Any, events_w: int, output_w: int, report: str, profile: bool) -> None:
    """gbls's real child code path (``child.run``), timed by phase, optionally under cProfile."""
    import torch._dynamo.convert_frame as convert_frame

    from gbls.worker.analysis import capture
    from gbls.worker.analysis import run as analyse
    from gbls.worker.fork import limits
    from gbls.worker.fork import setup as child

    timed = Timed()
    timed.wrap(analyse, "_execute", "module execution (incl. translation)")
    timed.wrap(analyse, "_fresh_imports", "import hooks")
    timed.wrap(analyse, "_name_the_line", "signal/faulthandler setup")
    timed.wrap(capture.Capture, "install", "hook installation")
    timed.wrap(convert_frame, "_compile", "Dynamo translation (convert_frame._compile)")
    timed.wrap(limits, "apply", "rlimits")
    timed.wrap(child, "_isolate", "namespaces and a fresh /tmp")
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    real_exit = child._exit

    def finish(code: int) -> None:
        total = time.perf_counter() - start
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(report + ".prof")
        with open(report, "w") as handle:
            json.dump({"total": total, "phases": timed.seconds}, handle)
        real_exit(code)

    child._exit = finish  # type: ignore[assignment]
    scratch = tempfile.mkdtemp(prefix="gbls-bench-")
    if profiler is not None:
        profiler.enable()
    null = os.open(os.devnull, os.O_WRONLY)
    child.run(request, events_w, os.urandom(16), output_w, scratch, null, sandboxed=True, startup=frozenset())


def _gbls_run(request: Any, report: str, profile: bool = False) -> Measured:
    """Fork gbls's child, read its events and output to the end as the zygote does, and reap it."""
    events_r, events_w = os.pipe()
    output_r, output_w = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(events_r)
            os.close(output_r)
            _gbls_child(request, events_w, output_w, report, profile)
        finally:
            os._exit(70)
    os.close(events_w)
    os.close(output_w)
    events = 0
    with selectors.DefaultSelector() as selector:
        selector.register(events_r, selectors.EVENT_READ)
        selector.register(output_r, selectors.EVENT_READ)
        while selector.get_map():
            for key, _ in selector.select():
                data = os.read(key.fd, 1 << 16)
                if not data:
                    selector.unregister(key.fd)
                    os.close(key.fd)
                elif key.fd == events_r:
                    events += data.count(b"\n")
    return {**_reap(pid, start), "events": float(events)}


CATEGORIES = (
    ("gbls hooks and runner", "/gbls/worker/"),
    ("Dynamo", "/torch/_dynamo/"),
    ("FX", "/torch/fx/"),
    ("fake tensors / subclasses", "/torch/_subclasses/"),
    ("sympy / symbolic shapes", "sympy"),
    ("nn.Module", "/torch/nn/"),
    ("other torch", "/torch/"),
    ("json", "/json/"),
    ("traceback / linecache / inspect", ("traceback.py", "linecache.py", "inspect.py", "tokenize.py")),
)


def _categorise(filename: str) -> str:
    for label, pattern in CATEGORIES:
        patterns = (pattern,) if isinstance(pattern, str) else pattern
        if any(p in filename for p in patterns):
            return label
    if filename == "~":
        return "builtins (C)"
    return "other Python"


def profile_summary(prof_path: str, top: int = 12) -> dict[str, Any]:
    """Self time by category, and the top functions by self and by cumulative time."""
    stats = pstats.Stats(prof_path)
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_category: dict[str, float] = {}
    rows = []
    for (filename, line, name), (_, calls, tottime, cumtime, _) in raw.items():
        label = _categorise(filename)
        by_category[label] = by_category.get(label, 0.0) + tottime
        short = filename.split("site-packages/")[-1].split("/work/main/")[-1]
        rows.append((f"{short}:{line}({name})", calls, tottime, cumtime))
    total = sum(by_category.values()) or 1.0
    return {
        "self_seconds_by_category": dict(sorted(by_category.items(), key=lambda kv: -kv[1])),
        "self_fraction_by_category": {k: v / total for k, v in by_category.items()},
        "top_self": [
            {"function": f, "calls": c, "self": t, "cumulative": cum}
            for f, c, t, cum in sorted(rows, key=lambda r: -r[2])[:top]
        ],
        "top_cumulative_gbls": [
            {"function": f, "calls": c, "self": t, "cumulative": cum}
            for f, c, t, cum in sorted(rows, key=lambda r: -r[3])
            if "gbls/" in f
        ][:top],
    }


def phases(path: str, runs: int) -> dict[str, Any]:
    """From a parent warmed as gbls's worker warms itself: fork costs, the floor forked, gbls's child.

    Then gbls's child after changes to the parent that gbls could make, in the same rounds (the
    machine's load drifts): ``gc.freeze()`` after the warm-up (full collections in the child
    otherwise walk, and so copy, the parent's whole heap), and Dynamo's guard-latency profiling
    replaced by a no-op. Last, a richer warm-up: the parent translates a file like this one once.
    Each fork reports wall and CPU seconds and minor page faults (copy-on-write copies among them).
    """
    from gbls.engine.discovery import find_compiled
    from gbls.worker.shared.protocol import Request
    from gbls.worker.supervisor import zygote

    source = open(path).read()
    with quiet():
        zygote.warm_up()
    request = Request(id="bench", path=os.path.abspath(path), source=source, workspace=os.path.dirname(path))
    # What gbls's incremental re-analysis sends after an edit inside the first function: keep the others.
    sites = find_compiled(source, request.path)
    incremental = dataclasses.replace(request, reuse=tuple(site.qualname for site in sites[1:]))
    measured: dict[str, list[Measured]] = {}
    child_phases: list[dict[str, Any]] = []

    def floor_child() -> None:
        _floor_child(path, source)

    with tempfile.TemporaryDirectory(prefix="gbls-bench-") as folder:
        report = os.path.join(folder, "phases.json")

        def record(label: str, run: Measured) -> None:
            measured.setdefault(label, []).append(run)
            if label.startswith("gbls child"):
                with open(report) as handle:
                    child_phases.append({"variant": label, **json.load(handle)})

        for _ in range(runs):
            record("fork + exit", _fork_and_wait(lambda: os._exit(0)))
            record("floor, forked", _fork_and_wait(floor_child))
            record("gbls child", _gbls_run(request, report))
            if incremental.reuse:
                record("gbls child, incremental (all but one function kept)", _gbls_run(incremental, report))
            gc.freeze()
            record("gbls child, gc.freeze() in the parent", _gbls_run(request, report))
            guard_profiling(False)
            record("gbls child, gc.freeze() + no guard profiling", _gbls_run(request, report))
            record("floor, forked, gc.freeze() + no guard profiling", _fork_and_wait(floor_child))
            guard_profiling(True)
            gc.unfreeze()
        _gbls_run(request, report, profile=True)
        profile = profile_summary(report + ".prof")
        warm_path = os.path.join(folder, "warmup_module.py")
        with open(warm_path, "w") as handle:
            handle.write(source)
        with quiet(), compile_replaced(noop_backend):
            execute(warm_path, source)
        torch._dynamo.reset()
        gc.freeze()
        guard_profiling(False)
        for _ in range(runs):
            record("gbls child, all three (+ a richer warm-up)", _gbls_run(request, report))
    medians = {
        label: {key: statistics.median(run[key] for run in runs_) for key in runs_[0]}
        for label, runs_ in measured.items()
    }
    inside: dict[str, dict[str, float]] = {}
    for variant in dict.fromkeys(run["variant"] for run in child_phases):
        mine = [run for run in child_phases if run["variant"] == variant]
        labels = dict.fromkeys(label for run in mine for label in run["phases"])
        inside[variant] = {
            label: statistics.median(run["phases"].get(label, 0.0) for run in mine) for label in labels
        }
    return {"medians": medians, "runs": measured, "inside_child": inside, "profile": profile}


def capture_cost(path: str, runs: int) -> dict[str, Any]:
    """What capturing recompilations costs: gbls's child as it is, and with ``Capture._hook_recompiles``
    left out (a monkeypatch of this measurement, not an option of gbls), in turn, round by round,
    each forked from a parent warmed as gbls's worker warms itself. Wall and CPU seconds of each
    child; CPU time is what the hooks cost, wall time what the user waits for (on a shared machine
    it is mostly the load)."""
    from gbls.worker.analysis import capture
    from gbls.worker.shared.protocol import Request
    from gbls.worker.supervisor import zygote

    source = open(path).read()
    with quiet():
        zygote.warm_up()
    request = Request(id="bench", path=os.path.abspath(path), source=source, workspace=os.path.dirname(path))
    hook = capture.Capture._hook_recompiles
    measured: dict[str, list[Measured]] = {"with": [], "without": []}

    def run(variant: str, report: str) -> Measured:
        capture.Capture._hook_recompiles = hook if variant == "with" else (lambda self: None)  # type: ignore[method-assign]
        try:
            return _gbls_run(request, report)
        finally:
            capture.Capture._hook_recompiles = hook  # type: ignore[method-assign]

    with tempfile.TemporaryDirectory(prefix="gbls-bench-") as folder:
        report = os.path.join(folder, "phases.json")
        run("with", report)  # the parent's first fork pays for what later ones find warm
        for round_ in range(runs):  # alternate which goes first: the load drifts
            for variant in ("with", "without") if round_ % 2 == 0 else ("without", "with"):
                measured[variant].append(run(variant, report))

    def paired(key: str) -> float:
        pairs = zip(measured["with"], measured["without"], strict=True)
        return statistics.median(a[key] / b[key] for a, b in pairs)

    return {
        **{
            f"{key} {variant}": [m[key] for m in found]
            for variant, found in measured.items()
            for key in ("wall", "cpu")
        },
        "cpu ratio by round": paired("cpu"),
        "wall ratio by round": paired("wall"),
    }


def main() -> None:
    command = sys.argv[1]
    if command != "explain":  # the explain baseline runs as a user would run it
        torch.set_num_threads(1)  # as gbls's worker does
    if command == "floor-server":
        floor_server()
        return
    if command == "bare-run":
        print(json.dumps(bare_run(sys.argv[2], sys.argv[3], sys.argv[4:])))
        return
    if command == "real-floor":
        print(json.dumps(real_floor(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:])))
        return
    if command == "bare-module":
        print(json.dumps(bare_module(sys.argv[2], sys.argv[3], sys.argv[4:])))
        return
    path = os.path.abspath(sys.argv[2])
    if command == "explain":
        result = explain(path)
    elif command == "bare":
        result = bare(path)
    elif command == "phases":
        result = phases(path, int(sys.argv[3]))
    elif command == "capture-cost":
        result = capture_cost(path, int(sys.argv[3]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
