"""One analysis, run in a fresh child of the warm worker: a file, or a run of a project.

A file runs from the request's source text (an unsaved buffer is fine) as ``python FILE`` (or
``python -m MODULE``, for a module of a package that imports its own package) would run it from
the request's working directory, as ``__main__`` unless the settings leave out the ``__main__``
block; every compiled target it did not call itself is then called with declared example inputs,
or with synthesized ones. A run starts the project as ``python SCRIPT ARGS`` or ``python -m MODULE
ARGS`` would, from disk, in its working directory: only what it calls is compiled. Either runs to
its end, or until its time budget is spent (the fork made the working directory so).
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.abc
import importlib.machinery
import linecache
import os
import runpy
import signal
import sys
import threading
import types
from collections.abc import Callable
from typing import Any, NoReturn

from torch._dynamo.symbolic_convert import InstructionTranslatorBase

from ..log import log
from ..shared.events import (
    DoneEvent,
    ExecutedEvent,
    ExitEvent,
    FailureEvent,
    ForkEvent,
    LibrariesEvent,
    NoteEvent,
    StuckEvent,
)
from ..shared.frames import base_name
from ..shared.lines import split_lines
from ..shared.protocol import Request, Run
from ..shared.workspace import in_workspace, installed, own_file, roots_of
from .capture import Capture, Emit
from .children import Children
from .cuda import ToCpu, cap_gpu_memory, why_mapped
from .failures import (
    SOURCE_LIMIT,
    disabled_by_environment,
    disabled_by_module,
    encoding_failure,
    exit_failure,
    explain,
    failure_at,
    shadowed,
)
from .outcome import Recorder
from .stopping import ProgramStopped, Stopper
from .tampering import replaced
from .uncalled import Attempts, Runner


def analyse(
    request: Request,
    emit: Emit,
    offline: bool,
    startup: frozenset[str] = frozenset(),
    children: Children | None = None,
) -> None:
    """Analyse ``request``; ``offline``: the sandbox has cut the network (for clearer messages);
    ``startup``: the modules a plain interpreter has imported before it runs a file; ``children``:
    the events of the interpreters the program starts, if they get gbls's capture."""
    path = request.path
    own = own_file(request)
    warm = frozenset(sys.modules)  # what the warm worker had imported: the rest is this analysis's
    relay = children.relay if children is not None else lambda: None
    disabled = disabled_by_environment()
    if disabled:
        emit(disabled)
    attempts = Attempts(emit)
    capture = Capture(
        attempts.emit, path, request.reuse, request.targets, own, values=request.settings.values
    ).install()
    outcome = Recorder(attempts.emit).install()
    why = why_mapped(request.settings.device)
    log(f"CUDA mapped to the CPU: {why}" if why else "analysing on the GPU")
    to_cpu = ToCpu(why, path, emit).install() if why else None
    if to_cpu is None:
        cap_gpu_memory(request.settings.memory_mb)
    roots = roots_of(request)

    def executed() -> None:
        for file in _executed(path, roots):
            emit(ExecutedEvent(path=file))

    def executing(file: str) -> None:
        emit(ExecutedEvent(path=file))

    timed_out = _name_the_line(path, own, emit, relay, capture.stopper, executed)
    if path:
        executing(path)
    _fresh_imports(roots, to_cpu, executing)
    if request.run is None:
        source = request.source
        # Tracebacks and Dynamo read the buffer's lines, not the file's: it may be unsaved or deleted.
        linecache.cache[path] = (len(source), None, split_lines(source, keepends=True), path)
        module, folders = _new_module(path, request.settings.run_main, roots[0], request.module, request.cwd)
        log(f"running {path} as module {module.__name__}, sys.path starting {folders}")
        sys.argv = [path]  # as ``python file.py`` has it: argparse sees no arguments, and its own name
    else:
        source = _text(path)
        folders = _program_path(request.run)
        log(f"running {request.run}, sys.path starting {folders}")
    capture.stopper.armed = True
    shadowing = shadowed(folders, startup, source)
    if shadowing is not None:
        emit(shadowing)
    if request.run is None:
        failure = encoding_failure(path) or _execute(request, module, offline, to_cpu)
    else:
        failure = _start(request.run, request.settings.memory_mb, offline, own, to_cpu, emit)
    capture.stopper.armed = False  # what runs next (uncalled targets) runs to its end
    outcome.finish()
    relay()
    log(f"the program ended: {f'{failure.kind}: {failure.message}' if failure else 'ok'}")
    if failure is not None:
        emit(failure)
    executed()
    if request.run is None or not request.run.env:  # a run's variables may change how a library imports
        libraries = _libraries(warm, roots)
        if libraries:
            emit(LibrariesEvent(names=libraries))
    disabled = disabled or disabled_by_module(source)
    if disabled:
        emit(disabled)
    if request.run is None:  # a run is analysed as it runs: what it never called, it never compiles
        elsewhere = children.sites if children is not None else set()
        _call_uncalled(request, capture, attempts, module, failure, timed_out.is_set(), elsewhere, to_cpu)
    if not disabled:
        disabled = disabled_by_module(source)
        if disabled:
            emit(disabled)
    if to_cpu is not None and to_cpu.mapped:
        emit(NoteEvent(text=to_cpu.note()))
    sabotaged = replaced()
    if sabotaged:
        emit(
            FailureEvent(
                kind="tampered",
                message=f"the analysed code replaced {', '.join(sabotaged)}, which torch and gbls rely on: "
                "what gbls reports may be incomplete",
            )
        )
    emit(DoneEvent())


