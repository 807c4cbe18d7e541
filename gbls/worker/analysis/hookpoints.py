"""Where Dynamo's hook points live in the installed torch (2.6 to 2.15), found by feature detection.

Each ``wrap_*`` function finds one hook point in the shape this torch has it, wraps it so that
gbls's bookkeeping (run through ``guard``, so that its failure is never Dynamo's) sees what
passes there, and always calls the original with what it was given. A hook point that is in none
of the known shapes raises ``Missing``: the capture says so once and goes on with the others.

The shapes, read from each release's source:
- structured break messages: ``exc.format_graph_break_message`` (2.7+), also held by name in
  ``symbolic_convert`` (2.7-2.10); 2.6 has only one-line texts. 2.9-2.10 append the documentation
  link after formatting, 2.11+ inside it: messages are keyed without it.
- the break log: a module function ``symbolic_convert.log_graph_break`` without the exception
  (2.6-2.9), a translator method without it (2.10), the method with it (2.11+). Without it, the
  exception is the caller's local.
- the frame callback: ``CatchErrorsWrapper.__call__`` (all); its result is ``GuardedCode`` or
  None (2.6) or a ``ConvertFrameReturn`` (2.7+), with the reason of a whole-frame skip from 2.13.
- inlining: the staticmethod ``InliningInstructionTranslator.build_inline_tracer`` (2.7+) or
  ``inline_call_`` (2.6).
- a break in a loop drops the frame with ``SkipFrame`` (2.6-2.10), or is a break of its own
  (``Unsupported(skip_frame=True)``, 2.11+).
- recompilations: ``convert_frame.exceeds_recompile_limit`` (2.7+) or ``exceeds_cache_size_limit``
  (2.6), with the compile id, before every compilation; ``get_and_maybe_log_recompilation_reasons``
  (2.7+) or ``..._reason`` (2.6), the checks the compiled versions failed; where a check was
  installed, from ``guards.format_user_stack_trace`` (2.12+) while the reasons are made.
- a frame not to translate: ``config.disable``, which the frame callback reads first (all).
- a frame's return: ``InstructionTranslator._return`` (all), which from 2.7 compiles a frame
  whose graph is empty only under ``fullgraph=True``, having realized its locals (and their guards).
- shape decisions: ``pgo.update_automatic_dynamic`` (all), which merges a call's sizes into what
  the frame keeps of an input; ``ShapeEnv._set_replacement`` (all), where a size symbol becomes a
  constant; ``ShapeEnv.create_symbol`` (all), which makes no symbol of a dynamic size that is 0 or 1.
- the stance: ``eval_frame._set_stance`` (all), which ``torch.compiler.set_stance`` calls by the
  name ``decorators`` imported.
- columns: Dynamo's user stacks carry them from 2.13; before, they are taken from the
  translators' current instructions when the ``Unsupported`` is made (on Python 3.10, which has
  no column table, from the syntax of their lines: ``columns``).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
import traceback
import types
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch._dynamo.convert_frame as convert_frame
import torch._dynamo.exc as dynamo_exc
import torch._dynamo.guards as dynamo_guards
import torch._dynamo.symbolic_convert as symbolic_convert

from ..shared.messages import LOOP_SKIP, site_link
from ..shared.protocol import ShapeReason
from . import columns, patches

# What the wrappers run gbls's bookkeeping through: (what it is about, the work).
Guard = Callable[[str, Callable[[], None]], None]
Columns = tuple[int | None, int | None]

TORCH_RELEASE = ".".join(torch.__version__.split("+")[0].split(".")[:2])
REGISTRY = os.path.join(os.path.dirname(dynamo_exc.__file__), "graph_break_registry.json")


class Missing(Exception):
    """A hook point that is in none of the shapes gbls knows (a torch newer than it)."""


def _parameters(function: Any) -> Mapping[str, inspect.Parameter]:
    try:
        return inspect.signature(function).parameters
    except (TypeError, ValueError):
        return {}


def _find(owner: Any, name: str, where: str) -> Any:
    found = vars(owner).get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if found is None:
        raise Missing(f"{where} has no {name}")
    return found


# -- structured messages ---------------------------------------------------------------------


def formats_messages() -> bool:
    """Whether this torch builds its break messages from structured fields (2.7+), not plain text."""
    return callable(getattr(dynamo_exc, "format_graph_break_message", None))


def wrap_messages(guard: Guard, record: Callable[[str, str, str, str, list[str]], None]) -> None:
    """``record(text, gb_type, context, explanation, hints)`` for every structured message."""
    original = getattr(dynamo_exc, "format_graph_break_message", None)
    if original is None:
        return  # torch 2.6: plain text only (shared.messages reads it)

    signature = inspect.signature(original)

    @functools.wraps(original)
    def format_graph_break_message(*args: Any, **kwargs: Any) -> str:
        text: str = original(*args, **kwargs)

        def remember() -> None:
            fields = signature.bind(*args, **kwargs).arguments
            record(text, fields["gb_type"], fields["context"], fields["explanation"], list(fields["hints"]))

        guard("break message", remember)
        return text

    # symbolic_convert (2.7-2.10) calls its own copy for data-dependent branching: rebind every one.
    for name, module in list(sys.modules.items()):
        if module is not None and (name == "torch._dynamo" or name.startswith("torch._dynamo.")):
            namespace = vars(module)
            for key, value in list(namespace.items()):
                if value is original:
                    patches.replace(module, key, format_graph_break_message)


# -- the break log ---------------------------------------------------------------------------

# record(translator or None, reason, the exception or None, the user stack or None, the caller's frame)
BreakRecorder = Callable[[Any, str, Any, Any, Any], None]


def wrap_break_log(guard: Guard, record: BreakRecorder) -> None:
    translator = symbolic_convert.InstructionTranslatorBase
    method = vars(translator).get("log_graph_break")
    if method is not None:  # 2.10+: (self, code_options, reason, exc), 2.10 (…, reason="", user_stack=None)
        signature = inspect.signature(method)

        @functools.wraps(method)
        def log_graph_break(self: Any, *args: Any, **kwargs: Any) -> Any:
            caller = sys._getframe(1)

            def remember() -> None:
                bound = signature.bind(self, *args, **kwargs).arguments
                record(self, bound.get("reason", ""), bound.get("exc"), bound.get("user_stack"), caller)

            guard("graph-break log", remember)
            return method(self, *args, **kwargs)

        patches.replace(translator, "log_graph_break", log_graph_break)
        return
    function = getattr(symbolic_convert, "log_graph_break", None)
    if not callable(function):
        raise Missing("InstructionTranslatorBase has no log_graph_break, nor symbolic_convert")
    # 2.6-2.9: (code_options, reason="", exc_info=False, user_stack=None), called from a translator's method.
    module_signature = inspect.signature(function)

    @functools.wraps(function)
    def log_graph_break_function(*args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)

        def remember() -> None:
            bound = module_signature.bind(*args, **kwargs).arguments
            owner = caller.f_locals.get("self")
            owner = owner if isinstance(owner, translator) else None
            record(owner, bound.get("reason", ""), None, bound.get("user_stack"), caller)

        guard("graph-break log", remember)
        return function(*args, **kwargs)

    patches.replace(symbolic_convert, "log_graph_break", log_graph_break_function)


def handled_exception(caller: Any) -> Any:
    """The Unsupported a break-log caller is handling (its local ``excp`` or ``e``), before 2.11."""
    for name in ("excp", "e", "exc"):
        value = caller.f_locals.get(name) if caller is not None else None
        if isinstance(value, dynamo_exc.Unsupported):
            return value
    return None


def current_stack() -> list[Any]:
    """The user stack of the translators running now, as Dynamo's own log would take it."""
    return list(torch._guards.TracingContext.extract_stack())


