"""One analysis, run in a fresh child of the warm worker: execute the module, then run what it left uncalled.

The module runs from the request's source text (an unsaved buffer is fine) under its own module
name, not ``__main__`` unless the settings ask for the ``__main__`` block. Every compiled target
the module did not call itself is called with declared example inputs, or with synthesized ones.
"""

from __future__ import annotations

import errno
import faulthandler
import importlib
import importlib.machinery
import io
import linecache
import os
import re
import signal
import socket
import stat
import sys
import sysconfig
import tokenize
import traceback
import types
from collections.abc import Callable
from typing import Any, NoReturn

import torch
import torch._dynamo.eval_frame
from torch._dynamo.symbolic_convert import InstructionTranslatorBase

from ..events import (
    DiscardEvent,
    DoneEvent,
    Event,
    ExitEvent,
    FailureEvent,
    ForkEvent,
    StaticEvent,
    StuckEvent,
    VerdictEvent,
    with_attempt,
)
from ..shared.directives import example_sources
from ..shared.lines import split_lines
from ..shared.protocol import FailureKind, Request, StaticTarget
from . import inputs
from .capture import Capture, Emit, ProgramStopped, Target, base_name
from .tampering import replaced


class Attempts:
    """Numbers events by input attempt so that a failed attempt's events can be discarded."""

    def __init__(self, emit: Emit) -> None:
        self.emit_raw = emit
        self.current = 0

    def emit(self, event: Event) -> None:
        self.emit_raw(with_attempt(event, self.current))

    def next(self) -> None:
        self.current += 1

    def discard(self) -> None:
        self.emit_raw(DiscardEvent(attempt=self.current))


def run(request: Request, emit: Emit, offline: bool, startup: frozenset[str] = frozenset()) -> None:
    """Analyse ``request``; ``offline``: the sandbox has cut the network (for clearer messages);
    ``startup``: the modules a plain interpreter has imported before it runs a file."""
    path = request.path
    source = request.source
    _name_the_line(path, emit)
    # Tracebacks and Dynamo read the buffer's lines, not the file's: it may be unsaved or deleted.
    linecache.cache[path] = (len(source), None, split_lines(source, keepends=True), path)
    disabled = _disabled_by_environment()
    if disabled:
        emit(disabled)
    attempts = Attempts(emit)
    capture = Capture(attempts.emit, path, request.reuse, request.targets).install()
    workspace = os.path.abspath(request.workspace or os.path.dirname(path))
    _fresh_imports([workspace])
    module, roots = _new_module(path, request.settings.run_main, workspace)
    sys.argv = [path]  # as ``python file.py`` has it: argparse sees no arguments, and its own name
    capture.stop_when_steady = True
    shadowed = _shadowed(roots, startup, source)
    if shadowed is not None:
        emit(shadowed)
    failure = _encoding_failure(path) or _execute(request, module, offline)
    capture.stop_no_more()
    if failure is not None:
        emit(failure)
    disabled = disabled or _disabled_by_module(source)
    if disabled:
        emit(disabled)
    lines = split_lines(source)
    runner = _Runner(capture, attempts, module, path, lines, request)
    for target in list(capture.targets):
        if path in (target.path, target.call_path) and not target.called and not target.reused:
            runner.run(target)
    for static in request.targets:
        compiled = {site for t in capture.targets for site in (t.site, *t.aliases)}
        if static.qualname not in request.reuse and static.id not in compiled:
            runner.run_static(static, stopped=failure is not None)
    if not disabled:
        disabled = _disabled_by_module(source)
        if disabled:
            emit(disabled)
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


STDLIB_DIR = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep


