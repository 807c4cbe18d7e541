"""Capture every graph break, graph and compiled target while the user's module runs.

``Capture.install()`` replaces ``torch.compile`` with a version that forces a backend costing
nothing (the FX graph is counted and run as is, or where running it costs real arithmetic, its
outputs made without running it: ``elision``; inductor never runs) and hooks Dynamo where the
structured data lives. Every observation is handed to ``emit`` as a small JSON-able event the
moment it happens, so that a crash later in the analysis loses nothing already seen; ``merge``
folds the events into the final result.

Every hook does gbls's bookkeeping in ``guarded``: a failure there is gbls's own, said once as a
note of the result, and never reaches Dynamo or the analysed code (whose own exceptions pass
through untouched). What Dynamo did to each frame (compiled it, or gave up and ran it eagerly)
is read from Dynamo itself (what its frame callback returned), not guessed from the breaks.

Where the hooks sit, in each torch from 2.6 on, is ``hookpoints``'s concern (its docstring lists
them). A hook point this torch lacks is said once ("torch X.Y: … is not captured"); the others
still report what they see.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import replace
from typing import Any, get_args

import torch
import torch._dynamo

from ..log import log
from ..shared.events import (
    BreakEvent,
    CallEvent,
    CostEvent,
    ElidedEvent,
    Event,
    FrameEvent,
    GraphEvent,
    InlinedEvent,
    NoteEvent,
    ReachEvent,
    StanceEvent,
    TorchEvent,
)
from ..shared.frames import RESUME_PREFIX, base_name, resume_line
from ..shared.messages import NESTED_BREAK_SEPARATOR, legacy_gb_type
from ..shared.metrics import measured
from ..shared.protocol import Frame, InputSource, Message, Raises, StanceName, StaticTarget, Values
from . import elision, flags, hookpoints, patches, shapes, trackers
from .chains import eager_chain, position
from .compilations import (
    Recompilations,
    Translation,
    current_compile_id,
    graph_lines,
    metric_compile_id,
    metrics_since,
    newest_metric,
    takes_symbolic_sizes,
)
from .fakes import checked_forward
from .frames import WORKER_DIR, collapse, is_user_file
from .messages import Messages
from .stopping import Stopper
from .targets import INLINE_WRAPPER, Registry, Target, is_compiled_call_impl, runs_own_code
from .values import describe_arguments

Emit = Callable[[Event], None]

# Whole-frame skips worth reporting when they hit a compiled target itself; the others are
# benign (no ops at all) or already reported as a break.
REPORTED_SKIPS = ("frame is in the Dynamo skipfiles list", "tracing is non-recursively disabled")

FX_CALLS = ("call_function", "call_method", "call_module")
STANCES: dict[str, StanceName] = {name: name for name in get_args(StanceName)}


class Capture:
    def __init__(
        self,
        emit: Emit,
        path: str = "",
        reuse: tuple[str, ...] = (),
        sites: tuple[StaticTarget, ...] = (),
        own: Callable[[str], bool] | None = None,
        first: int = 0,
        process: Callable[[], str] = lambda: "",
        values: Values = "exact",
    ) -> None:
        self.emit = emit
        # The analysis elides what costly graphs compute; a capture inside the user's own tests (the
        # pytest plugin) computes every value, since the tests read them.
        self.values = values
        # The files whose frames say where the program called compiled code: the analysed file, or
        # for a run every file of the workspace.
        self.own = own or (lambda other: other == path)
        # ``first`` and ``process``: in an interpreter the program started, its targets' numbers and
        # its name (``spawned.child``).
        self.registry = Registry(emit, path, reuse, sites, first, process)
        self.messages = Messages()
        self.recompilations = Recompilations(self.note)
        self.shapes = shapes.Shapes(emit, self.current)
        self.stopper = Stopper(lambda: bool(self.translations))
        self.translations: list[Translation] = []
        self.failed_hooks: set[str] = set()
        self.last_metric: Any = None
        self.input_source: InputSource = "module"
        self.reaches = True
        self.original_compile = torch.compile
        self.error_on_graph_break: Callable[[], bool] = flags.never  # until installed

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
        patches.replace(torch, "compile", self.compile)
        self.error_on_graph_break = flags.wrap_error_on_graph_break()
        guard, messages = self.guarded, self.messages
        hooks: list[tuple[str, Callable[[], None]]] = [
            ("the message structure", lambda: hookpoints.wrap_messages(guard, messages.remember_message)),
            ("the graph-break log", lambda: hookpoints.wrap_break_log(guard, self.logged_break)),
            (
                "the column of each break",
                lambda: hookpoints.wrap_unsupported(guard, messages.remember_columns),
            ),
            ("frame-level error handling", lambda: hookpoints.wrap_error_messages(guard, self.error_break)),
            ("the frame a break in a loop drops", lambda: hookpoints.wrap_loop_skips(guard, self.loop_skip)),
            ("the frame callback", lambda: hookpoints.wrap_frame_callback(self.translate)),
            ("fullgraph=True's returns", lambda: hookpoints.wrap_returns(self.whole)),
            ("inlining", self._hook_inlining),
            ("Dynamo-generated code", lambda: hookpoints.register_bytecode_hook(self.bytecode_hook)),
            ("recompilation", self._hook_recompiles),
            (
                "why a size is dynamic",
                lambda: hookpoints.wrap_automatic_dynamic(guard, self.shapes.automatic_dynamic),
            ),
            (
                "why a size is specialized",
                lambda: hookpoints.wrap_specializations(
                    guard,
                    lambda sources, value, reason: self.shapes.specialized(
                        [shapes.source_name(source) for source in sources], value, reason
                    ),
                ),
            ),
            ("torch.compiler.set_stance", lambda: hookpoints.wrap_stance(guard, self.stance)),
        ]
        for what, hook in hooks:
            try:
                hook()
            except Exception as error:
                self.note(
                    f"torch {hookpoints.TORCH_RELEASE}: {what} is not captured ({_described(error)}); "
                    "gbls reports what its other hooks see"
                )
        self.last_metric = newest_metric()
        self.guarded(
            "torch's features", lambda: self.emit(TorchEvent(features=flags.features(self.original_compile)))
        )
        return self

    def uninstall(self) -> None:
        """Put torch back as ``install`` found it: for a capture in a process that goes on."""
        patches.restore()

    def note(self, text: str) -> None:
        try:
            self.emit(NoteEvent(text=text))
        except Exception:
            pass

    def _hook_recompiles(self) -> None:
        def compiling(compile_id: Any, decision: tuple[bool, str]) -> None:
            translation = self.current()
            if translation is not None:
                self.recompilations.note_compilation(translation, compile_id, decision)

        def recompiling(found: list[str], stacks: list[Any]) -> None:
            translation = self.current()
            if translation is not None:
                self.recompilations.note_recompilation(translation, found, stacks)

        hookpoints.wrap_recompile_limit(self.guarded, compiling)
        self.recompilations.places_guards = hookpoints.wrap_recompile_reasons(self.guarded, recompiling)

    def whole(self, code: types.CodeType) -> bool:
        """Whether ``code`` is the frame Dynamo translates now, of a target with ``fullgraph=True``."""
        translation = self.current()
        target = translation.target if translation is not None else None
        return (
            translation is not None
            and target is not None
            and target.fullgraph
            and code is translation.code
            and runs_own_code(code, target)
        )

    def stance(self, name: str) -> None:
        """The program set torch.compile's stance: where, in its own code."""
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None and not self.own(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is not None:
            stance = STANCES.get(name, "other")
            self.emit(StanceEvent(stance=stance, path=frame.f_code.co_filename, line=frame.f_lineno))

    def current(self) -> Translation | None:
        """The frame Dynamo is translating now, if it belongs to a compiled target's call."""
        translation = self.translations[-1] if self.translations else None
        return translation if translation is not None and translation.target is not None else None

    def _hook_inlining(self) -> None:
        """Record each function Dynamo inlines: a target's results depend on their code too."""
        self.reaches = False  # until the hook is in: without it nothing is ever reused
        hookpoints.wrap_inlining(self.guarded, self.reach_function)
        self.reaches = True

    def reach_function(self, func: Any, arguments: list[Any]) -> None:
        code = getattr(func, "get_code", lambda: None)()
        if isinstance(code, types.CodeType):
            self.reach(code)
            self.traced_inline(code, func, arguments)

    def traced_inline(self, code: types.CodeType, func: Any, arguments: list[Any]) -> None:
        """A compiled target whose code Dynamo inlines into another target's graph (a compiled module
        called inside a compiled step): its code runs there, though it may never run as a frame of
        its own. ``func`` and ``arguments``: what Dynamo inlines, and with what (variable trackers;
        an object's ``value`` is the object)."""
        translation = self.translations[-1] if self.translations else None
        outer = translation.target if translation is not None else None
        if outer is None:
            return
        # The object a method runs on: a bound method's, or the first argument (a module's forward).
        owner = vars(func).get("obj")
        instance = trackers.peek(next(iter(arguments), None) if owner is None else owner)
        for target in self.registry.with_code(code):
            if target is outer or target.called or target.inlined is not None:
                continue
            if target.instance is not None and target.instance is not instance:
                continue  # another object of the class: not the one compiled
            target.inlined = outer
            log(f"target {target.number} traced inline in target {outer.number}")
            self.emit(InlinedEvent(target=target.number, into=outer.number))

    def reach(self, code: types.CodeType) -> None:
        translation = self.translations[-1] if self.translations else None
        target = translation.target if translation is not None else None
        key = (code.co_filename, code.co_firstlineno, base_name(code.co_name))
        if target is None or not self.reaches or not is_user_file(code.co_filename) or key in target.reached:
            return
        target.reached.add(key)
        self.emit(ReachEvent(target=target.number, code=key))

    def logged_break(self, translator: Any, reason: str, exc: Any, user_stack: Any, caller: Any) -> None:
        """One break Dynamo logs, in whichever shape this torch logs it (with or without the exception)."""
        if exc is None:
            exc = hookpoints.handled_exception(caller)
        if exc is not None:
            if self.messages.seen(exc):
                return
            stack = getattr(exc, "real_stack", None)
            text = str(getattr(exc, "msg", None) or exc)
            columns = self.messages.columns.get(exc)
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
        raises: Raises = "error_on_graph_break" if self.error_on_graph_break() else ""
        self.record_break(text, frames, columns, skipped, True, reason, flags.split_depth(translator), raises)

    def error_break(self, exc: Any) -> None:
        """A break that reached Dynamo's frame-level error handling without being logged (a generator)."""
        if self.messages.seen(exc):
            return
        frames = list(getattr(exc, "real_stack", None) or [])
        columns = self.messages.columns.get(exc)
        self.record_break(str(exc.msg), frames, columns, True, False, "")

    def loop_skip(self, message: str) -> None:
        if self.translations:
            self.translations[-1].loop_skip = message.splitlines()[0]

    def translate(self, callback: Callable[..., Any], frame: Any, args: tuple[Any, ...], caller: Any) -> Any:
        """Dynamo's frame callback, told which compiled target's call the frame runs in."""
        if frame.f_code.co_filename.startswith(WORKER_DIR):
            return hookpoints.untranslated(callback, frame, args)
        if not is_user_file(frame.f_code.co_filename) and frame.f_code is not INLINE_WRAPPER:
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
            target = self.registry.register(model, fullgraph, disabled=bool(options.get("disable")))
            found.extend([target] if target is not None else [])

        self.guarded("torch.compile", register)
        target = found[0] if found else None
        if target is not None and target.reused:
            return model  # its last results still hold: run it eagerly, translate nothing
        # Every break is wanted: fullgraph=True is not enforced, each break of the target raises.
        compiled = self.original_compile(model, backend=self.backend, **options)
        if target is not None and target.compiled is None:
            target.compiled = model if is_compiled_call_impl(model) else compiled
        return compiled

    def backend(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        self.guarded("backend", lambda: self.record_graph(gm))
        runs: list[Callable[..., Any]] = [gm.forward]
        self.guarded("custom ops' fakes", lambda: runs.append(checked_forward(gm)))
        if self.values == "auto":
            self.guarded("elision", lambda: runs.append(self.elided(gm, runs[-1])))
        return runs[-1]

    def elided(self, gm: torch.fx.GraphModule, exact: Callable[..., Any]) -> Callable[..., Any]:
        """How the graph runs: ``exact``, or, where one call costs real arithmetic, without computing."""
        translation = self.translations[-1] if self.translations else None
        target = translation.target if translation is not None else None
        frame = base_name(translation.code.co_name) if translation is not None else ""
        where = f"graph of {frame or '?'} (compile id {current_compile_id() or '?'})"
        graph, work, why = elision.elided(gm)
        log(f"{where}: {work:.3g} element-operations a call, " + (f"computed ({why})" if why else "elided"))
        if graph is None:
            return exact
        event = ElidedEvent(
            target=target.number if target is not None else -1,
            frame=frame,
            compile_id=current_compile_id(),
            work=work,
        )
        state = {"called": False, "failed": False}

        def run(*arguments: Any) -> Any:
            if state["failed"]:
                return exact(*arguments)
            try:
                outputs = graph(*arguments)
            except Exception as error:  # gbls's own: the program gets the graph's real outputs
                state["failed"] = True
                self.note(
                    f"gbls could not elide the {where} ({type(error).__name__}: {error}): it is computed"
                )
                return exact(*arguments)
            if not state["called"]:
                state["called"] = True
                self.guarded("elision", lambda: self.emit(event))
            return outputs

        return run

    def record_graph(self, gm: torch.fx.GraphModule) -> None:
        translation = self.translations[-1] if self.translations else None
        if translation is not None and translation.target is not None:
            if translation.recompile and not translation.dynamic:
                translation.dynamic = takes_symbolic_sizes(gm)
            lines = graph_lines(gm, translation.code)
            self.emit(
                GraphEvent(
                    target=translation.target.number,
                    frame=base_name(translation.code.co_name),
                    ops=sum(1 for node in gm.graph.nodes if node.op in FX_CALLS),
                    first_line=min(lines) if lines else None,
                    compile_id=current_compile_id(),
                )
            )

    def bytecode_hook(self, code: types.CodeType, new_code: types.CodeType) -> None:
        def remember() -> None:
            translation = self.translations[-1] if self.translations else None
            if translation is not None and translation.target is not None:
                self.registry.remember_generated(new_code, translation.target)

        self.guarded("bytecode", remember)

    # -- observations -------------------------------------------------------------------

    def begin_translation(self, translation: Translation, frame: Any, callers: types.FrameType) -> None:
        """Which target's call ``frame`` runs in: its own, if it is a target's code (a compiled function
        called from another one is compiled as itself), else the target whose generated code is on
        the stack above it, with the eager call chain from there."""
        code = frame.f_code
        stack = []
        outer: types.FrameType | None = callers
        while outer is not None:
            stack.append(outer)
            outer = outer.f_back
        stack.reverse()
        target = self.registry.target_of(code, frame)
        if target is None:
            target, translation.prefix = eager_chain(stack, code, self.registry)
        if target is None and code.co_name.startswith(RESUME_PREFIX):
            target = self.registry.resumed(frame)
        if target is None and is_user_file(code.co_filename):
            target = self.registry.adopt(code)
        translation.target = target
        in_file = [f for f in stack if self.own(f.f_code.co_filename) and f is not frame]
        translation.caller = position(in_file[-1], self.registry) if in_file else None
        if not code.co_name.startswith(RESUME_PREFIX):  # a resume function is its function's code
            self.reach(code)
        wrapped = code is INLINE_WRAPPER  # a torch module's call: the module itself is not an argument
        if target is not None and not target.called and (code is target.code or wrapped):
            target.called = True
            self.emit(
                CallEvent(
                    target=target.number,
                    inputs=describe_arguments(frame, target.own, bound=wrapped and target.kind == "module"),
                    source=self.input_source,
                    called_at=collapse([translation.caller])[0] if translation.caller else None,
                )
            )

    def record_frame(self, translation: Translation, result: Any, frame: Any, caller: Any) -> None:
        """What Dynamo did with the frame: code for it, or nothing (it runs eagerly), as its callback says.

        The compile id comes from Dynamo's compilation metrics for this frame, or from the breaks
        recorded while translating it (a frame refused outright has neither, and no id).
        """
        metrics = metrics_since(self.last_metric)
        if metrics:
            self.last_metric = metrics[-1]
        target = translation.target
        code = translation.code
        if target is None:
            return
        produced = hookpoints.produced_code(result)
        if not produced and target in self.registry.with_code(code):
            reason = hookpoints.skip_reason(result, frame, caller)
            if reason.startswith(REPORTED_SKIPS):
                self.record_skip(code, reason)
        mine = [m for m in metrics if getattr(m, "co_name", None) == code.co_name]
        compile_id = metric_compile_id(mine[-1]) if mine else ""
        if not compile_id and translation.compile_ids:
            compile_id = translation.compile_ids[-1]
        failure = str(getattr(mine[-1], "fail_reason", None) or "").strip() if mine else ""
        if not produced and translation.loop_skip:  # before torch 2.11 only this says why
            failure = f"{legacy_gb_type(translation.loop_skip)}: {translation.loop_skip}"
        log(
            f"frame {code.co_name} ({code.co_filename}:{code.co_firstlineno}) of target {target.number}: "
            + ("compiled" if produced else "runs eagerly")
            + f", compile id {translation.compile_id or compile_id or '?'}"
            + (", a recompilation" if translation.recompile else "")
            + (f", {failure.splitlines()[0]}" if failure else "")
        )
        self.emit(
            FrameEvent(
                target=target.number,
                compile_id=translation.compile_id or compile_id,
                frame=base_name(code.co_name),
                own=runs_own_code(code, target),
                resumes_at=resume_line(code.co_name),
                guarded=produced,
                failure=failure.splitlines()[0] if failure else "",
                path=code.co_filename,
                line=code.co_firstlineno,
                recompile=translation.recompile,
                guard=translation.guard,
                dynamic=translation.dynamic,
                limit=translation.limit,
                limit_value=translation.limit_value,
                raises=translation.raises,
                called_at=collapse([translation.caller])[0] if translation.caller else None,
            )
        )
        if mine and (translation.compile_id or compile_id):
            self.emit(
                CostEvent(
                    target=target.number,
                    compile_id=translation.compile_id or compile_id,
                    frame=base_name(code.co_name),
                    own=runs_own_code(code, target),
                    resumes_at=resume_line(code.co_name),
                    **measured(lambda name: getattr(mine[-1], name, None)),
                )
            )

    def record_break(
        self,
        text: str,
        stack: list[Any],
        columns: list[hookpoints.Columns] | None,
        skipped: bool,
        logged: bool,
        reason: str,
        depth: int = 0,
        raises: Raises = "",
    ) -> None:
        """One break: its (possibly nested) message text and Dynamo's user stack, innermost last;
        ``depth``: how many inlined calls below the translated frame the graph splits."""
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
        this_compile = current_compile_id()
        translation.compile_ids.append(this_compile)
        messages = [self.messages.message(part) for part in text.split(NESTED_BREAK_SEPARATOR)]
        chain = collapse(frames)
        # The frame that splits, as collapsed: a chain's prefix collapses to a prefix of the chain.
        split = len(collapse(frames[: len(translation.prefix) + depth + 1])) - 1
        log(
            f"break {messages[0].gb_type} at {chain[-1].path}:{chain[-1].line}, split at "
            f"{chain[0].path}:{chain[0].line}, target {translation.target.number}"
        )
        if chain[-1].column is None and not hookpoints.has_columns():
            python = f"{sys.version_info[0]}.{sys.version_info[1]}"
            gap = (
                f"Python {python} has no column table and the line does not say where: the range is the line"
            )
            messages[0] = replace(messages[0], gaps=(*messages[0].gaps, gap))
        self.emit(
            BreakEvent(
                target=translation.target.number,
                compile_id=this_compile,
                direct=runs_own_code(translation.code, translation.target),
                skipped=skipped,
                logged=logged,
                reason=str(reason).strip().splitlines()[0] if str(reason).strip() else "",
                messages=tuple(messages),
                chain=chain,
                called_at=collapse([caller])[0] if caller else None,
                split=min(split, len(chain) - 1),
                nested=depth > 0,
                raises=raises,
            )
        )

    def record_skip(self, code: types.CodeType, reason: str) -> None:
        candidates = self.registry.with_code(code)
        target = candidates[0] if candidates else None
        if target is None:
            return
        self.emit(
            BreakEvent(
                target=target.number,
                compile_id=current_compile_id(),
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


def _described(error: BaseException) -> str:
    return str(error) if isinstance(error, hookpoints.Missing) else f"{type(error).__name__}: {error}"