# -- whole-frame failures --------------------------------------------------------------------


def wrap_error_messages(guard: Guard, record: Callable[[Any], None]) -> None:
    """``record(exc)`` for every Unsupported that reaches Dynamo's frame-level error handling."""
    original = _find(convert_frame, "format_error_msg", "torch._dynamo.convert_frame")

    @functools.wraps(original)
    def format_error_msg(exc: Exception, *args: Any, **kwargs: Any) -> str:
        if isinstance(exc, dynamo_exc.Unsupported):
            guard("error message", lambda: record(exc))
        return original(exc, *args, **kwargs)  # type: ignore[no-any-return]

    patches.replace(convert_frame, "format_error_msg", format_error_msg)


def drops_loops_with_skip_frame() -> bool:
    """Whether a break in a loop drops the frame by raising SkipFrame (2.6-2.10) rather than being an
    Unsupported that says so itself (2.11+)."""
    return "skip_frame" not in _parameters(dynamo_exc.Unsupported.__init__)


def wrap_loop_skips(guard: Guard, record: Callable[[str], None]) -> None:
    """``record(message)`` for each frame Dynamo drops because of a break in a loop, before 2.11."""
    if not drops_loops_with_skip_frame():
        return
    skip_frame = _find(dynamo_exc, "SkipFrame", "torch._dynamo.exc")
    original = skip_frame.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        message = str(args[0]) if args else ""
        if message.startswith(LOOP_SKIP):
            guard("loop skip", lambda: record(message))

    patches.replace(skip_frame, "__init__", __init__)