def _shadowed(folders: list[str], startup: frozenset[str], source: str) -> FailureEvent | None:
    """A workspace file that a plain ``python`` would import in place of a module torch (or gbls) had
    already imported here, before the analysed code ran: the analysis uses the real module."""
    suffixes = importlib.machinery.all_suffixes()
    found: list[tuple[str, str, str]] = []  # (name, the real module's file, the workspace file)
    listings = {}
    for folder in folders:
        try:
            listings[folder] = set(os.listdir(folder))
        except OSError:
            listings[folder] = set()
    for name, module in list(sys.modules.items()):
        if "." in name or name in startup or name.startswith("_gbls_worker") or module is None:
            continue
        real = os.path.realpath(getattr(module, "__file__", None) or "")
        for folder in folders:
            entries = listings[folder]
            candidates = [name + suffix for suffix in suffixes if name + suffix in entries]
            if name in entries and os.path.isfile(os.path.join(folder, name, "__init__.py")):
                candidates.insert(0, os.path.join(name, "__init__.py"))
            if candidates:
                shadow = os.path.join(folder, candidates[0])
                if os.path.realpath(shadow) != real:
                    found.append((name, real, shadow))
                break
    if not found:
        return None
    name, real, shadow = sorted(found)[0]
    owner = "the standard library's" if real.startswith(STDLIB_DIR) else "the installed"
    message = (
        f"{shadow} shadows {owner} module `{name}`, which torch imports: run with plain `python`, this "
        f"file would be imported in its place (and `import torch` would likely fail). gbls analysed the "
        f"file with the real `{name}`; rename {os.path.basename(shadow)} to run it as it is meant to"
    )
    others = sorted(os.path.basename(other) for _, _, other in found if other != shadow)
    if others:
        message += f" (also shadowing: {', '.join(others)})"
    importing = re.compile(rf"^\s*(import|from)\s+{re.escape(name)}\b", re.MULTILINE)
    at = importing.search(source)
    return FailureEvent(
        kind="shadow", message=message, line=source.count("\n", 0, at.start()) + 1 if at else None
    )


def _disabled_by_environment() -> FailureEvent | None:
    if torch._dynamo.config.disable and os.environ.get("TORCH_COMPILE_DISABLE") == "1":
        return _disabled("TORCH_COMPILE_DISABLE=1 in the environment gbls runs in", None)
    return None


def _disabled_by_module(source: str) -> FailureEvent | None:
    """Dynamo switched off by the analysed code: torch.compile then runs everything eagerly."""
    if torch._dynamo.config.disable:
        how, pattern = "torch._dynamo.config.disable = True", r"\bdisable\s*=\s*True"
    elif getattr(getattr(torch._dynamo.eval_frame, "_stance", None), "stance", "") == "force_eager":
        how, pattern = 'torch.compiler.set_stance("force_eager")', r"set_stance\("
    else:
        return None
    at = re.search(pattern, source)
    return _disabled(f"{how} in the analysed code", source.count("\n", 0, at.start()) + 1 if at else None)


def _disabled(how: str, line: int | None) -> FailureEvent:
    message = (
        f"Dynamo was disabled by {how}, so torch.compile compiled nothing: gbls cannot see the graph "
        "breaks of a file that runs eagerly"
    )
    return FailureEvent(kind="disabled", message=message, line=line)


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


SOURCE_LIMIT = 16 << 20