def _call_uncalled(
    request: Request,
    capture: Capture,
    attempts: Attempts,
    module: types.ModuleType,
    failure: FailureEvent | None,
    cut: bool,
    elsewhere: set[str],
    to_cpu: ToCpu | None,
) -> None:
    """Run the analysed file's compiled targets that nothing called, with examples or synthesized inputs;
    ``failure``: how the program failed, if it did; ``cut``: the budget ended it; ``elsewhere``: the
    compile sites another of the program's interpreters compiled, analysed there."""
    path = request.path
    runner = Runner(capture, attempts, module, path, split_lines(request.source), request, to_cpu)
    targets = capture.registry.targets
    for target in list(targets):
        # One traced inline in another's graph ran there, as the program runs it: its own call would
        # show Dynamo something the program never does.
        uncalled = not target.called and target.inlined is None
        if path in (target.path, target.call_path) and uncalled and not target.reused:
            runner.run(target)
    for static in request.targets:
        compiled = {site for t in targets for site in (t.site, *t.aliases)} | elsewhere
        if static.qualname not in request.reuse and static.id not in compiled:
            runner.run_static(static, stopped=failure is not None, cut=cut)


def _text(path: str) -> str:
    """A run's script as it is on disk, for the checks that read the source ("" if it has none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read(SOURCE_LIMIT)
    except OSError:
        return ""


def _program_path(run: Run) -> list[str]:
    """``sys.path`` as ``python`` starts it: the script's folder, or for ``-m`` the working directory,
    first, then ``PYTHONPATH``; the folders put first."""
    first = run.cwd if run.module else os.path.dirname(run.script)
    extra = [entry for entry in dict(run.env).get("PYTHONPATH", "").split(os.pathsep) if entry]
    folders = list(dict.fromkeys([first, *extra]))
    sys.path[:0] = folders
    return folders


def _start(
    run: Run, memory_mb: int, offline: bool, own: Callable[[str], bool], to_cpu: ToCpu | None, emit: Emit
) -> FailureEvent | None:
    """Run the program as ``python`` would, CUDA mapped to the CPU by ``to_cpu`` if given (a module
    run's own modules are, through the import hook); the failure that stopped it, if any."""
    try:
        if run.module:
            sys.argv = [run.module, *run.args]  # runpy puts the module's file in argv[0], as -m does
            runpy.run_module(run.module, run_name="__main__", alter_sys=True)
        elif to_cpu is None:
            sys.argv = [run.script, *run.args]
            runpy.run_path(run.script, run_name="__main__")
        else:
            sys.argv = [run.script, *run.args]
            _run_mapped(run.script, to_cpu)
    except ProgramStopped:  # at the timeout: the analysis goes on with what it never reached
        return None
    except SystemExit as error:
        if run.module == "pytest" and error.code == 1:  # pytest's "tests failed": they all ran
            emit(NoteEvent(text="pytest exited with status 1: some of the tests failed"))
            return None
        return exit_failure(error, own)
    except SyntaxError as error:
        return failure_at("syntax", f"SyntaxError: {error.msg}", error, own)
    except BaseException as error:
        kind, message = explain(error, memory_mb, offline)
        return failure_at(kind, message, error, own)
    return None


def _run_mapped(script: str, to_cpu: ToCpu) -> None:
    """``runpy.run_path(script, run_name="__main__")``, its code CUDA mapped to the CPU."""
    with open(script, "rb") as handle:
        code = to_cpu.compile(handle.read(), script)
    module = types.ModuleType("__main__")
    module.__file__ = script
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = module
    try:
        exec(code, module.__dict__)
    finally:
        sys.modules["__main__"] = saved


def _libraries(warm: frozenset[str], roots: list[str]) -> tuple[str, ...]:
    """The modules of installed libraries the program imported beyond what the warm worker had
    (a library imports many lazily: ``transformers.models.bert`` when a BertModel is built),
    from site-packages, never a workspace module."""
    names = set()
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name in warm or not isinstance(file, str) or in_workspace(file, roots):
            continue
        if installed(file):
            names.add(name)
    return tuple(sorted(names))


def _executed(path: str, roots: list[str]) -> list[str]:
    """The workspace files the program executed: the analysed file and the workspace modules it imported."""
    found = [path] if path else []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and file.endswith(".py") and in_workspace(file, roots):
            found.append(file)
    return list(dict.fromkeys(found))


# Where the budget ends the program in gbls's or Dynamo's code, it is stopped a moment later in its
# own: tried again this often, well within the time the worker gives it before SIGKILL.
STOP_RETRIES = 40
STOP_RETRY_SECONDS = 0.005


def _name_the_line(
    script: str,
    own: Callable[[str], bool],
    emit: Emit,
    relay: Callable[[], None],
    stopper: Stopper,
    executed: Callable[[], None],
) -> threading.Event:
    """Find the program's line for the endings that leave no Python exception behind; ``script``: the
    analysed file (a run's script); ``own``: the files whose lines count (the analysed file, or a
    run's workspace); ``relay``: what the program's other interpreters found, and ``executed``: the
    workspace files it executed, both said before the analysis ends without running to its end. At
    the end of the budget, the program is stopped where it is when ``stopper`` can stop it: the
    analysis goes on with what it never reached. Set once it was stopped so."""
    timed_out = threading.Event()
    # A crash (segfault, abort) prints the stack it died in: the parent reads the line from it.
    faulthandler.enable(file=sys.stderr, all_threads=False)

    retried: list[int] = []

    def stuck(signum: int, frame: types.FrameType | None) -> None:
        running = stopper.armed and not stopper.translating()
        if running and not stopper.can_stop(frame) and len(retried) < STOP_RETRIES:
            # In gbls's code or Dynamo's at this instant (an elided call, a compiled call's wrapper):
            # the program's own code is a moment away, where Ctrl-C would stop it.
            retried.append(signum)
            signal.setitimer(signal.ITIMER_REAL, STOP_RETRY_SECONDS)
            return
        relay()
        path, line, tracing = _where(frame, own)
        _, script_line, _ = _where(frame, lambda other: other == script)
        stopping = stopper.can_stop(frame)
        if not stopping:  # it will be killed where it is: what it executed is known now or never
            executed()
        emit(StuckEvent(line=line, tracing=tracing, path=path, stopped=stopping, script_line=script_line))
        if stopping:  # as Ctrl-C would; the worker waits a little longer for the rest
            stopper.armed = False
            timed_out.set()
            raise ProgramStopped(line)

    # On timeout the parent sends SIGUSR1: the handler names the line, or the line Dynamo is
    # tracing; if the code is stuck in C and the handler never runs, faulthandler's dump still does.
    signal.signal(signal.SIGUSR1, stuck)
    signal.signal(signal.SIGALRM, stuck)  # the retries, once the budget has ended
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False, chain=True)

    real_exit = os._exit

    def exit_now(status: int) -> NoReturn:
        relay()
        path, line, _ = _where(sys._getframe(1), own)
        emit(ExitEvent(code=status, line=line, path=path))
        real_exit(status)

    os._exit = exit_now
    forked: list[bool] = []

    def before_fork() -> None:
        if not forked:
            forked.append(True)
            path, line, _ = _where(sys._getframe(1), own)
            emit(ForkEvent(line=line, path=path))

    os.register_at_fork(before=before_fork)
    return timed_out