# -- columns ---------------------------------------------------------------------------------


def has_columns() -> bool:
    """Whether this Python has column tables (3.11+): without them, breaks have lines only."""
    return "colno" in getattr(traceback.FrameSummary, "__slots__", ())


def wrap_unsupported(guard: Guard, record: Callable[[Any, list[Columns]], None]) -> None:
    """``record(exc, columns)`` for each Unsupported made with a user stack that lacks columns
    (before 2.13, or on Python 3.10): the columns, frame by frame, from the translators still on
    the stack."""
    unsupported = dynamo_exc.Unsupported
    original = unsupported.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)

        def remember() -> None:
            stack = getattr(self, "real_stack", None) or []
            if any(getattr(summary, "colno", None) is None for summary in stack):
                record(self, columns_of(stack, translators_on_stack()))

        guard("columns", remember)

    patches.replace(unsupported, "__init__", __init__)


def translators_on_stack() -> list[Any]:
    """The instruction translators active on the Python stack, outermost first."""
    found: list[Any] = []
    frame: types.FrameType | None = sys._getframe(1)
    base = symbolic_convert.InstructionTranslatorBase
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, base) and all(candidate is not other for other in found):
            found.append(candidate)
        frame = frame.f_back
    found.reverse()
    return found


def columns_of(stack: list[Any], translators: list[Any]) -> list[Columns]:
    """Each frame summary's columns: its own, else those of the current instruction of the translator
    at the same file, line and function (the call it is in, or the failing instruction innermost)."""
    current: dict[tuple[str, Any, str], Columns] = {}
    for translator in translators:
        code = getattr(translator, "f_code", None)
        if code is not None:
            key = (code.co_filename, getattr(translator, "lineno", None), code.co_name)
            current[key] = _instruction_columns(code, getattr(translator, "current_instruction", None))
    found: list[Columns] = []
    for summary in stack:
        own = getattr(summary, "colno", None)
        if own is not None:
            found.append((own, getattr(summary, "end_colno", None)))
        else:
            found.append(current.get((summary.filename, summary.lineno, summary.name), (None, None)))
    return found


def _instruction_columns(code: types.CodeType, instruction: Any) -> Columns:
    """An instruction's columns: from its position (3.11+), else from the syntax of its line (3.10)."""
    where = getattr(instruction, "positions", None)
    if where is not None:
        return where.col_offset, where.end_col_offset
    if has_columns():
        return None, None
    return columns.of_instruction(code, getattr(instruction, "offset", None))


