"""One analysis, run in a fresh child of the warm worker: execute the module, then run what it left uncalled.

The module runs from the request's source text (an unsaved buffer is fine) under its own module
name, not ``__main__`` unless the settings ask for the ``__main__`` block. Every compiled target
the module did not call itself is called with declared example inputs, or with synthesized ones.
"""

from __future__ import annotations

import faulthandler
import importlib
import importlib.abc
import importlib.machinery
import linecache
import os
import signal
import sys
import types
from typing import Any, NoReturn

from torch._dynamo.symbolic_convert import InstructionTranslatorBase

from ..events import CudaOnlyEvent, DoneEvent, ExitEvent, FailureEvent, ForkEvent, NoteEvent, StuckEvent
from ..log import log
from ..shared.lines import split_lines
from ..shared.protocol import Request
from .capture import Capture, Emit
from .cuda import ToCpu, cap_gpu_memory, why_mapped
from .failures import (
    disabled_by_environment,
    disabled_by_module,
    encoding_failure,
    explain,
    failure_at,
    shadowed,
)
from .frames import base_name
from .steady import ProgramStopped
from .tampering import replaced
from .uncalled import Attempts, Runner


def run(request: Request, emit: Emit, offline: bool, startup: frozenset[str] = frozenset()) -> None:
    """Analyse ``request``; ``offline``: the sandbox has cut the network (for clearer messages);
    ``startup``: the modules a plain interpreter has imported before it runs a file."""
    path = request.path
    source = request.source
    _name_the_line(path, emit)
    # Tracebacks and Dynamo read the buffer's lines, not the file's: it may be unsaved or deleted.
    linecache.cache[path] = (len(source), None, split_lines(source, keepends=True), path)
    disabled = disabled_by_environment()
    if disabled:
        emit(disabled)
    attempts = Attempts(emit)
    capture = Capture(attempts.emit, path, request.reuse, request.targets).install()
    why = why_mapped(request.settings.device)
    log(f"CUDA mapped to the CPU: {why}" if why else "analysing on the GPU")
    to_cpu = ToCpu(why).install() if why else None
    if to_cpu is None:
        cap_gpu_memory(request.settings.memory_mb)
    workspace = os.path.abspath(request.workspace or os.path.dirname(path))
    _fresh_imports([workspace], to_cpu)
    module, roots = _new_module(path, request.settings.run_main, workspace)
    log(f"running {path} as module {module.__name__}, sys.path starting {roots}")
    sys.argv = [path]  # as ``python file.py`` has it: argparse sees no arguments, and its own name
    capture.steady.armed = True
    shadowing = shadowed(roots, startup, source)
    if shadowing is not None:
        emit(shadowing)
    failure = encoding_failure(path) or _execute(request, module, offline, to_cpu, emit)
    capture.steady.disarm()
    log(f"the module ended: {f'{failure.kind}: {failure.message}' if failure else 'ok'}")
    if failure is not None:
        emit(failure)
    disabled = disabled or disabled_by_module(source)
    if disabled:
        emit(disabled)
    lines = split_lines(source)
    runner = Runner(capture, attempts, module, path, lines, request, to_cpu)
    targets = capture.registry.targets
    for target in list(targets):
        if path in (target.path, target.call_path) and not target.called and not target.reused:
            runner.run(target)
    for static in request.targets:
        compiled = {site for t in targets for site in (t.site, *t.aliases)}
        if static.qualname not in request.reuse and static.id not in compiled:
            runner.run_static(static, stopped=failure is not None)
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


def _name_the_line(path: str, emit: Emit) -> None:
    """Find the analysed file's line for the endings that leave no Python exception behind."""
    # A crash (segfault, abort) prints the stack it died in: the parent reads the line from it.
    faulthandler.enable(file=sys.stderr, all_threads=False)

    def stuck(signum: int, frame: types.FrameType | None) -> None:
        line, tracing = _where(frame, path)
        emit(StuckEvent(line=line, tracing=tracing))

    # On timeout the parent sends SIGUSR1: the handler names the line, or the line Dynamo is
    # tracing; if the code is stuck in C and the handler never runs, faulthandler's dump still does.
    signal.signal(signal.SIGUSR1, stuck)
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False, chain=True)

    real_exit = os._exit

    def exit_now(status: int) -> NoReturn:
        emit(ExitEvent(code=status, line=_where(sys._getframe(1), path)[0]))
        real_exit(status)

    os._exit = exit_now
    forked: list[bool] = []

    def before_fork() -> None:
        if not forked:
            forked.append(True)
            emit(ForkEvent(line=_where(sys._getframe(1), path)[0]))

    os.register_at_fork(before=before_fork)


