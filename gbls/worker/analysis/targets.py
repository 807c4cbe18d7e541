"""The compiled targets of an analysis: what each ``torch.compile`` call was about, and which code
Dynamo enters it by (a decorator's wrapper, a module's ``forward``), so that every frame Dynamo
translates can be told whose call it belongs to."""

from __future__ import annotations

import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

import torch
import torch._dynamo.external_utils as external_utils

from ..log import log
from ..shared.events import Event, SiteEvent, TargetEvent
from ..shared.frames import RESUME_PREFIX, base_name
from ..shared.protocol import StaticTarget, TargetKind
from .frames import code_of, is_user_file, resumes


def _inline_wrapper_code() -> types.CodeType | None:
    """The code of the frame Dynamo enters a compiled torch module (``nn.Linear``) or torch function
    by, whose own code it does not translate as a frame: ``external_utils.wrap_inline``'s ``inner``,
    one code for every wrapper, holding the compiled object as ``fn``. None where torch has none."""
    wrap = getattr(external_utils, "wrap_inline", None)
    inner = wrap(lambda: None) if callable(wrap) else None
    code = getattr(inner, "__code__", None)
    return code if isinstance(code, types.CodeType) else None


INLINE_WRAPPER = _inline_wrapper_code()


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
        self.inlined: Target | None = None  # the target whose graph traced its code inline
        self.process = ""  # the program's process it was compiled in, when not the analysed one
        self.site = ""  # the StaticTarget.id of its compile site, if the source shows it
        self.aliases: list[str] = []  # other compile sites that compiled it again
        self.reached: set[tuple[str, int, str]] = set()

    def forget_attempt(self) -> None:
        """A discarded input attempt's call and reach events are gone: record them again next time."""
        self.called = False
        self.inlined = None
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
            process=self.process,
            generator=bool(self.code is not None and self.code.co_flags & inspect.CO_GENERATOR),
        )


class Described:
    """What a compile call is about: its kind, the code Dynamo enters first, the code the user wrote."""

    def __init__(
        self, kind: TargetKind, entry: types.CodeType | None, own: types.CodeType | None, instance: Any
    ) -> None:
        self.kind = kind
        self.entry = entry
        self.own = own
        self.instance = instance