# -- the frame callback ----------------------------------------------------------------------

# translate(Dynamo's callback bound to its wrapper, the frame, the other arguments, the caller's frame)
Translate = Callable[[Callable[..., Any], Any, tuple[Any, ...], Any], Any]


def wrap_frame_callback(translate: Translate) -> None:
    wrapper = getattr(convert_frame, "CatchErrorsWrapper", None)
    if not isinstance(wrapper, type):
        raise Missing("torch._dynamo.convert_frame has no CatchErrorsWrapper class")
    original = _find(wrapper, "__call__", "CatchErrorsWrapper")

    @functools.wraps(original)
    def __call__(self: Any, frame: Any, *args: Any) -> Any:
        return translate(functools.partial(original, self), frame, args, sys._getframe(1))

    patches.replace(wrapper, "__call__", __call__)


def untranslated(callback: Callable[..., Any], frame: Any, args: tuple[Any, ...]) -> Any:
    """The frame callback's answer for a frame Dynamo is not to translate as a frame of its own
    (gbls's: its mapping of CUDA called from a compiled call's eager parts), as for torch's own
    files: the program's compilations, and their ids, are the program's alone. Inlined, the code is
    still traced as before."""
    with torch._dynamo.config.patch(disable=True):
        return callback(frame, *args)


def wrap_returns(whole: Callable[[types.CodeType], bool]) -> None:
    """``fullgraph=True`` is reported, not enforced (a break goes on as a split), but what it decides
    when a frame returns is kept: a frame whose graph is empty compiles, its locals realized first
    (their guards are the program's). The translator of a frame ``whole`` names (a fullgraph target's)
    is one graph while it returns."""
    translator = symbolic_convert.InstructionTranslator
    original = _find(translator, "_return", "torch._dynamo.symbolic_convert.InstructionTranslator")

    @functools.wraps(original)
    def _return(self: Any, inst: Any) -> Any:
        if self.one_graph or not whole(self.f_code):
            return original(self, inst)
        self.one_graph = True
        try:
            return original(self, inst)
        finally:
            self.one_graph = False

    patches.replace(translator, "_return", _return)


def produced_code(result: Any) -> bool:
    """Whether the frame callback's result carries code for the frame (else the frame runs eagerly)."""
    if hasattr(result, "guarded_code"):  # 2.7+: ConvertFrameReturn
        return result.guarded_code is not None
    return type(result).__name__ == "GuardedCode"  # 2.6: GuardedCode, None or a C flag object


def skip_reason(result: Any, frame: Any, caller: Any) -> str:
    """Why Dynamo did not translate a frame it produced no code for, in 2.13+'s words: said by the
    result from 2.13, decided here as 2.13 decides it before (for the two reasons gbls reports)."""
    if hasattr(result, "skip_reason"):
        return str(result.skip_reason or "")
    from torch._dynamo import decorators, trace_rules

    check = trace_rules.check
    skipped = check(frame.f_code, frame=frame) if "frame" in _parameters(check) else check(frame.f_code)
    if skipped:
        return "frame is in the Dynamo skipfiles list"
    wrapper_code = getattr(decorators, "_nonrecursive_disable_wrapper_code", None)  # 2.8+
    if wrapper_code is not None and caller is not None and caller.f_code is wrapper_code:
        return "tracing is non-recursively disabled for this frame"
    return ""


# -- calls of compiled code and recompilations -----------------------------------------------

LIMIT_CHECKS = ("exceeds_recompile_limit", "exceeds_cache_size_limit")  # 2.7+, 2.6
RECOMPILE_REASONS = ("get_and_maybe_log_recompilation_reasons", "get_and_maybe_log_recompilation_reason")


