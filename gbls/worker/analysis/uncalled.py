"""Compiled targets the program never called, called with declared example inputs or synthesized ones."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

from ..log import log
from ..shared.directives import example_sources
from ..shared.events import DiscardEvent, Event, StaticEvent, VerdictEvent, with_attempt
from ..shared.protocol import Request, StaticTarget
from . import inputs
from .capture import Capture, Emit
from .cuda import ToCpu
from .failures import describe_error
from .targets import Target


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


class Runner:
    """Calls compiled targets that nothing called, with example or synthesized inputs."""

    def __init__(
        self,
        capture: Capture,
        attempts: Attempts,
        module: types.ModuleType,
        path: str,
        lines: list[str],
        request: Request,
        to_cpu: ToCpu | None,
    ) -> None:
        self.capture = capture
        self.to_cpu = to_cpu
        self.attempts = attempts
        self.namespace = module.__dict__
        self.path = path
        self.lines = lines
        self.run_main = request.settings.run_main
        self.budget = request.settings.timeout
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

    def run_static(self, static: StaticTarget, stopped: bool, cut: bool) -> None:
        """Compile and run a target whose ``torch.compile`` call never ran (e.g. in ``main()``).

        ``stopped``: the module failed before its end; ``cut``: the budget ended it, still running.
        """
        if static.generic:
            self._run_generic(static, stopped)
            return
        where = f"in {static.scope}()" if static.scope else "at module level"
        reason = f"its torch.compile call ({where}) did not run during the analysis"
        remedy = self.remedy(static)
        if cut:
            reason = (
                f"the program was cut after {self.budget:g} s, before it reached it (its torch.compile "
                f"call, {where})"
            )
            remedy = (
                "configure a run that gets there within the budget, or give it more (the timeout setting)"
            )
        elif stopped:
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
                    why = describe_error(error)
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
                    reason=f"{reason}; {remedy}",
                )
            )
            return
        self.capture.registry.register(obj, fullgraph=False, disabled=False, site=static.id)
        self.capture.compile(obj)
        target = self.capture.registry.target_for(obj)
        if target is not None and not target.called:
            self.run(target)

    def _run_generic(self, static: StaticTarget, stopped: bool) -> None:
        """A call that compiles what its function is given (``torch.compile(...)(func)`` in a
        decorator): the functions that went through it are its compile sites, each analysed as its
        own; when none did, nothing says what it compiles, and it is not analysed."""
        if self.capture.registry.went_through(static):
            return
        where = f"in {static.scope}()" if static.scope else "at module level"
        reason = (
            f"the module stopped before any function went through its torch.compile call ({where})"
            if stopped
            else f"no function went through its torch.compile call ({where}) during the analysis"
        )
        self.attempts.emit_raw(
            StaticEvent(
                site=static.id,
                qualname=static.qualname,
                path=self.path,
                line=static.line,
                kind=static.kind,
                reason=f"{reason}; it compiles `{static.name}`, the function its enclosing code is given: "
                "a run of the program or of the tests that call those functions analyses each of them",
            )
        )

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
                return f"{owner_name}() could not be built without arguments ({describe_error(error)})"
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
        log(f"target {target.number}: {len(examples)} declared examples")
        errors = []
        for line, text in examples:
            self.attempts.next()
            try:
                args, kwargs = inputs.evaluate_example(text, self.namespace, self.to_cpu)
                callee(*args, **kwargs)
            except BaseException as error:  # KeyboardInterrupt and the like too: the user's code raised it
                self.attempts.discard()
                target.forget_attempt()
                errors.append(f"the example at line {line} raised {describe_error(error)}")
        if errors and not target.called:
            self._verdict(target, "; ".join(errors))

    def _run_synthesized(
        self, target: Target, callee: Callable[..., Any], signature_of: Any, module: torch.nn.Module | None
    ) -> None:
        self.capture.input_source = "synthesized"
        log(f"target {target.number}: synthesized inputs")
        tried = []
        for (args, kwargs), shown in inputs.synthesized_calls(signature_of, module):
            self.attempts.next()
            try:
                callee(*args, **kwargs)
                return
            except BaseException as error:
                self.attempts.discard()
                target.forget_attempt()
                tried.append(f"{shown or 'no arguments'}: {describe_error(error)}")
        attempts = "; ".join(tried[-2:]) if tried else "its signature gives nothing to synthesize inputs from"
        self._verdict(
            target,
            f"no synthesized input worked (tried {attempts}); {self.remedy(self.sites.get(target.site))}",
        )

    def _verdict(self, target: Target, reason: str) -> None:
        log(f"target {target.number} not analysed: {reason}")
        self.attempts.emit_raw(VerdictEvent(target=target.number, reason=reason))


def inspect_unwrap(function: Any) -> Any:
    return getattr(function, "_torchdynamo_orig_callable", None) or getattr(function, "__wrapped__", function)
