"""One process's trace as the events an analysis of the same run emits, so that the same ``merge``
folds them into the same result.

A trace names the frames Dynamo translated, not the ``torch.compile`` calls the program made: a
translated frame is a compiled function's own (a *target*), one of its resume functions, or a
callee Dynamo re-entered because a break inside it made the compiled code call it eagerly. So:

- a resume function (``torch_dynamo_resume_in_g_at_17``) belongs to its function's translation,
  the nearest one before it in its file with that name;
- a frame whose function a break's chain passed through (``normalize`` in ``g → normalize →
  log_stats``) is, when translated later, that break's compiled function's callee, with the frames
  above it in that chain as the eager call chain leading to it;
- any other frame is a compiled function of its own.

What a compiled function is called comes from its source: the qualname of the ``def`` at its
first line, or, for an ``nn.Module``'s ``forward`` no compile site decorates, the module's class
(``torch.compile(model)``), as an analysis names them. What the trace does not hold stays empty
(the inputs of each call) or is said in the result's notes; frames Dynamo refused before
translating them (a generator function) leave no record in a trace.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache

from ..engine.discovery import CompiledSite, find_compiled
from ..engine.sources import TextOf
from ..worker.shared import reasons
from ..worker.shared.events import (
    BreakEvent,
    CallEvent,
    CostEvent,
    Event,
    FrameEvent,
    GraphEvent,
    ReachEvent,
    TargetEvent,
)
from ..worker.shared.frames import RESUME_PREFIX, RawFrame, base_name, collapse, resume_line
from ..worker.shared.lines import split_lines
from ..worker.shared.messages import from_text, shipped_id, shipped_ids, site_link
from ..worker.shared.metrics import measured
from ..worker.shared.protocol import Frame, Guard, Message, TargetKind
from ..worker.shared.workspace import in_workspace
from . import columns
from .breaks import LoggedBreak, Written, frames_of
from .compilations import Compilation


@dataclass(frozen=True)
class Definition:
    name: str
    qualname: str
    owner: str  # the qualname of the class it is a method of, or ""


@lru_cache(maxsize=64)
def definitions(source: str) -> dict[int, Definition]:
    """Each function of the source by the first line its code object has (its first decorator's)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return {}
    found: dict[int, Definition] = {}

    def visit(node: ast.AST, scope: tuple[str, ...], owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                qualname = ".".join([*scope, child.name])
                found[first] = Definition(child.name, qualname, owner)
                visit(child, (*scope, child.name, "<locals>"), "")
            elif isinstance(child, ast.ClassDef):
                visit(child, (*scope, child.name), ".".join([*scope, child.name]))
            else:
                visit(child, scope, owner)

    visit(tree, (), "")
    return found


@dataclass
class Target:
    number: int
    path: str
    name: str  # its code's name
    line: int
    qualname: str = ""
    kind: TargetKind = "function"
    site: str = ""


@dataclass
class Callee:
    """A function a break's chain passed through: Dynamo re-enters it, eagerly called by ``target``."""

    target: Target
    prefix: tuple[RawFrame, ...]  # the frames of the chain above it


class Translator:
    """Reads one process's compilations into events, given the source texts and the workspace."""

    def __init__(
        self,
        text_of: TextOf,
        roots: list[str],
        entry: str,
        mine: Callable[[str], bool],
        guard_positions: bool,
        relocate: Callable[[str], str],
    ) -> None:
        self.text_of = text_of
        self.relocate = relocate  # the run's path of a file → this workspace's
        # The run's torch placed each guard at an instruction (2.13+), which its text leaves out.
        self.guard_positions = guard_positions
        self.roots = roots
        self.entry = entry
        self.mine = mine
        self.known_sites: dict[str, tuple[CompiledSite, ...]] = {}
        self.sites = self.sites_of(entry) if entry else ()
        self.targets: dict[tuple[str, str, int], Target] = {}
        self.callees: dict[tuple[str, str], Callee] = {}
        # Each translated code's target, whether it is the target's own, and its eager call chain.
        self.owners: dict[tuple[str, str, int], tuple[Target, bool, tuple[RawFrame, ...]]] = {}
        self.shipped = shipped_ids()
        self.events: list[Event] = []
        self.stale: dict[str, int] = {}  # a workspace file → findings of another version of it
        # A log's stack of each place (the innermost frame, the message's first line), and how many
        # breaks it wrote without one whose compiled function it never said.
        self.stacks: dict[tuple[tuple[str, int], str], tuple[Written, ...]] = {}
        self.unplaced = 0

    def translate(self, found: list[Compilation]) -> list[Event]:
        codes: dict[str, tuple[str, str, int]] = {}  # each frame id's code: Dynamo numbers codes
        for compilation in found:
            compilation.path = self.relocate(compilation.path) if compilation.path else ""
            compilation.breaks = [
                replace(b, frames=tuple(replace(f, path=self.relocate(f.path)) for f in b.frames))
                for b in compilation.breaks
            ]
            frame_id = compilation.frame_id
            if not compilation.path and frame_id in codes:
                compilation.path, compilation.name, compilation.line = codes[frame_id]
            elif not compilation.path:
                self.compiled_frame(compilation, set(codes.values()))
            if compilation.path and compilation.name:
                codes.setdefault(frame_id, (compilation.path, compilation.name, compilation.line))
                self.compilation(compilation)
            else:
                self.unplaced += len(compilation.breaks)
        return self.events

    def compiled_frame(self, compilation: Compilation, taken: set[tuple[str, str, int]]) -> None:
        """A log's compilation's code, from its breaks' tracebacks (from 2.10 they start above the
        compiled frame, at the eager callers: ``main``): the outermost frame of code an earlier
        compilation translated (another frame id), or else that a compile site compiles. Below an
        earlier compilation's code, the first other frame is a callee it re-entered; with none
        below, it is that code again, resumed after its break (the log names the resume function
        as the function). With neither, the first frame after torch's and the standard library's."""
        written = next((logged.frames for logged in compilation.breaks if not logged.suppressed), None)
        if written is None:  # only breaks whose stack the log left out: a callee a break re-enters
            stacks = [self.stacks.get(self.place(logged), ()) for logged in compilation.breaks]
            callees = [
                code
                for frame in (stacks[0] if stacks else ())
                if (frame.path, base_name(frame.name)) in self.callees
                and (code := self.code_of(frame)) is not None
                and code not in taken
            ]
            if callees:
                compilation.path, compilation.name, compilation.line = callees[0]
            return
        frames = [frame for frame in written if self.mine(frame.path) and frame.name != "<module>"]
        codes = [(frame, code) for frame in frames if (code := self.code_of(frame)) is not None]
        for index, (_, code) in enumerate(codes):
            if code in taken:
                below = [other for _, other in codes[index + 1 :] if other not in taken]
                compilation.path, compilation.name, compilation.line = below[0] if below else code
                return
            if self.compiled_by_site(code):
                compilation.path, compilation.name, compilation.line = code
                return
        if codes:
            compilation.path, compilation.name, compilation.line = codes[0][1]

    @staticmethod
    def place(logged: LoggedBreak) -> tuple[tuple[str, int], str]:
        """Where a log writes a break's stack once: its innermost frame, its message's first line."""
        return logged.at, logged.messages[0].split("\n", 1)[0] if logged.messages else ""

    def code_of(self, frame: Written) -> tuple[str, str, int] | None:
        """The code object a traceback's frame runs: its function's, by the source (a resume
        function as torch names it, whose first line is where it resumes)."""
        resumes = resume_line(frame.name)
        if resumes is not None:
            return frame.path, frame.name, resumes
        enclosing = [
            (first, definition)
            for first, definition in definitions(self.text_of(frame.path) or "").items()
            if definition.name == frame.name and first <= frame.line
        ]
        if not enclosing:
            return None
        return frame.path, frame.name, max(enclosing, key=lambda pair: pair[0])[0]

    def compiled_by_site(self, code: tuple[str, str, int]) -> bool:
        """Whether a compile site of the file compiles the code: its function's, a resume
        function's (``torch_dynamo_resume_in_step_at_11`` is ``step``'s), or its module's forward."""
        path, name, line = code
        name = base_name(name)
        definition = definitions(self.text_of(path) or "").get(line)
        for site in self.sites_of(path):
            if site.kind != "module" and site.name == name:
                return True
            if site.kind == "module" and definition is not None and site.qualname == definition.owner:
                return True
        return False

    def sites_of(self, path: str) -> tuple[CompiledSite, ...]:
        if path not in self.known_sites:
            self.known_sites[path] = find_compiled(self.text_of(path) or "", path)
        return self.known_sites[path]

    def compilation(self, compilation: Compilation) -> None:
        code = (compilation.path, compilation.name, compilation.line)
        target, own, prefix = self.owner(code)
        metrics = compilation.metrics
        limit = compilation.limit
        failure = str(metrics.get("fail_reason") or "").strip()
        if compilation.recorded:
            guarded = bool(metrics.get("has_guarded_code")) and not failure
        else:  # a log: Dynamo gave up on the frame where a break says it skipped it
            guarded = not any("Skipping" in logged.reason for logged in compilation.breaks)
        for logged in compilation.breaks if not limit else []:
            self.break_event(target, own, prefix, compilation, logged, code)
        said = compilation.reasons[:1] or [str(metrics.get("recompile_reason") or "")]
        guard = self.guard(said[0], target, own, prefix, code) if compilation.recompile and said[0] else None
        self.events.append(
            FrameEvent(
                target=target.number,
                compile_id=compilation.compile_id,
                frame=base_name(compilation.name),
                own=own,
                resumes_at=resume_line(compilation.name),
                guarded=guarded,
                failure=failure.splitlines()[0] if failure and not guarded else "",
                path=compilation.path,
                line=compilation.line,
                recompile=compilation.recompile,
                guard=guard,
                limit=limit[0] if limit else "",
                limit_value=limit[1] if limit else 0,
            )
        )
        ops = metrics.get("graph_op_count")
        if compilation.graphs and isinstance(ops, int):
            self.events.append(
                GraphEvent(
                    target=target.number,
                    frame=base_name(compilation.name),
                    ops=ops,
                    compile_id=compilation.compile_id,
                )
            )
        if compilation.recorded:
            self.events.append(
                CostEvent(
                    target=target.number,
                    compile_id=compilation.compile_id,
                    frame=base_name(compilation.name),
                    own=own,
                    resumes_at=resume_line(compilation.name),
                    **measured(metrics.get),
                )
            )

    def owner(self, code: tuple[str, str, int]) -> tuple[Target, bool, tuple[RawFrame, ...]]:
        """The target a translated code runs in, whether it is the target's own, its call chain."""
        path, name, line = code
        if code in self.owners:
            return self.owners[code]
        if name.startswith(RESUME_PREFIX):
            function = base_name(name)
            earlier = [
                (other_line, owner)
                for (other_path, other_name, other_line), owner in self.owners.items()
                if other_path == path and base_name(other_name) == function and other_line <= line
            ]
            if earlier:
                found = max(earlier, key=lambda pair: pair[0])[1]
                self.owners[code] = found
                return found
        callee = self.callees.get((path, base_name(name)))
        if callee is not None:
            found = (callee.target, False, callee.prefix)
        else:
            found = (self.new_target(path, base_name(name), line), True, ())
        self.owners[code] = found
        if not name.startswith(RESUME_PREFIX):
            self.events.append(ReachEvent(target=found[0].number, code=(path, line, name)))
        return found

    def new_target(self, path: str, name: str, line: int) -> Target:
        target = Target(len(self.targets), path, name, line)
        self.targets[(path, name, line)] = target
        definition = definitions(self.text_of(path) or "").get(line)
        target.qualname = definition.qualname if definition else name
        target.kind = "method" if definition and definition.owner else "function"
        decorated = [
            site
            for site in self.sites_of(path)
            if site.kind != "module" and site.name == name and site.first_line == line
        ]
        if decorated:
            target.qualname, target.kind = decorated[0].qualname, decorated[0].kind
        elif definition and definition.owner and name == "forward":
            # A module's forward, compiled as the module (torch.compile(model), model.compile()).
            target.qualname, target.kind = definition.owner, "module"
        taken = {other.site for other in self.targets.values()}
        chosen = [
            site
            for site in self.sites
            if site.id not in taken
            and (
                (
                    site.kind != "module"
                    and path == self.entry
                    and site.first_line == line
                    and site.name == name
                )
                or (site.kind == "module" and target.kind == "module" and site.qualname == target.qualname)
            )
        ]
        target.site = chosen[0].id if chosen else ""
        site = chosen[0] if chosen else None
        self.events += [
            TargetEvent(
                target=target.number,
                name=target.qualname.rsplit(".", 1)[-1] if target.kind == "module" else name,
                qualname=target.qualname,
                path=path,
                line=line,
                kind=target.kind,
                call_path=self.entry if site else "",
                call_line=site.line if site else 0,
                site=target.site,
            ),
            CallEvent(target=target.number, source="module"),
        ]
        return target

    def break_event(
        self,
        target: Target,
        own: bool,
        prefix: tuple[RawFrame, ...],
        compilation: Compilation,
        logged: LoggedBreak,
        code: tuple[str, str, int],
    ) -> None:
        messages = tuple(
            self.message(text, gb_id) for text, gb_id in zip(logged.messages, logged.gb_ids, strict=True)
        )
        place = self.place(logged)
        if logged.suppressed:  # a log writes one place's stack once: the break at that place before
            frames = list(self.stacks.get(place, ()))
            if not frames:
                self.unplaced += 1
                return
        else:
            frames = list(logged.frames)
            self.stacks.setdefault(place, logged.frames)
        moved = next((frame.path for frame in frames if not self.holds(frame)), None)
        if moved is not None:
            self.stale[moved] = self.stale.get(moved, 0) + 1
            return
        start = next(
            (
                index
                for index, frame in enumerate(frames)
                if frame.path == target.path and base_name(frame.name) == target.name
            ),
            None,
        )
        above = frames[:start] if start is not None else []
        written = frames[start:] if start is not None else frames
        if not written:  # refused at its first instruction: the code's first line
            written = [Written(code[0], code[1], code[2], "")]
        said = " ".join([messages[0].gb_type, messages[0].explanation, messages[0].context])
        raw = [*(() if start is not None else prefix), *self.positioned(written, said, messages[0].gb_type)]
        chain = collapse(raw, self.mine)
        for index in range(1, len(chain)):  # each callee below the split: Dynamo re-enters it
            key = (chain[index].path, chain[index].function)
            self.callees.setdefault(key, Callee(target, tuple(_raw(f) for f in chain[:index])))
        called_at = next((f for f in reversed(above) if in_workspace(f.path, self.roots)), None)
        self.events.append(
            BreakEvent(
                target=target.number,
                compile_id=compilation.compile_id,
                direct=own,
                skipped="Skipping" in logged.reason,
                reason=logged.reason,
                messages=messages,
                chain=chain,
                called_at=Frame(called_at.path, called_at.name, called_at.line) if called_at else None,
            )
        )

    def holds(self, frame: Written) -> bool:
        """Whether a workspace file still reads, at the frame's line, the code the run ran there."""
        if not frame.code or not in_workspace(frame.path, self.roots):
            return True
        lines = split_lines(self.text_of(frame.path) or "")
        return 0 < frame.line <= len(lines) and lines[frame.line - 1].strip() == frame.code

    def notes(self) -> list[str]:
        """What the import could not show, and why."""
        found = [
            f"{path} changed since the run: {count} of the trace's findings there name code that is no "
            "longer at their lines, and are not shown"
            for path, count in sorted(self.stale.items())
        ]
        if self.unplaced:
            found.append(
                f"{self.unplaced} graph break{'s' * (self.unplaced != 1)} the log wrote without its stack "
                "(torch writes one place's stack once) in a compiled function it names nowhere else: "
                "not shown; a TORCH_TRACE of the run has them"
            )
        return found

    def positioned(self, written: list[Written], said: str, gb_type: str) -> list[RawFrame]:
        """The frames with the columns their source gives (see ``columns``)."""
        raw: list[RawFrame] = []
        for index, frame in enumerate(written):
            source = self.text_of(frame.path) or "" if self.mine(frame.path) else ""
            if index + 1 < len(written):
                found = columns.of_call(source, frame.line, base_name(written[index + 1].name), frame.caret)
            else:
                found = columns.of_cause(source, frame.line, gb_type, said, frame.caret)
            raw.append((frame.path, frame.name, frame.line, *found))
        return raw

    def message(self, text: str, gb_id: str | None) -> Message:
        structured, gaps = from_text(text, "of the traced run")
        if gb_id is None:
            gb_id, said = shipped_id(structured.gb_type, self.shipped, "the trace names no GB id")
            gaps += said
        return Message(
            structured.gb_type,
            structured.context,
            structured.explanation,
            structured.hints,
            gb_id,
            site_link(gb_id),
            tuple(gaps),
        )

    def guard(
        self, reason: str, target: Target, own: bool, prefix: tuple[RawFrame, ...], code: tuple[str, str, int]
    ) -> Guard:
        """The check the newest compiled version failed, where torch says it was installed: the
        stack that follows it (2.12+), else the line its comment names (2.10+)."""
        # A trace keeps no code: the values Dynamo held across a break are not named.
        guard = reasons.held(reasons.parse(reason), {})
        _, _, stack = reason.partition("\nUser stack trace:\n")
        written = tuple(replace(f, path=self.relocate(f.path)) for f in frames_of(stack.split("\n")))
        if any(not self.holds(frame) for frame in written):
            return replace(guard, chain=())  # of another version of the source: where is unknown
        if written:
            raw = [(f.path, f.name, f.line, *self.guard_columns(f, guard.subject)) for f in written]
            return replace(guard, chain=collapse([*(prefix if not own else ()), *raw], self.mine))
        located = reasons.where(reason)
        paths = sorted(path for path in {target.path, code[0]} if located and path.endswith(located[0]))
        if located is not None and paths:
            return replace(guard, chain=(Frame(paths[0], base_name(located[2]), located[1]),))
        return guard

    def guard_columns(self, frame: Written, subject: str) -> columns.Columns:
        """Where on its line a guard was installed: torch 2.13+ says (gbls's own analysis of the
        same run shows it), but not in the trace's text: the operation that reads what it checks."""
        if not self.guard_positions or not self.mine(frame.path):
            return columns.NONE
        return columns.of_use(self.text_of(frame.path) or "", frame.line, subject)


def _raw(frame: Frame) -> RawFrame:
    return (frame.path, frame.function, frame.line, frame.column, frame.end_column)