def _convert_frame_function(names: tuple[str, ...]) -> str:
    for name in names:
        if callable(getattr(convert_frame, name, None)):
            return name
    raise Missing(f"torch._dynamo.convert_frame has none of {', '.join(names)}")


def wrap_recompile_limit(guard: Guard, record: Callable[[Any, tuple[bool, str]], None]) -> None:
    """``record(compile_id, (exceeded, which limit))`` before each compilation of a frame."""
    name = _convert_frame_function(LIMIT_CHECKS)
    check = getattr(convert_frame, name)

    @functools.wraps(check)
    def exceeds(cache_size: Any, compile_id: Any, *args: Any, **kwargs: Any) -> Any:
        decision = check(cache_size, compile_id, *args, **kwargs)
        guard("recompile limit", lambda: record(compile_id, decision))
        return decision

    patches.replace(convert_frame, name, exceeds)


def wrap_recompile_reasons(guard: Guard, record: Callable[[list[str], list[Any]], None]) -> bool:
    """``record(reasons, user stacks of the failed checks)`` for each recompilation. Whether this
    torch says where a check was installed (2.12+): before, the stacks are always empty."""
    name = _convert_frame_function(RECOMPILE_REASONS)
    explain = getattr(convert_frame, name)
    collecting: list[list[Any]] = []  # the stacks of the explanation being made, innermost last

    @functools.wraps(explain)
    def explained(*args: Any, **kwargs: Any) -> Any:
        collecting.append([])
        try:
            found = explain(*args, **kwargs)
        finally:
            stacks = collecting.pop()
        guard("recompilation", lambda: record(list(found or []), stacks))
        return found

    patches.replace(convert_frame, name, explained)
    formatter = getattr(dynamo_guards, "format_user_stack_trace", None)
    if formatter is None:
        return False

    @functools.wraps(formatter)
    def format_user_stack_trace(stack: Any, *args: Any, **kwargs: Any) -> Any:
        if collecting and stack:
            collecting[-1].append(stack)
        return formatter(stack, *args, **kwargs)

    patches.replace(dynamo_guards, "format_user_stack_trace", format_user_stack_trace)
    return True


# -- inlining and generated code -------------------------------------------------------------