def _encoding_failure(path: str) -> FailureEvent | None:
    """Python refuses to import a file that is not in its declared encoding (UTF-8 by default)."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None  # deleted or unreadable: the buffer is all there is
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None  # a pipe or a device: never read, the buffer is all there is
        data = os.read(descriptor, SOURCE_LIMIT)
    except OSError:
        return None
    finally:
        os.close(descriptor)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        data.decode(encoding)
        return None
    except SyntaxError as error:
        line, message = error.lineno or 1, str(error.msg)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        byte = f"byte 0x{data[error.start]:02x} on line {line}"
        message = (
            f"the file is not valid {error.encoding.upper()} ({byte}), so Python cannot import it; "
            "save it as UTF-8 or declare its encoding (PEP 263)"
        )
    return FailureEvent(kind="syntax", message=message, line=line)


def _execute(request: Request, module: types.ModuleType, offline: bool) -> FailureEvent | None:
    """Run the module body; the failure that stopped it, if any."""
    source, path = request.source, request.path
    try:
        code = compile(source, path, "exec", dont_inherit=True)
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
        return _failure(
            "exit", f"the module called sys.exit({error.code!r}) while being imported", error, path
        )
    except BaseException as error:
        kind, message = _explain(error, request.settings.memory_mb, offline)
        return _failure(kind, message, error, path)
    return None


def _explain(error: BaseException, memory_mb: int, offline: bool) -> tuple[FailureKind, str]:
    """What kind of failure ``error`` is, in words that say what the sandbox had to do with it."""
    described = _describe_error(error)
    causes = _causes(error)
    if isinstance(error, EOFError):
        return "stdin", f"read from stdin (input()), which is closed during analysis ({described})"
    for cause in causes:
        if isinstance(cause, MemoryError) or "can't allocate memory" in str(cause):
            asked = re.search(r"tried to allocate (\d+) bytes", str(cause))
            size = f" allocating {int(asked.group(1)) / 2**30:.1f} GB" if asked else ""
            return "memory", f"ran out of memory (limit {memory_mb} MB){size}"
    if isinstance(error, ImportError):
        return "import", described
    for cause in causes:
        if not isinstance(cause, OSError):
            continue
        if offline and _is_network(cause):
            return "network", f"network access is blocked in the gbls sandbox ({_describe_error(cause)})"
        if cause.errno == errno.EROFS:
            return "write", (
                "writing outside the scratch directory (tempfile.gettempdir()) is refused in the gbls "
                f"sandbox ({_describe_error(cause)})"
            )
    return "raised", described


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and what lies behind it: its cause or context, a URLError's reason."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found:
        found.append(current)
        reason = getattr(current, "reason", None)
        if isinstance(reason, BaseException):
            found.append(reason)
        current = current.__cause__ or current.__context__
    return found


def _is_network(error: OSError) -> bool:
    if isinstance(error, socket.gaierror):
        return True
    return error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.EADDRNOTAVAIL)


def _failure(kind: FailureKind, message: str, error: BaseException, path: str) -> FailureEvent:
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == path:
            line = lineno
    return FailureEvent(kind=kind, message=message, line=line)


def _describe_error(error: BaseException) -> str:
    if type(error).__name__ == "TorchRuntimeError":
        # Dynamo ran the graph on fake tensors and the shapes did not fit: the inputs are wrong.
        found = re.search(r"""got \w+\((['"])(.*?)\1\)""", str(error))
        # torch 2.6 gives the message on the line after "Failed running …:", not as got Error('…').
        older = re.search(r"^Failed running [^\n]*:\n(.+?)\.?\n", str(error), re.M)
        detail = found.group(2) if found else older.group(1) if older else "the shapes do not fit the code"
        return f"inputs invalid: {detail}"
    text = str(error).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__


class _Runner:
    """Calls compiled targets that nothing called, with example or synthesized inputs."""

    def __init__(
        self,
        capture: Capture,
        attempts: Attempts,
        module: types.ModuleType,
        path: str,
        lines: list[str],
        request: Request,
    ) -> None:
        self.capture = capture
        self.attempts = attempts
        self.namespace = module.__dict__
        self.path = path
        self.lines = lines
        self.run_main = request.settings.run_main
        self.sites = {static.id: static for static in request.targets}

    def remedy(self, site: StaticTarget | None) -> str:
        """How the user gets the target run with its real inputs: the ``__main__`` block, or an example."""
        example = "declare inputs with a `# gbls: example(...)` comment above it"
        if site is not None and site.in_main_block and not self.run_main:
            return f"turn on the runMain setting (`gbls check --run-main`), which runs main(), or {example}"
        return example

    def run(self, target: Target) -> None:
        how = self._how_to_call(target)
        if isinstance(how, str):
            self._verdict(target, how)
            return
        callee, signature_of, module = how
        examples = self._examples(target)
        if examples:
            self._run_examples(target, callee, examples)
        else:
            self._run_synthesized(target, callee, signature_of, module)

    def run_static(self, static: StaticTarget, stopped: bool) -> None:
        """Compile and run a target whose ``torch.compile`` call never ran (e.g. in ``main()``).

        ``stopped``: the module failed before its end.
        """
        where = f"in {static.scope}()" if static.scope else "at module level"
        reason = f"its torch.compile call ({where}) did not run during the analysis"
        if stopped:
            reason = f"the module stopped before its torch.compile call ({where}) ran"
        elif static.in_main_block and not self.run_main:
            reason = (
                f'its torch.compile call ({where}) runs only from the `if __name__ == "__main__":` block, '
                "which the runMain setting is off for"
            )
        elif static.scope:
            reason = f"its torch.compile call is in {static.scope}(), which nothing called in the analysis"
        obj = self._resolve(static.name if static.kind == "module" else static.qualname)
        if static.kind == "module":
            if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
                try:
                    obj = obj()
                except BaseException as error:  # whatever the user's constructor raises is theirs
                    why = _describe_error(error)
                    reason += f", and {static.name}() cannot be built without arguments ({why})"
                    obj = None
            elif not isinstance(obj, torch.nn.Module):
                obj = None
        if obj is None or not callable(obj) or static.kind == "method":
            self.attempts.emit_raw(
                StaticEvent(
                    site=static.id,
                    qualname=static.qualname,
                    path=self.path,
                    line=static.line,
                    kind=static.kind,
                    reason=f"{reason}; {self.remedy(static)}",
                )
            )
            return
        self.capture.register(obj, fullgraph=False, disabled=False, site=static.id)
        self.capture.compile(obj)
        target = self.capture.target_for(obj)
        if target is not None and not target.called:
            self.run(target)

    def _resolve(self, dotted: str) -> Any:
        obj: Any = self.namespace
        for part in dotted.split("."):
            obj = obj.get(part) if isinstance(obj, dict) else getattr(obj, part, None)
            if obj is None:
                return None
        return obj

    def _how_to_call(self, target: Target) -> Any:
        if target.kind == "module" and target.module is not None:
            return target.compiled, type(target.module).forward, target.module
        original = inspect_unwrap(target.compiled)
        if target.kind == "method" and target.instance is not None:  # model.forward, compiled in place
            module = target.instance if isinstance(target.instance, torch.nn.Module) else None
            return target.compiled, original, module
        if target.kind == "method":
            owner_name = target.qualname.rsplit(".", 1)[0]
            owner = self._resolve(owner_name)
            if not isinstance(owner, type):
                return f"its class {owner_name} is not reachable from the module"
            try:
                instance = owner()
            except BaseException as error:
                return f"{owner_name}() could not be built without arguments ({_describe_error(error)})"
            module = instance if isinstance(instance, torch.nn.Module) else None
            return getattr(instance, target.name), original, module
        return target.compiled, original, None

    def _examples(self, target: Target) -> list[tuple[int, str]]:
        anchors = []
        if target.path == self.path:
            anchors.append(target.line)
        if target.call_path == self.path:
            anchors.append(target.call_line)
        if target.kind == "module":
            anchors.append(self._class_line(type(target.module).__name__))
        found: list[tuple[int, str]] = []
        for anchor in anchors:
            for example in example_sources(self.lines, anchor) if anchor else []:
                if example not in found:
                    found.append(example)
        return found

    def _class_line(self, name: str) -> int:
        for number, text in enumerate(self.lines, start=1):
            if text.lstrip().startswith(f"class {name}") and text.lstrip()[6 + len(name) : 7 + len(name)] in (
                "(",
                ":",
            ):
                return number
        return 0

    def _run_examples(
        self, target: Target, callee: Callable[..., Any], examples: list[tuple[int, str]]
    ) -> None:
        self.capture.input_source = "example"
        errors = []
        for line, text in examples:
            self.attempts.next()
            try:
                args, kwargs = inputs.evaluate_example(text, self.namespace)
                callee(*args, **kwargs)
            except BaseException as error:  # KeyboardInterrupt and the like too: the user's code raised it
                self.attempts.discard()
                target.forget_attempt()
                errors.append(f"the example at line {line} raised {_describe_error(error)}")
        if errors and not target.called:
            self._verdict(target, "; ".join(errors))

    def _run_synthesized(
        self, target: Target, callee: Callable[..., Any], signature_of: Any, module: torch.nn.Module | None
    ) -> None:
        self.capture.input_source = "synthesized"
        tried = []
        for (args, kwargs), shown in inputs.synthesized_calls(signature_of, module):
            self.attempts.next()
            try:
                callee(*args, **kwargs)
                return
            except BaseException as error:
                self.attempts.discard()
                target.forget_attempt()
                tried.append(f"{shown or 'no arguments'}: {_describe_error(error)}")
        attempts = "; ".join(tried[-2:]) if tried else "its signature gives nothing to synthesize inputs from"
        self._verdict(
            target,
            f"no synthesized input worked (tried {attempts}); {self.remedy(self.sites.get(target.site))}",
        )

    def _verdict(self, target: Target, reason: str) -> None:
        self.attempts.emit_raw(VerdictEvent(target=target.number, reason=reason))


def inspect_unwrap(function: Any) -> Any:
    return getattr(function, "_torchdynamo_orig_callable", None) or getattr(function, "__wrapped__", function)


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """Compiles workspace sources afresh: a sibling edited within a second of its .pyc is still seen."""

    def path_stats(self, path: str) -> Any:
        raise OSError("gbls reads workspace sources, not their bytecode caches")


def _fresh_imports(roots: list[str]) -> None:
    roots = [os.path.abspath(root) for root in roots if root]
    loaders = [
        (_FreshSourceLoader, importlib.machinery.SOURCE_SUFFIXES),
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