def _where(frame: types.FrameType | None, own: Callable[[str], bool]) -> tuple[str, int | None, str]:
    """The innermost line of the program's own files on the stack (its file, its line), and the
    function Dynamo is tracing there, if any."""
    path, line = "", None
    while frame is not None:
        translator = frame.f_locals.get("self") if frame.f_code.co_name in ("step", "run") else None
        if (
            isinstance(translator, InstructionTranslatorBase)
            and own(translator.f_code.co_filename)
            and (getattr(translator, "lineno", 0) or 0) > 0
        ):
            return translator.f_code.co_filename, translator.lineno, base_name(translator.f_code.co_name)
        if line is None and own(frame.f_code.co_filename):
            path, line = frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return path, line, ""


def _execute(
    request: Request, module: types.ModuleType, offline: bool, to_cpu: ToCpu | None
) -> FailureEvent | None:
    """Run the module body, CUDA mapped to the CPU by ``to_cpu`` if given; the failure that stopped it,
    if any."""
    source, path = request.source, request.path
    try:
        code = to_cpu.compile(source, path) if to_cpu else compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        line = error.lineno or 1
        lines = split_lines(source)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        column = len(text[: max((error.offset or 1) - 1, 0)].encode("utf-8"))
        return FailureEvent(kind="syntax", message=f"SyntaxError: {error.msg}", line=line, column=column)
    try:
        exec(code, module.__dict__)
    except ProgramStopped:  # at the timeout: the analysis goes on with what it never reached
        return None
    except SystemExit as error:
        return exit_failure(error, lambda other: other == path)
    except BaseException as error:
        kind, message = explain(error, request.settings.memory_mb, offline, os.path.dirname(path))
        return failure_at(kind, message, error, lambda other: other == path)
    return None


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles workspace sources afresh: a sibling edited within a second of its .pyc is still seen."""

    def path_stats(self, path: str) -> Any:
        raise OSError("gbls reads workspace sources, not their bytecode caches")


def _fresh_imports(roots: list[str], to_cpu: ToCpu | None, executing: Callable[[str], None]) -> None:
    """Workspace modules imported from their sources, CUDA mapped to the CPU by ``to_cpu`` if given;
    ``executing``: told each workspace file as it starts to run (a program killed later, stuck in C
    at the end of its budget, has said what it executed)."""
    roots = [os.path.abspath(root) for root in roots if root]
    mapping = to_cpu

    class Loader(_FreshSourceLoader):
        def exec_module(self, module: types.ModuleType) -> None:
            executing(str(self.path))
            super().exec_module(module)

        # typeshed has InspectLoader's static one; SourceLoader's, which get_code calls, is this.
        def source_to_code(  # type: ignore[override]
            self, data: Any, path: Any, *, _optimize: int = -1
        ) -> types.CodeType:
            if mapping is None:
                return compile(data, path, "exec", dont_inherit=True, optimize=_optimize)
            return mapping.compile(data, path)

    source_loader: type[importlib.abc.Loader] = Loader
    loaders: list[tuple[type[importlib.abc.Loader], list[str]]] = [
        (source_loader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    ]

    def hook(entry: str) -> Any:
        folder = os.path.abspath(entry or ".")
        # Folders only: runpy asks the path hooks about a script's own path too.
        if not in_workspace(folder, roots) or not os.path.isdir(folder):
            raise ImportError(entry)
        return importlib.machinery.FileFinder(folder, *loaders)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()


def _new_module(
    path: str, run_main: bool, workspace: str, dotted: str = "", cwd: str = ""
) -> tuple[types.ModuleType, list[str]]:
    """A module object for the analysed file, importable by its name as ``python file.py`` would be
    (``python -m dotted`` from ``cwd``, if ``dotted`` is given), and the folders put first on
    ``sys.path`` for it.

    Its folder (its package's root; for ``-m``, ``cwd``) comes first, then the workspace: only now,
    after the worker has imported everything it needs, can a workspace file shadow anything.
    """
    if dotted:
        folder, parts = cwd, dotted.split(".")
    else:
        folder = os.path.dirname(path)
        parts = [os.path.splitext(os.path.basename(path))[0]]
        while os.path.isfile(os.path.join(folder, "__init__.py")):
            parts.insert(0, os.path.basename(folder))
            folder = os.path.dirname(folder)
    roots = list(dict.fromkeys([folder, workspace]))
    sys.path[:0] = roots
    name = "__main__" if run_main else ".".join(parts)
    module = types.ModuleType(name)
    module.__file__ = path
    module.__package__ = ".".join(parts[:-1])
    if len(parts) > 1:
        try:
            importlib.import_module(module.__package__)
        except BaseException:  # the package's own failure shows when the module imports it
            pass
    if name == "__main__" or name not in sys.modules:
        sys.modules[name] = module
    return module, roots