def _where(frame: types.FrameType | None, path: str) -> tuple[int | None, str]:
    """The innermost line of ``path`` on the stack, and the function Dynamo is tracing there, if any."""
    line = None
    while frame is not None:
        translator = frame.f_locals.get("self") if frame.f_code.co_name in ("step", "run") else None
        if (
            isinstance(translator, InstructionTranslatorBase)
            and translator.f_code.co_filename == path
            and (getattr(translator, "lineno", 0) or 0) > 0
        ):
            return translator.lineno, base_name(translator.f_code.co_name)
        if line is None and frame.f_code.co_filename == path:
            line = frame.f_lineno
        frame = frame.f_back
    return line, ""


def _execute(
    request: Request, module: types.ModuleType, offline: bool, to_cpu: ToCpu | None, emit: Emit
) -> FailureEvent | None:
    """Run the module body, CUDA mapped to the CPU by ``to_cpu`` if given; the failure that stopped it,
    if any. The analysed file's CUDA-only calls that ``to_cpu`` does not run are emitted."""
    source, path = request.source, request.path
    try:
        if to_cpu is None:
            code = compile(source, path, "exec", dont_inherit=True)
        else:
            code, cuda_only = to_cpu.compile(source, path)
            for call in cuda_only:
                emit(CudaOnlyEvent(call=call))
    except SyntaxError as error:
        line = error.lineno or 1
        lines = split_lines(source)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        column = len(text[: max((error.offset or 1) - 1, 0)].encode("utf-8"))
        return FailureEvent(kind="syntax", message=f"SyntaxError: {error.msg}", line=line, column=column)
    try:
        exec(code, module.__dict__)
    except ProgramStopped:  # it repeated itself: what is left shows Dynamo nothing new
        return None
    except SystemExit as error:
        return failure_at(
            "exit", f"the module called sys.exit({error.code!r}) while being imported", error, path
        )
    except BaseException as error:
        kind, message = explain(error, request.settings.memory_mb, offline)
        return failure_at(kind, message, error, path)
    return None


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles workspace sources afresh: a sibling edited within a second of its .pyc is still seen."""

    def path_stats(self, path: str) -> Any:
        raise OSError("gbls reads workspace sources, not their bytecode caches")


def _fresh_imports(roots: list[str], to_cpu: ToCpu | None) -> None:
    """Workspace modules imported from their sources, CUDA mapped to the CPU by ``to_cpu`` if given."""
    roots = [os.path.abspath(root) for root in roots if root]
    source_loader: type[importlib.abc.Loader] = _FreshSourceLoader
    if to_cpu is not None:
        mapping = to_cpu

        class MappedSourceLoader(_FreshSourceLoader):
            # typeshed has InspectLoader's static one; SourceLoader's, which get_code calls, is this.
            def source_to_code(  # type: ignore[override]
                self, data: Any, path: Any, *, _optimize: int = -1
            ) -> types.CodeType:
                return mapping.compile(data, path)[0]

        source_loader = MappedSourceLoader
    loaders: list[tuple[type[importlib.abc.Loader], list[str]]] = [
        (source_loader, importlib.machinery.SOURCE_SUFFIXES),
        (importlib.machinery.SourcelessFileLoader, importlib.machinery.BYTECODE_SUFFIXES),
        (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
    ]

    def hook(entry: str) -> Any:
        folder = os.path.abspath(entry or ".")
        in_workspace = any(folder == root or folder.startswith(root + os.sep) for root in roots)
        if not in_workspace or "site-packages" in folder or "dist-packages" in folder:
            raise ImportError(entry)
        return importlib.machinery.FileFinder(folder, *loaders)

    sys.path_hooks.insert(0, hook)
    sys.path_importer_cache.clear()


def _new_module(path: str, run_main: bool, workspace: str) -> tuple[types.ModuleType, list[str]]:
    """A module object for the analysed file, importable by its name as ``python file.py`` would be,
    and the folders put first on ``sys.path`` for it.

    Its folder (its package's root) comes first, then the workspace: only now, after the worker
    has imported everything it needs, can a workspace file shadow anything.
    """
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
