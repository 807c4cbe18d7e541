"""Capture every graph break, graph and compiled target while the user's module runs.

``Capture.install()`` replaces ``torch.compile`` with a version that forces a backend costing
nothing (the FX graph is counted and run as is: inductor never runs) and hooks Dynamo where the
structured data lives. Every observation is handed to ``emit`` as a small JSON-able event the
moment it happens, so that a crash later in the analysis loses nothing already seen; ``merge``
folds the events into the final result.

Every hook does gbls's bookkeeping in ``guarded``: a failure there is gbls's own, said once as a
note of the result, and never reaches Dynamo or the analysed code (whose own exceptions pass
through untouched). What Dynamo did to each frame (compiled it, or gave up and ran it eagerly)
is read from Dynamo itself (what its frame callback returned), not guessed from the breaks.

Where the hooks sit, in each torch from 2.6 on, is ``hookpoints``'s concern: structured break
messages, the break log (each break that splits a graph or drops a frame, with its user stack),
frame-level errors (breaks that never reach the log: a compiled generator), the frame callback
(which compiled target a frame runs under, the eager call chain leading to it, and what Dynamo
made of it), inlined functions, the bytecode hook (which generated code belongs to which
target), every call of compiled code, and recompilations (the recompile-limit check Dynamo makes
before every compilation, with its compile id; the check each compiled version failed, read by
``reasons``; where in the source it was installed, from 2.12). A hook point this torch lacks is
said once ("torch X.Y: … is not captured"); the others still report what they see.
"""

from __future__ import annotations

import inspect
import os
import re
import signal
import sys
import sysconfig
import types
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch
import torch._dynamo

from ..events import (
    BreakEvent,
    CallEvent,
    Event,
    FrameEvent,
    GraphEvent,
    NoteEvent,
    ReachEvent,
    SiteEvent,
    StoppedEvent,
    TargetEvent,
)
from ..shared.protocol import Frame, Guard, InputSource, Message, StaticTarget, TargetKind
from . import hookpoints, reasons
from .columns import of_instruction as columns_from_syntax

Emit = Callable[[Event], None]
# (path, code name as Dynamo saw it, line, start byte column, end byte column)
RawFrame = tuple[str, str, int, int | None, int | None]

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Every module of the worker, whichever process runs it: never the user's code.
WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
DYNAMO_DIR = os.path.dirname(torch._dynamo.__file__) + os.sep
STDLIB_DIR = sysconfig.get_paths()["stdlib"] + os.sep

RESUME_PREFIX = "torch_dynamo_resume_in_"
NESTED_BREAK_SEPARATOR = "\n\n*** While handling this graph break, another graph break occurred: ***\n\n"

# Whole-frame skips worth reporting when they hit a compiled target itself; the others are
# benign (no ops at all) or already reported as a break.
REPORTED_SKIPS = ("frame is in the Dynamo skipfiles list", "tracing is non-recursively disabled")

FX_CALLS = ("call_function", "call_method", "call_module")


# A program is stopped once it repeats itself: a compiled callable entered for at least the third
# time when nothing was translated since its previous call (see ``Capture.entered``).
STEADY_CALLS = 2
STOP_RETRY = 0.001  # seconds between attempts to stop the program in its own code


class ProgramStopped(BaseException):
    """Raised in the analysed program's own code to end it once it runs only what Dynamo has seen.

    A ``BaseException``, like ``KeyboardInterrupt``, so that ``except Exception`` does not swallow it.
    """

    def __init__(self, line: int | None) -> None:
        super().__init__(line)
        self.line = line


def base_name(code_name: str) -> str:
    """``torch_dynamo_resume_in_forward_at_12`` → ``forward``."""
    match = re.match(RESUME_PREFIX + r"(\w+)_at_\d+$", code_name)
    return match.group(1) if match else code_name


def is_user_file(filename: str) -> bool:
    return not (filename.startswith((TORCH_DIR, WORKER_DIR, STDLIB_DIR)) or filename.startswith("<"))


class Target:
    """A ``torch.compile`` call's subject: a function, a method or an ``nn.Module``."""

    def __init__(self, number: int, obj: Any, described: Described, fullgraph: bool) -> None:
        self.number = number
        self.kind = described.kind
        self.code = described.entry  # what Dynamo enters first: a decorator's wrapper, if any
        self.own = described.own  # the code the user wrote: where the target is
        self.instance = described.instance  # the module, or a bound method's object
        self.fullgraph = fullgraph
        self.compiled: Any = None
        self.module: torch.nn.Module | None = obj if self.kind == "module" else None
        if self.kind == "module":
            self.name = type(obj).__name__
            self.qualname = type(obj).__qualname__
        else:
            self.name = getattr(obj, "__name__", type(obj).__name__)
            self.qualname = getattr(obj, "__qualname__", self.name)
        self.path = self.own.co_filename if self.own else ""
        self.line = self.own.co_firstlineno if self.own else 0
        self.called = False
        self.call_path = ""
        self.call_line = 0
        self.reused = False
        self.site = ""  # the StaticTarget.id of its compile site, if the source shows it
        self.aliases: list[str] = []  # other compile sites that compiled it again
        self.reached: set[tuple[str, int, str]] = set()

    def forget_attempt(self) -> None:
        """A discarded input attempt's call and reach events are gone: record them again next time."""
        self.called = False
        self.reached.clear()

    def event(self, disabled: bool) -> TargetEvent:
        return TargetEvent(
            target=self.number,
            name=self.name,
            qualname=self.qualname,
            path=self.path,
            line=self.line,
            kind=self.kind,
            fullgraph=self.fullgraph,
            call_path=self.call_path,
            call_line=self.call_line,
            reused=self.reused,
            disabled=disabled,
            site=self.site,
            generator=bool(self.code is not None and self.code.co_flags & inspect.CO_GENERATOR),
        )