class Registry:
    """Every target of the analysis, by the code Dynamo enters it by and by the code it generated."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        path: str,
        reuse: tuple[str, ...],
        sites: tuple[StaticTarget, ...],
        first: int = 0,
        process: Callable[[], str] = lambda: "",
    ) -> None:
        self.emit = emit
        self.path = path
        self.reuse = set(reuse)
        self.sites = sites
        self.first = first  # the number of this process's first target: apart from other processes'
        self.process = process  # which of the program's processes this is ("": the analysed one)
        self.targets: list[Target] = []
        # Code objects are keyed by identity: Dynamo's generated code can hold unhashable constants.
        self.by_code: dict[int, tuple[types.CodeType, list[Target]]] = {}
        self.generated: dict[int, tuple[types.CodeType, Target]] = {}

    def remember_generated(self, new_code: types.CodeType, target: Target) -> None:
        self.generated[id(new_code)] = (new_code, target)

    def target_for(self, model: Any) -> Target | None:
        described = describe_target(model)
        if described.entry is None:
            return None
        return choose(self.with_code(described.entry), described.instance)

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
        described = describe_target(model)
        if described.entry is None:
            return None
        known = self.target_for(model)
        if known is not None:
            self.also_compiled_at(known, *call_site())
            return known
        obj = described.instance if described.kind == "module" else model
        target = Target(self.first + len(self.targets), obj, described, fullgraph)
        target.process = self.process()
        self.targets.append(target)
        self.by_code.setdefault(id(described.entry), (described.entry, []))[1].append(target)
        target.call_path, target.call_line = call_site()
        target.reused = target.qualname in self.reuse and self.path in (target.path, target.call_path)
        target.site = site or self.site_of(target)
        log(
            f"target {target.number}: {target.kind} {target.qualname} ({target.path}:{target.line}), "
            f"compiled at {target.call_path}:{target.call_line}, site {target.site or 'none'}"
            + (", reused" if target.reused else "")
        )
        self.emit(target.event(disabled))
        return target

    def adopt(self, code: types.CodeType) -> Target:
        """A target for a frame Dynamo translated in no compiled call the analysis knows of (compiled
        by a name gbls does not replace: ``torch._dynamo.optimize``): its compilations are listed as
        a function's of their own, never dropped."""
        name = base_name(code.co_name)
        qualname = getattr(code, "co_qualname", code.co_name).rsplit(".", 1)
        stand_in = types.SimpleNamespace(__name__=name, __qualname__=".".join([*qualname[:-1], name]))
        target = Target(
            self.first + len(self.targets), stand_in, Described("function", code, code, None), False
        )
        target.process = self.process()
        self.targets.append(target)
        self.by_code.setdefault(id(code), (code, []))[1].append(target)
        target.site = self.site_of(target)
        log(f"target {target.number}: frame {code.co_name} ({target.path}:{target.line}), no compile call")
        self.emit(target.event(disabled=False))
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
        decorated ``def`` of the analysed file that is its code; never a generic call (``went_through``).
        """
        taken = {other.site for other in self.targets if other is not target}
        # A generic call (a decorator's) is no one function's site: each is on its own def.
        free = [site for site in self.sites if site.id not in taken and not site.generic]
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

    def went_through(self, site: StaticTarget) -> list[Target]:
        """The targets a compile call of the analysed file compiled: those of a generic one (a
        decorator's ``torch.compile(...)(func)``), each its own function."""
        return [
            target
            for target in self.targets
            if target.call_path == self.path
            and site.line <= target.call_line <= max(site.end_line, site.line)
        ]

    def target_of(self, code: types.CodeType, frame: Any) -> Target | None:
        """The target ``frame`` is the own call of: the code it enters by, and for a code several
        targets share (modules of one class, one decorator's wrapper), the one its ``self`` is."""
        if code is INLINE_WRAPPER:  # a compiled torch module or function: the wrapper holds it as ``fn``
            return self.target_for(frame.f_locals.get("fn"))
        candidates = self.with_code(code)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        # One code for several targets (modules of one class, one decorator's wrapper): by ``self``.
        first = code.co_varnames[0] if code.co_argcount else ""
        return choose(candidates, frame.f_locals.get(first) if first else None)

    def running(self, frame: types.FrameType) -> Target | None:
        """The target whose call ``frame`` (a caller of a translated frame) runs: code Dynamo
        generated for it, or its own code or one of its resume functions run eagerly (a frame
        Dynamo gave up on: its callees are still translated, as parts of that target's call)."""
        code = frame.f_code
        generated = self.of_generated(code)
        if generated is not None:
            return generated
        if code.co_name.startswith(RESUME_PREFIX):
            return self.resumed(frame)
        return self.target_of(code, frame) if self.with_code(code) or code is INLINE_WRAPPER else None

    def resumed(self, frame: types.FrameType) -> Target | None:
        """The target whose code the resume function ``frame`` runs the rest of, if any."""
        found = [t for t in self.targets if t.code is not None and resumes(t.code, frame.f_code)]
        return choose(found, frame.f_locals.get("self"))


def is_compiled_call_impl(model: Any) -> bool:
    return isinstance(getattr(model, "__self__", None), torch.nn.Module) and getattr(
        model, "__name__", ""
    ) in ("_call_impl", "_wrapped_call_impl")


def describe_target(model: Any) -> Described:
    if is_compiled_call_impl(model):
        model = model.__self__
    if isinstance(model, torch.nn.Module):
        forward = type(model).forward
        return Described("module", code_of(forward), code_of(_unwrap(forward)), model)
    entry = code_of(model)
    if entry is None and callable(model):
        entry = code_of(type(model).__call__)
    function = _unwrap(model) if callable(model) else model
    qualname = getattr(function, "__qualname__", "")
    kind: TargetKind = "method" if "." in qualname.replace("<locals>.", "") else "function"
    return Described(kind, entry, code_of(function) or entry, getattr(model, "__self__", None))


def _unwrap(function: Any) -> Any:
    try:
        return inspect.unwrap(function)
    except ValueError:  # a __wrapped__ cycle
        return function


def choose(targets: list[Target], instance: Any) -> Target | None:
    """The target among ``targets`` (one code) that ``instance`` is, else the first."""
    for target in targets:
        if instance is not None and target.instance is instance:
            return target
    return targets[0] if targets else None


def call_site() -> tuple[str, int]:
    frame: types.FrameType | None = sys._getframe(2)
    while frame is not None and not is_user_file(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is None:
        return "", 0
    return frame.f_code.co_filename, frame.f_lineno


def runs_own_code(code: types.CodeType, target: Target) -> bool:
    """Whether a translated frame is the target's own code or one of its resume functions."""
    own = target.code
    return own is None or code is own or code is INLINE_WRAPPER or resumes(own, code)