def wrap_inlining(guard: Guard, record: Callable[[Any, list[Any]], None]) -> None:
    """``record(func, arguments)`` for each function Dynamo inlines (a VariableTracker with ``get_code``,
    and the variable trackers of its positional arguments)."""
    inlining = getattr(symbolic_convert, "InliningInstructionTranslator", None)
    for name in ("build_inline_tracer", "inline_call_"):  # 2.7+, 2.6 (an instance method from 2.7)
        raw = vars(inlining).get(name) if isinstance(inlining, type) else None
        if isinstance(raw, staticmethod):
            break
    else:
        raise Missing("InliningInstructionTranslator has no static build_inline_tracer nor inline_call_")
    original = raw.__func__

    @functools.wraps(original)
    def inline(parent: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
        arguments = args[0] if args and isinstance(args[0], (list, tuple)) else []
        guard("inlining", lambda: record(func, list(arguments)))
        return original(parent, func, *args, **kwargs)

    patches.replace(inlining, name, staticmethod(inline))


def register_bytecode_hook(hook: Callable[[types.CodeType, types.CodeType], None]) -> None:
    handle = _find(convert_frame, "register_bytecode_hook", "torch._dynamo.convert_frame")(hook)
    patches.on_restore(handle.remove)


# -- shape decisions and the stance --------------------------------------------------------


def wrap_automatic_dynamic(guard: Guard, record: Callable[[str, Any, Any], None]) -> None:
    """``record(input's source name, its sizes on this call, what the frame keeps of them)`` each
    time automatic dynamic shapes merge an input's sizes."""
    from torch._dynamo import pgo

    original = _find(pgo, "update_automatic_dynamic", "torch._dynamo.pgo")

    @functools.wraps(original)
    def update_automatic_dynamic(tx: Any, name: Any, entry: Any, *args: Any, **kwargs: Any) -> Any:
        merged = original(tx, name, entry, *args, **kwargs)
        guard("automatic dynamic shapes", lambda: record(str(name), entry, merged))
        return merged

    patches.replace(pgo, "update_automatic_dynamic", update_automatic_dynamic)


def wrap_specializations(guard: Guard, record: Callable[[list[Any], Any, ShapeReason], None]) -> None:
    """``record(the symbol's sources, the constant, "code" or "zero_one")`` for each size torch
    specializes: a symbol replaced by a number, or a dynamic size of 0 or 1 made no symbol."""
    from torch.fx.experimental import symbolic_shapes

    shape_env = symbolic_shapes.ShapeEnv
    replacement = _find(shape_env, "_set_replacement", "ShapeEnv")

    @functools.wraps(replacement)
    def _set_replacement(self: Any, symbol: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        before = self.replacements.get(symbol)
        result = replacement(self, symbol, target, *args, **kwargs)

        def remember() -> None:
            if (
                getattr(target, "is_number", False)
                and before != target
                and self.replacements.get(symbol) == target
            ):
                record(list(self.var_to_sources.get(symbol, [])), target, "code")

        guard("specialization", remember)
        return result

    patches.replace(shape_env, "_set_replacement", _set_replacement)
    create = _find(shape_env, "create_symbol", "ShapeEnv")
    signature = inspect.signature(create)
    dynamic = getattr(getattr(symbolic_shapes, "DimDynamic", None), "DYNAMIC", None)

    @functools.wraps(create)
    def create_symbol(self: Any, value: Any, source: Any, *args: Any, **kwargs: Any) -> Any:
        result = create(self, value, source, *args, **kwargs)
        if type(value) is int and value in (0, 1) and getattr(result, "is_number", False):

            def remember() -> None:
                bound = signature.bind(self, value, source, *args, **kwargs)
                bound.apply_defaults()
                if bound.arguments.get("dynamic_dim") is dynamic:  # meant to be dynamic, not static
                    record([source], value, "zero_one")

            guard("specialization", remember)
        return result

    patches.replace(shape_env, "create_symbol", create_symbol)


def wrap_stance(guard: Guard, record: Callable[[str], None]) -> None:
    """``record(stance)`` each time the program sets torch.compile's stance (and gets it back at the
    end of a ``with torch.compiler.set_stance(...)``)."""
    import torch._dynamo.eval_frame as eval_frame

    original = _find(eval_frame, "_set_stance", "torch._dynamo.eval_frame")

    @functools.wraps(original)
    def _set_stance(stance: Any, *args: Any, **kwargs: Any) -> Any:
        prior = original(stance, *args, **kwargs)
        guard("stance", lambda: record(str(getattr(stance, "stance", ""))))
        return prior

    # ``set_stance`` (in decorators) calls the name it imported.
    import torch._dynamo.decorators as decorators

    for module in (eval_frame, decorators):
        if getattr(module, "_set_stance", None) is original:
            patches.replace(module, "_set_stance", _set_stance)


# -- GB ids ----------------------------------------------------------------------------------


def registry_ids() -> dict[str, str] | None:
    """gb_type → GB id from the registry of the user's torch; None before it had one (2.6, 2.7)."""
    try:
        with open(REGISTRY, encoding="utf-8") as handle:
            registry = json.load(handle)
    except (OSError, ValueError):
        return None
    ids: dict[str, str] = {}
    for gb_id, entries in registry.items():
        for entry in entries:
            ids.setdefault(entry["Gb_type"], gb_id)
    return ids


def documentation_link(gb_type: str, gb_id: str | None) -> str | None:
    link = getattr(dynamo_exc, "get_gbid_documentation_link", None)  # 2.9+
    found = link(gb_type) if link is not None else None
    if found:
        return str(found)
    return site_link(gb_id)