class Translation:
    """One frame Dynamo is translating, and the compiled target whose call it belongs to."""

    def __init__(self, code: types.CodeType) -> None:
        self.code = code
        self.target: Target | None = None
        # Frames above the translated one, outermost first: (path, raw code name, line, col, end_col)
        self.prefix: list[RawFrame] = []
        self.caller: RawFrame | None = None  # the analysed file's innermost frame on the stack
        self.compile_ids: list[str] = []  # of the breaks recorded while Dynamo translated it
        self.loop_skip = ""  # before torch 2.11: Dynamo dropped the frame for a break in a loop
        # What Dynamo decided for this frame, once it checked the recompile limit.
        self.compile_id = ""
        self.recompile = False
        self.guard: Guard | None = None
        self.limit = ""
        self.limit_value = 0
        self.dynamic = False


class Capture:
    def __init__(
        self, emit: Emit, path: str = "", reuse: tuple[str, ...] = (), sites: tuple[StaticTarget, ...] = ()
    ) -> None:
        self.emit = emit
        self.path = path
        self.reuse = set(reuse)
        self.sites = sites
        self.targets: list[Target] = []
        # Code objects are keyed by identity: Dynamo's generated code can hold unhashable constants.
        self.by_code: dict[int, tuple[types.CodeType, list[Target]]] = {}
        self.generated: dict[int, tuple[types.CodeType, Target]] = {}
        self.translations: list[Translation] = []
        self.failed_hooks: set[str] = set()
        self.last_metric: Any = None
        self.structured: dict[str, Message] = {}
        self.input_source: InputSource = "module"
        self.reaches = True
        # GB ids: the user's torch's own registry first (None: it has none), then gbls's table.
        self.torch_ids = hookpoints.registry_ids()
        self.shipped_ids = hookpoints.shipped_ids()
        self.logged: weakref.WeakSet[BaseException] = weakref.WeakSet()
        self.columns: weakref.WeakKeyDictionary[BaseException, list[hookpoints.Columns]] = (
            weakref.WeakKeyDictionary()
        )
        self.original_compile = torch.compile
        self.places_guards = True  # this torch says where a failed guard was installed
        self.said_unplaced = False
        self.translated = 0  # frames Dynamo was asked to translate so far
        self.entries: dict[int, tuple[int, int]] = {}  # compiled callable → (calls, translated then)
        self.stop_when_steady = False
        self.stopping = False

    def guarded(self, hook: str, work: Callable[[], None]) -> None:
        """Run gbls's bookkeeping for ``hook``: its failure is gbls's, never Dynamo's nor the user's."""
        try:
            work()
        except Exception as error:
            if hook in self.failed_hooks:
                return
            self.failed_hooks.add(hook)
            self.note(
                f"gbls's {hook} hook failed ({type(error).__name__}: {error}); what it records may be missing"
            )

    # -- installation -------------------------------------------------------------------

    def install(self) -> Capture:
        """Patch torch.compile and hook Dynamo where this torch has each hook point."""
        torch.compile = self.compile
        guard = self.guarded
        hooks: list[tuple[str, Callable[[], None]]] = [
            ("the message structure", lambda: hookpoints.wrap_messages(guard, self.remember_message)),
            ("the graph-break log", lambda: hookpoints.wrap_break_log(guard, self.logged_break)),
            ("the column of each break", lambda: hookpoints.wrap_unsupported(guard, self.remember_columns)),
            ("frame-level error handling", lambda: hookpoints.wrap_error_messages(guard, self.error_break)),
            ("the frame a break in a loop drops", lambda: hookpoints.wrap_loop_skips(guard, self.loop_skip)),
            ("the frame callback", lambda: hookpoints.wrap_frame_callback(self.translate)),
            ("inlining", self._hook_inlining),
            ("Dynamo-generated code", lambda: hookpoints.register_bytecode_hook(self.bytecode_hook)),
            ("each call of compiled code", lambda: hookpoints.wrap_compiled_calls(guard, self.entered)),
            ("recompilation", self._hook_recompiles),
        ]
        for what, hook in hooks:
            try:
                hook()
            except Exception as error:
                self.note(
                    f"torch {hookpoints.TORCH_RELEASE}: {what} is not captured ({_described(error)}); "
                    "gbls reports what its other hooks see"
                )
        self.last_metric = _newest_metric()
        return self

    def note(self, text: str) -> None:
        try:
            self.emit(NoteEvent(text=text))
        except Exception:
            pass

    def _hook_recompiles(self) -> None:
        hookpoints.wrap_recompile_limit(self.guarded, self.note_compilation)
        self.places_guards = hookpoints.wrap_recompile_reasons(self.guarded, self.note_recompilation)

    def entered(self, callback: Any) -> None:
        """A compiled callable is called. Once the program repeats itself (this callable's last call,
        and everything since, needed no translation), what is left of it shows Dynamo nothing new:
        stop it, so that a training loop or a sampling loop is analysed in its first steps."""
        if self.translations:  # a call Dynamo makes while translating is not the program's
            return
        calls, translated = self.entries.get(id(callback), (0, -1))
        self.entries[id(callback)] = (calls + 1, self.translated)
        steady = calls >= STEADY_CALLS and translated == self.translated
        if not (self.stop_when_steady and steady) or self.stopping:
            return
        try:
            signal.signal(signal.SIGALRM, self._stop_here)
        except ValueError:  # not the main thread: only the main thread can be stopped
            return
        self.stopping = True
        signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)

    def _stop_here(self, signum: int, frame: types.FrameType | None) -> None:
        """Raise ``ProgramStopped`` where the program is, as Ctrl-C would, but never inside Dynamo
        (a translation, or the compiled call's own bookkeeping) nor in gbls."""
        if not self.stopping:
            return
        where = frame.f_code.co_filename if frame is not None else DYNAMO_DIR
        if self.translations or where.startswith((DYNAMO_DIR, WORKER_DIR)):
            signal.setitimer(signal.ITIMER_REAL, STOP_RETRY)
            return
        self.stopping = False
        self.stop_when_steady = False
        line = None
        while frame is not None and line is None:
            if frame.f_code.co_filename == self.path:
                line = frame.f_lineno
            frame = frame.f_back
        self.emit(StoppedEvent(line=line))
        raise ProgramStopped(line)

    def stop_no_more(self) -> None:
        """The program's own run is over: what runs next (uncalled targets) runs to its end."""
        self.stop_when_steady = self.stopping = False
        signal.setitimer(signal.ITIMER_REAL, 0)

    def _hook_inlining(self) -> None:
        """Record each function Dynamo inlines: a target's results depend on their code too."""
        self.reaches = False  # until the hook is in: without it nothing is ever reused
        hookpoints.wrap_inlining(self.guarded, self.reach_function)
        self.reaches = True

    def reach_function(self, func: Any) -> None:
        code = getattr(func, "get_code", lambda: None)()
        if isinstance(code, types.CodeType):
            self.reach(code)

    def reach(self, code: types.CodeType) -> None:
        translation = self.translations[-1] if self.translations else None
        target = translation.target if translation is not None else None
        key = (code.co_filename, code.co_firstlineno, base_name(code.co_name))
        if target is None or not self.reaches or not is_user_file(code.co_filename) or key in target.reached:
            return
        target.reached.add(key)
        self.emit(ReachEvent(target=target.number, code=key))

    def remember_message(
        self, text: str, gb_type: str, context: str, explanation: str, hints: list[str]
    ) -> None:
        self.structured[hookpoints.message_key(text)] = Message(
            str(gb_type), str(context), str(explanation), tuple(map(str, hints))
        )

    def remember_columns(self, exc: BaseException, columns: list[hookpoints.Columns]) -> None:
        self.columns[exc] = columns

    def logged_break(self, translator: Any, reason: str, exc: Any, user_stack: Any, caller: Any) -> None:
        """One break Dynamo logs, in whichever shape this torch logs it (with or without the exception)."""
        if exc is None:
            exc = hookpoints.handled_exception(caller)
        if exc is not None:
            if getattr(exc, "logged", False) or exc in self.logged:
                return
            self.logged.add(exc)
            stack = getattr(exc, "real_stack", None)
            text = str(getattr(exc, "msg", None) or exc)
            columns = self.columns.get(exc)
        else:  # a data-dependent jump before torch 2.11: the reason is the message
            text, stack, columns = str(reason), None, None
            if text.startswith("Unsupported: "):
                text = text[len("Unsupported: ") :]
        if stack is None:
            stack = user_stack
        frames = list(hookpoints.current_stack() if stack is None else stack)
        if columns is None or len(columns) != len(frames):
            # The innermost frame is the logging translator's own instruction (a jump, a store).
            translators = [translator] if translator is not None else []
            columns = hookpoints.columns_of(frames[-1:], translators) if frames else []
            columns = [(None, None)] * (len(frames) - len(columns)) + columns
        skipped = bool(getattr(exc, "skip_frame", False))
        self.record_break(text, frames, columns, skipped, True, reason)

    def error_break(self, exc: Any) -> None:
        """A break that reached Dynamo's frame-level error handling without being logged (a generator)."""
        if getattr(exc, "logged", False) or exc in self.logged:
            return
        self.logged.add(exc)
        frames = list(getattr(exc, "real_stack", None) or [])
        columns = self.columns.get(exc)
        self.record_break(str(exc.msg), frames, columns, True, False, "")

    def loop_skip(self, message: str) -> None:
        if self.translations:
            self.translations[-1].loop_skip = message.splitlines()[0]

    def translate(self, callback: Callable[..., Any], frame: Any, args: tuple[Any, ...], caller: Any) -> Any:
        """Dynamo's frame callback, told which compiled target's call the frame runs in."""
        if not is_user_file(frame.f_code.co_filename):
            return callback(frame, *args)
        translation = Translation(frame.f_code)
        self.translations.append(translation)
        # The frame about to run is not on the stack yet: its callers are the callback's callers.
        self.guarded("frame callback", lambda: self.begin_translation(translation, frame, caller))
        try:
            result = callback(frame, *args)
            self.guarded("frame result", lambda: self.record_frame(translation, result, frame, caller))
            return result
        finally:
            self.translations.pop()

    # -- torch.compile --------------------------------------------------------------------

    def compile(self, model: Any = None, **options: Any) -> Any:
        """``torch.compile`` with the capturing backend; records what was compiled and where."""
        if model is None:
            return lambda actual: self.compile(actual, **options)
        fullgraph = bool(options.pop("fullgraph", False))
        for inductor_only in ("backend", "mode", "options"):
            options.pop(inductor_only, None)
        found: list[Target] = []

        def register() -> None:
            target = self.register(model, fullgraph, disabled=bool(options.get("disable")))
            found.extend([target] if target is not None else [])

        self.guarded("torch.compile", register)
        target = found[0] if found else None
        if target is not None and target.reused:
            return model  # its last results still hold: run it eagerly, translate nothing
        # Every break is wanted, so fullgraph=True is reported, not enforced.
        compiled = self.original_compile(model, backend=self.backend, **options)
        if target is not None and target.compiled is None:
            target.compiled = model if _is_compiled_call_impl(model) else compiled
        return compiled

    def target_for(self, model: Any) -> Target | None:
        described = _describe_target(model)
        if described.entry is None:
            return None
        return _choose(self.with_code(described.entry), described.instance)

    def with_code(self, code: types.CodeType | None) -> list[Target]:
        """The targets Dynamo enters by ``code`` (the user's code, never Dynamo's)."""
        found = self.by_code.get(id(code))
        return found[1] if found is not None and found[0] is code else []

    def of_generated(self, code: types.CodeType) -> Target | None:
        """The target Dynamo generated ``code`` for, if it did."""
        found = self.generated.get(id(code))
        return found[1] if found is not None and found[0] is code else None

    def register(self, model: Any, fullgraph: bool, disabled: bool, site: str = "") -> Target | None:
        """The target ``model`` is, recorded the first time; ``site``: the compile site it is, if known."""
        described = _describe_target(model)
        if described.entry is None:
            return None
        known = self.target_for(model)
        if known is not None:
            self.also_compiled_at(known, *_call_site())
            return known
        obj = described.instance if described.kind == "module" else model
        target = Target(len(self.targets), obj, described, fullgraph)
        self.targets.append(target)
        self.by_code.setdefault(id(described.entry), (described.entry, []))[1].append(target)
        target.call_path, target.call_line = _call_site()
        target.reused = target.qualname in self.reuse and self.path in (target.path, target.call_path)
        target.site = site or self.site_of(target)
        self.emit(target.event(disabled))
        return target

    def also_compiled_at(self, target: Target, path: str, line: int) -> None:
        """``torch.compile`` of what a target already is, at another compile site: one compiled
        function for Dynamo (one code, one cache), and that site is it too."""
        taken = {other.site for other in self.targets} | {
            site for other in self.targets for site in other.aliases
        }
        for site in self.sites:
            if (
                site.id not in taken
                and path == self.path
                and site.line <= line <= max(site.end_line, site.line)
            ):
                target.aliases.append(site.id)
                self.emit(SiteEvent(target=target.number, site=site.id))
                return

    def site_of(self, target: Target) -> str:
        """The compile site of the source that ``target`` is (the one rule matching the two), or "".

        The site whose compile call ran it (the call's lines in the analysed file), else the
        decorated ``def`` of the analysed file that is its code.
        """
        taken = {other.site for other in self.targets if other is not target}
        free = [site for site in self.sites if site.id not in taken]
        compiled_there = [
            site
            for site in free
            if target.call_path == self.path
            and site.line <= target.call_line <= max(site.end_line, site.line)
        ]
        its_code = [
            site
            for site in free
            if site.kind != "module"
            and target.path == self.path
            and site.name == target.name
            and site.first_line == target.line
        ]
        chosen = compiled_there or its_code
        return chosen[0].id if chosen else ""

    def backend(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        self.guarded("backend", lambda: self.record_graph(gm))
        return gm.forward

    def record_graph(self, gm: torch.fx.GraphModule) -> None:
        translation = self.translations[-1] if self.translations else None
        if translation is not None and translation.target is not None:
            if translation.recompile and not translation.dynamic:
                translation.dynamic = _takes_symbolic_sizes(gm)
            lines = _graph_lines(gm, translation.code)
            self.emit(
                GraphEvent(
                    target=translation.target.number,
                    frame=base_name(translation.code.co_name),
                    ops=sum(1 for node in gm.graph.nodes if node.op in FX_CALLS),
                    first_line=min(lines) if lines else None,
                )
            )

    def bytecode_hook(self, code: types.CodeType, new_code: types.CodeType) -> None:
        def remember() -> None:
            translation = self.translations[-1] if self.translations else None
            if translation is not None and translation.target is not None:
                self.generated[id(new_code)] = (new_code, translation.target)

        self.guarded("bytecode", remember)

    # -- observations -------------------------------------------------------------------

    def begin_translation(self, translation: Translation, frame: Any, callers: types.FrameType) -> None:
        """Which target's call ``frame`` runs in: its own, if it is a target's code (a compiled function
        called from another one is compiled as itself), else the target whose generated code is on
        the stack above it, with the eager call chain from there."""
        code = frame.f_code
        self.translated += 1
        stack = []
        outer: types.FrameType | None = callers
        while outer is not None:
            stack.append(outer)
            outer = outer.f_back
        stack.reverse()
        target = self.target_of(code, frame)
        if target is None:
            for index, caller in enumerate(stack):
                target = self.of_generated(caller.f_code)
                if target is not None:
                    chain = [f for f in stack[index:] if self._in_chain(f.f_code)]
                    translation.prefix = [self.position(f) for f in chain[self._placed_from(chain) :]]
                    break
        translation.target = target
        in_file = [f for f in stack if f.f_code.co_filename == self.path and f is not frame]
        translation.caller = self.position(in_file[-1]) if in_file else None
        if not code.co_name.startswith(RESUME_PREFIX):  # a resume function is its function's code
            self.reach(code)
        if target is not None and not target.called and code is target.code:
            target.called = True
            self.emit(
                CallEvent(
                    target=target.number,
                    inputs=describe_arguments(frame, target.own),
                    source=self.input_source,
                )
            )

    def position(self, frame: types.FrameType) -> RawFrame:
        """Where an eager frame is: its current instruction's columns, from the column table (3.11+)
        or from the syntax of its line (3.10; not for Dynamo's generated code, which has no syntax)."""
        code = frame.f_code
        column = end_column = None
        if hasattr(code, "co_positions") and frame.f_lasti >= 0:
            for index, position in enumerate(code.co_positions()):
                if index == frame.f_lasti // 2:
                    column, end_column = position[2], position[3]
                    break
        elif self.of_generated(code) is None:
            column, end_column = columns_from_syntax(code, frame.f_lasti)
        return (code.co_filename, code.co_name, frame.f_lineno, column, end_column)

    def _placed_from(self, chain: list[types.FrameType]) -> int:
        """Where the eager call chain starts to say where it is: generated code without positions for
        the calls it leaves in (torch 2.6, and any torch on Python 3.10) has no columns, or only its
        first line. Below the last such frame the chain is a suffix of the one Dynamo logged for the
        compiled frame, and merges with it."""
        for index in range(len(chain) - 1, -1, -1):
            frame = chain[index]
            if self.of_generated(frame.f_code) is not None and self.position(frame)[3] is None:
                return index + 1
        return 0

    def target_of(self, code: types.CodeType, frame: Any) -> Target | None:
        """The target ``frame`` is the own call of: the code it enters by, and for a code several
        targets share (modules of one class, one decorator's wrapper), the one its ``self`` is."""
        candidates = self.with_code(code)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        # One code for several targets (modules of one class, one decorator's wrapper): by ``self``.
        first = code.co_varnames[0] if code.co_argcount else ""
        return _choose(candidates, frame.f_locals.get(first) if first else None)

    def _in_chain(self, code: types.CodeType) -> bool:
        return self.of_generated(code) is not None or is_user_file(code.co_filename)

    def record_frame(self, translation: Translation, result: Any, frame: Any, caller: Any) -> None:
        """What Dynamo did with the frame: code for it, or nothing (it runs eagerly), as its callback says.

        The compile id comes from Dynamo's compilation metrics for this frame, or from the breaks
        recorded while translating it (a frame refused outright has neither, and no id).
        """
        metrics = _metrics_since(self.last_metric)
        if metrics:
            self.last_metric = metrics[-1]
        target = translation.target
        code = translation.code
        if target is None:
            return
        produced = hookpoints.produced_code(result)
        if not produced and target in self.with_code(code):
            reason = hookpoints.skip_reason(result, frame, caller)
            if reason.startswith(REPORTED_SKIPS):
                self.record_skip(code, reason)
        mine = [m for m in metrics if getattr(m, "co_name", None) == code.co_name]
        compile_id = _metric_compile_id(mine[-1]) if mine else ""
        if not compile_id and translation.compile_ids:
            compile_id = translation.compile_ids[-1]
        failure = str(getattr(mine[-1], "fail_reason", None) or "").strip() if mine else ""
        if not produced and translation.loop_skip:  # before torch 2.11 only this says why
            failure = f"{hookpoints.legacy_gb_type(translation.loop_skip)}: {translation.loop_skip}"
        self.emit(
            FrameEvent(
                target=target.number,
                compile_id=translation.compile_id or compile_id,
                frame=base_name(code.co_name),
                own=_runs_own_code(code, target),
                resumes_at=_resume_line(code.co_name),
                guarded=produced,
                failure=failure.splitlines()[0] if failure else "",
                path=code.co_filename,
                line=code.co_firstlineno,
                recompile=translation.recompile,
                guard=translation.guard,
                dynamic=translation.dynamic,
                limit=translation.limit,
                limit_value=translation.limit_value,
            )
        )

    def note_compilation(self, compile_id: Any, decision: tuple[bool, str]) -> None:
        """Dynamo is about to compile the current frame, unless a recompile limit stops it."""
        translation = self.translations[-1] if self.translations else None
        if translation is None or translation.target is None:
            return
        translation.compile_id = f"{compile_id.frame_id}/{compile_id.frame_compile_id}"
        exceeded, limit = decision
        if exceeded:
            translation.limit = limit
            translation.limit_value = int(getattr(torch._dynamo.config, limit, 0))

    def note_recompilation(self, found: list[str], stacks: list[Any]) -> None:
        """Dynamo compiles the current frame again: the newest version's failed check, and where it is."""
        translation = self.translations[-1] if self.translations else None
        if translation is None or translation.target is None:
            return
        translation.recompile = True
        if not found:
            return
        guard = reasons.parse(found[0])
        if stacks and "\nUser stack trace:" in found[0]:
            frames = list(translation.prefix) + [_raw_frame(summary) for summary in stacks[0]]
            guard = replace(guard, chain=_collapse(frames))
        else:
            guard = replace(guard, chain=self._commented_location(found[0], translation))
        if not guard.chain and not self.places_guards and not self.said_unplaced:
            self.said_unplaced = True
            self.note(
                f"torch {hookpoints.TORCH_RELEASE} does not say where a recompilation's guard is installed: "
                "gbls shows it on the argument it checks, or on the function"
            )
        translation.guard = guard

    def _commented_location(self, reason: str, translation: Translation) -> tuple[Frame, ...]:
        """The line a reason's comment names, in a file of the translation whose path ends as it says."""
        located = reasons.where(reason)
        target = translation.target
        if located is None or target is None:
            return ()
        ending, line, function = located
        paths = {translation.code.co_filename, target.path, *(path for path, _, _ in target.reached)}
        found = sorted(path for path in paths if path.endswith(ending))
        return (Frame(found[0], base_name(function), line),) if found else ()

    def record_break(
        self,
        text: str,
        stack: list[Any],
        columns: list[hookpoints.Columns] | None,
        skipped: bool,
        logged: bool,
        reason: str,
    ) -> None:
        """One break: its (possibly nested) message text and Dynamo's user stack, innermost last."""
        translation = self.translations[-1] if self.translations else None
        if translation is None or translation.target is None or translation.limit:
            return  # a recompile limit is not a graph break: the frame's record says it
        frames = list(translation.prefix)
        for index, summary in enumerate(stack):
            column, end = getattr(summary, "colno", None), getattr(summary, "end_colno", None)
            if column is None and columns is not None and index < len(columns):
                column, end = columns[index]
            frames.append((summary.filename, summary.name, summary.lineno, column, end))
        if not frames:
            code = translation.code
            frames.append((code.co_filename, code.co_name, code.co_firstlineno, None, None))
        caller = translation.caller
        compile_id = _compile_id()
        translation.compile_ids.append(compile_id)
        messages = [self.message(part) for part in text.split(NESTED_BREAK_SEPARATOR)]
        chain = _collapse(frames)
        if chain[-1].column is None and not hookpoints.has_columns():
            python = f"{sys.version_info[0]}.{sys.version_info[1]}"
            gap = (
                f"Python {python} has no column table and the line does not say where: the range is the line"
            )
            messages[0] = replace(messages[0], gaps=(*messages[0].gaps, gap))
        self.emit(
            BreakEvent(
                target=translation.target.number,
                compile_id=compile_id,
                direct=_runs_own_code(translation.code, translation.target),
                skipped=skipped,
                logged=logged,
                reason=str(reason).strip().splitlines()[0] if str(reason).strip() else "",
                messages=tuple(messages),
                chain=chain,
                called_at=_collapse([caller])[0] if caller else None,
            )
        )

    def record_skip(self, code: types.CodeType, reason: str) -> None:
        candidates = self.with_code(code)
        target = candidates[0] if candidates else None
        if target is None:
            return
        self.emit(
            BreakEvent(
                target=target.number,
                compile_id=_compile_id(),
                direct=True,
                skipped=True,
                logged=False,
                messages=(
                    Message(
                        gb_type="Frame skipped",
                        context=reason,
                        explanation=f"Dynamo does not trace {code.co_name}: {reason}.",
                        hints=(),
                    ),
                ),
                chain=(Frame(code.co_filename, code.co_name, code.co_firstlineno),),
            )
        )

    def message(self, text: str) -> Message:
        """A break's message as structured as this torch makes it, with its GB id, and what is missing."""
        key = hookpoints.message_key(text)
        gaps: list[str] = []
        structured = self.structured.get(key)
        if structured is None:
            structured = parse_break_text(key)
            if not structured.explanation:  # plain text (torch 2.6, a few breaks of 2.7-2.10)
                legacy = hookpoints.legacy_gb_type(key)
                first = key.splitlines()[0] if key else ""
                structured = Message(legacy or first, "", key, ())
                gaps.append(
                    f"torch {hookpoints.TORCH_RELEASE} gives this break as text only"
                    + (": gbls names its gb_type from the text" if legacy else "")
                    + "; no explanation or hints"
                )
        gb_type = structured.gb_type
        gb_id = (self.torch_ids or {}).get(gb_type)
        if gb_id is None and gb_type in self.shipped_ids:
            gb_id = self.shipped_ids[gb_type]
            release = hookpoints.TORCH_RELEASE
            why = (
                f"torch {release} has no graph-break registry"
                if self.torch_ids is None
                else (f"the graph-break registry of torch {release} lacks this gb_type")
            )
            gaps.append(f"the GB id is from gbls's table, not from your torch ({why})")
        return replace(
            structured, gb_id=gb_id, url=hookpoints.documentation_link(gb_type, gb_id), gaps=tuple(gaps)
        )


# -- helpers ---------------------------------------------------------------------------------


def parse_break_text(text: str) -> Message:
    """Structure a break from Dynamo's formatted text, for messages the structured hook did not see."""
    lines = text.strip("\n").splitlines()
    sections: dict[str, list[str]] = {"explanation": [], "context": []}
    hints: list[list[str]] = []
    current: list[str] | None = None
    for line in lines[1:]:
        stripped = line.strip()
        if stripped.startswith("Explanation:"):
            current = sections["explanation"]
            current.append(stripped[len("Explanation:") :].strip())
        elif stripped.startswith("Hint:"):
            current = [stripped[len("Hint:") :].strip()]
            hints.append(current)
        elif stripped.startswith("Developer debug context:"):
            current = sections["context"]
            current.append(stripped[len("Developer debug context:") :].strip())
        elif stripped.startswith("For more details about this graph break"):
            current = None
        elif current is not None and line.startswith("    "):
            current.append(line[4:])
    return Message(
        gb_type=lines[0].strip() if lines else "",
        context="\n".join(sections["context"]).strip(),
        explanation="\n".join(sections["explanation"]).strip(),
        hints=tuple("\n".join(hint).strip() for hint in hints),
    )


def _described(error: BaseException) -> str:
    return str(error) if isinstance(error, hookpoints.Missing) else f"{type(error).__name__}: {error}"


def _is_compiled_call_impl(model: Any) -> bool:
    return isinstance(getattr(model, "__self__", None), torch.nn.Module) and getattr(
        model, "__name__", ""
    ) in ("_call_impl", "_wrapped_call_impl")


class Described:
    """What a compile call is about: its kind, the code Dynamo enters first, the code the user wrote."""

    def __init__(
        self, kind: TargetKind, entry: types.CodeType | None, own: types.CodeType | None, instance: Any
    ) -> None:
        self.kind = kind
        self.entry = entry
        self.own = own
        self.instance = instance


def _code_of(function: Any) -> types.CodeType | None:
    code = getattr(function, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


def _describe_target(model: Any) -> Described:
    if _is_compiled_call_impl(model):
        model = model.__self__
    if isinstance(model, torch.nn.Module):
        forward = type(model).forward
        return Described("module", _code_of(forward), _code_of(_unwrap(forward)), model)
    entry = _code_of(model)
    if entry is None and callable(model):
        entry = _code_of(type(model).__call__)
    function = _unwrap(model) if callable(model) else model
    qualname = getattr(function, "__qualname__", "")
    kind: TargetKind = "method" if "." in qualname.replace("<locals>.", "") else "function"
    return Described(kind, entry, _code_of(function) or entry, getattr(model, "__self__", None))


def _unwrap(function: Any) -> Any:
    try:
        return inspect.unwrap(function)
    except ValueError:  # a __wrapped__ cycle
        return function


def _choose(targets: list[Target], instance: Any) -> Target | None:
    """The target among ``targets`` (one code) that ``instance`` is, else the first."""
    for target in targets:
        if instance is not None and target.instance is instance:
            return target
    return targets[0] if targets else None


def _call_site() -> tuple[str, int]:
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "", 0
    return frame.f_code.co_filename, frame.f_lineno


def _raw_frame(summary: Any) -> RawFrame:
    """A ``traceback.FrameSummary`` as a raw frame (columns from Python 3.11 on)."""
    return (
        summary.filename,
        summary.name,
        summary.lineno,
        getattr(summary, "colno", None),
        getattr(summary, "end_colno", None),
    )


def _takes_symbolic_sizes(gm: torch.fx.GraphModule) -> bool:
    """Whether a graph's inputs have symbolic sizes or are symbolic numbers (dynamic shapes)."""
    for node in gm.graph.nodes:
        if node.op != "placeholder":
            continue
        value = node.meta.get("example_value")
        if isinstance(value, (torch.SymInt, torch.SymFloat)):
            return True
        if isinstance(value, torch.Tensor) and any(isinstance(size, torch.SymInt) for size in value.shape):
            return True
    return False


def _collapse(frames: list[RawFrame]) -> tuple[Frame, ...]:
    """The chain as the user wrote it: frames of torch and the standard library folded (a wrapper
    such as ``torch.no_grad``'s, a polyfill), the generated caller of each resume function dropped,
    frames named without resume prefixes."""
    kept: list[RawFrame] = []
    for frame in frames:
        path, name = frame[0], frame[1]
        if kept and not is_user_file(path):
            continue
        if (
            kept
            and name.startswith(RESUME_PREFIX)
            and kept[-1][0] == path
            and base_name(kept[-1][1]) == base_name(name)
        ):
            kept.pop()
        kept.append(frame)
    chain: list[Frame] = []
    for path, name, line, column, end in kept:
        step = Frame(path, base_name(name), line, column, end)
        if not chain or chain[-1] != step:  # a wrapper folded away leaves its caller twice
            chain.append(step)
    return tuple(chain)


def _runs_own_code(code: types.CodeType, target: Target) -> bool:
    """Whether a translated frame is the target's own code or one of its resume functions."""
    own = target.code
    if own is None or code is own:
        return True
    return (
        code.co_name.startswith(RESUME_PREFIX)
        and code.co_filename == own.co_filename
        and base_name(code.co_name) == own.co_name
    )


def _resume_line(code_name: str) -> int | None:
    match = re.match(RESUME_PREFIX + r"\w+_at_(\d+)$", code_name)
    return int(match.group(1)) if match else None


def _newest_metric() -> Any:
    metrics = _all_metrics()
    return metrics[-1] if metrics else None


def _all_metrics() -> list[Any]:
    get = getattr(torch._dynamo.utils, "get_compilation_metrics", None)
    return list(get()) if get is not None else []


def _metrics_since(last: Any) -> list[Any]:
    """The compilation metrics Dynamo recorded after ``last`` (they are kept in a bounded deque)."""
    metrics = _all_metrics()
    for index in range(len(metrics) - 1, -1, -1):
        if metrics[index] is last:
            return metrics[index + 1 :]
    return metrics


def _metric_compile_id(metric: Any) -> str:
    """``frame/recompile`` of a metric's compile id, as ``_compile_id`` spells it."""
    match = re.search(r"(\d+)/(\d+)", str(getattr(metric, "compile_id", "")))
    return f"{match.group(1)}/{match.group(2)}" if match else ""


def _compile_id() -> str:
    """``frame/recompile`` of the current compile, without the restart attempt."""
    trace_id = torch._guards.CompileContext.current_trace_id()
    if trace_id is None:
        return ""
    compile_id = trace_id.compile_id
    return f"{compile_id.frame_id}/{compile_id.frame_compile_id}"


def _graph_lines(gm: torch.fx.GraphModule, code: types.CodeType) -> list[int]:
    marker = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
    lines = []
    for node in gm.graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        for path, line, name in marker.findall(trace):
            if path == code.co_filename and name == code.co_name:
                lines.append(int(line))
                break
    return lines


SHORT_DTYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "bool": "bool",
}
SCALARS = (bool, int, float, complex, type(None))
MAX_ITEMS = 4  # shown of a container; the rest is counted


def describe_value(value: Any, depth: int = 0) -> str:
    """A short, safe description: tensors by dtype and shape, plain values as written, containers of
    those item by item, and anything else by its type's name alone. It runs inside the program's own
    call, so it never calls the program's code (no ``repr``, ``len`` or iteration of its objects)."""
    kind = type(value)
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return f"{SHORT_DTYPES.get(dtype, dtype)}[{', '.join(str(size) for size in value.shape)}]"
    if kind in SCALARS:
        return repr(value)
    if kind is str:
        return repr(value) if len(value) <= 24 else repr(value[:21]) + "..."
    if kind in (tuple, list, dict) and depth < 2:
        items = list(value.items()) if kind is dict else list(enumerate(value))
        shown = [
            (f"{key!r}: " if kind is dict and type(key) is str else "") + describe_value(item, depth + 1)
            for key, item in items[:MAX_ITEMS]
        ]
        if len(items) > MAX_ITEMS:
            shown.append(f"… {len(items) - MAX_ITEMS} more")
        brackets = "()" if kind is tuple else "[]" if kind is list else "{}"
        trailing = "," if kind is tuple and len(items) == 1 else ""
        return brackets[0] + ", ".join(shown) + trailing + brackets[1]
    return kind.__name__


def describe_arguments(frame: Any, own: types.CodeType | None) -> str:
    """Each argument of the call entering ``frame``, by name: ``input_ids: i64[2, 8], labels: None``.

    ``own``: the code the user wrote, when a decorator's ``wrapper(*args, **kwargs)`` is entered
    first; its parameter names name the positional arguments.
    """
    try:
        return ", ".join(f"{name}: {describe_value(value)}" for name, value in _arguments(frame, own))
    except Exception:  # a tensor subclass that raises on .shape, say: say nothing rather than break
        return ""


def _arguments(frame: Any, own: types.CodeType | None) -> list[tuple[str, Any]]:
    code = frame.f_code
    f_locals = frame.f_locals
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    varargs = varkw = None
    index = count
    if code.co_flags & inspect.CO_VARARGS:
        varargs = code.co_varnames[index]
        index += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varkw = code.co_varnames[index]
    found = [(name, f_locals[name]) for name in names if name in f_locals]
    positional = f_locals.get(varargs, ()) if varargs else ()
    if type(positional) is tuple and positional:
        # ``wrapper(*args)`` entered first: the positions are the user's own parameters (``self``
        # first, for a bound method), after those the wrapper names itself.
        wanted = list(own.co_varnames[: own.co_argcount]) if own is not None and own is not code else []
        wanted = wanted[code.co_argcount :]
        for number, value in enumerate(positional):
            found.append((wanted[number] if number < len(wanted) else f"{varargs}[{number}]", value))
    keywords = f_locals.get(varkw, {}) if varkw else {}
    if type(keywords) is dict:
        found += [(str(name), value) for name, value in keywords.items()]
    return [(name, value) for name, value in found if name != "self"]
