"""Fold the capture's event stream into one result: one break per root cause, with counts.

Dynamo reports the same root cause several times: once in the compiled frame (with the whole
inline chain), again when the eager call re-enters each callee as a frame of its own, again in
resume functions, and again after a restart of the analysis or a recompile. Events carry the
chain already prefixed with the eager call chain, so identical chains are one root cause; a
chain that is a suffix of a longer one (a re-entered callee whose caller could not be seen) is
merged into the longer one, and so is a chain that differs from another only by wrapper frames
between the same split and the same cause; chains that still differ but end at the same cause are
one break, the shortest its chain and the others its paths. ``count`` is the number of
compilations of the function itself that hit the break; when only re-entered callees saw it,
those of the outermost one.

Whether a break splits the function's graph or makes Dynamo give up on the function's frame is
read from Dynamo's own record of the frames it translated for the break's compilations
(``FrameEvent``): a frame of the function itself that got no code runs eagerly (all of it, or
the rest after a resume point). When Dynamo gave up while handling a break (a reconstruction
failure), that second break is the reason for the first one's effect, not a root cause of its own.

The same records say which translations were recompilations, each kept as Dynamo decided it, in
order. One that failed against a compiled version only a discarded input attempt made is gbls's
doing, not the module's: it counts as the first compilation.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import replace

from .events import (
    BreakEvent,
    CallEvent,
    CostEvent,
    DiscardEvent,
    ElidedEvent,
    Event,
    FrameEvent,
    GraphEvent,
    InlinedEvent,
    ReachEvent,
    ShapeEvent,
    SiteEvent,
    StanceEvent,
    StaticEvent,
    TargetEvent,
    VerdictEvent,
)
from .protocol import (
    EAGER,
    OK,
    SPLIT,
    Break,
    Code,
    Compiled,
    Cost,
    Effect,
    Elided,
    Frame,
    Function,
    Graph,
    Recompile,
    Request,
    Result,
    Shape,
    Stance,
)
from .ranks import fold_processes, in_order
from .workspace import in_workspace, roots_of

Chain = tuple[Frame, ...]
LOOP_BREAK = "graph break in loop"
GroupKey = tuple[int, str, Chain]


class _Group:
    def __init__(self, event: BreakEvent) -> None:
        self.target = event.target
        self.messages = event.messages
        self.chain = event.chain
        self.called_at = event.called_at
        self.split = event.split  # the frame of the chain whose graph splits
        self.nested = event.nested
        self.raises = event.raises
        self.skipped = False  # Dynamo gave up on the target's own frame while handling it
        self.reason = ""  # what Dynamo's log said it then did
        self.direct: set[str] = set()
        self.reentries: set[str] = set()
        self.paths: list[Chain] = []  # other chains to the same root cause
        self.processes: set[str] = set()  # the program's processes it happened in

    @property
    def gb_type(self) -> str:
        return self.messages[0].gb_type

    def add(self, event: BreakEvent) -> None:
        self.raises = self.raises or event.raises
        self.processes.add(event.process)
        if event.direct:
            self.split = event.split  # where the function's own graph splits, not a re-entered callee's
            self.nested = event.nested
            self.skipped = self.skipped or event.skipped
            self.reason = self.reason or (event.reason if event.skipped else "")
        (self.direct if event.direct else self.reentries).add(event.compile_id)

    @property
    def count(self) -> int:
        """Compilations of the function itself that hit it; else of the first frame that did.

        A break deep in a library is hit again in every callee Dynamo re-enters on the way down
        (the model's ``forward``, then the helper it called, then the helper's helper): one root
        cause, counted once per compilation of the outermost frame that reached it, as torch logs it.
        """
        if self.direct:
            return len(self.direct)
        frames = {compile_id.split("/")[0] for compile_id in self.reentries}
        first = min(frames, key=lambda frame: int(frame) if frame.isdigit() else 0, default="")
        return len({c for c in self.reentries if c.split("/")[0] == first}) or 1

    def absorb(self, other: _Group) -> None:
        self.called_at = self.called_at or other.called_at
        self.raises = self.raises or other.raises
        self.skipped = self.skipped or other.skipped
        self.reason = self.reason or other.reason
        self.direct |= other.direct
        self.reentries |= other.reentries
        self.paths += other.paths
        self.processes |= other.processes

    @property
    def compiles(self) -> set[str]:
        return self.direct | self.reentries

    def wraps(self, other: _Group) -> bool:
        """Whether ``other`` is this break reached through fewer wrapper frames between the same ends."""
        if (self.target, self.gb_type) != (other.target, other.gb_type) or len(other.chain) >= len(
            self.chain
        ):
            return False
        if (self.chain[0], self.chain[-1]) != (other.chain[0], other.chain[-1]):
            return False
        frames = iter(self.chain)
        return all(frame in frames for frame in other.chain)

    def reenters(self, other: _Group) -> bool:
        """Whether ``other`` is this break as only a re-entered callee of the same function saw it."""
        return (
            not other.direct
            and bool(self.direct)
            and (self.target, self.gb_type, self.chain[-1]) == (other.target, other.gb_type, other.chain[-1])
            and self.chain[0].function == other.chain[0].function
        )


def discarded_attempts(events: list[Event]) -> set[int]:
    return {event.attempt for event in events if isinstance(event, DiscardEvent)}


def live_events(events: Iterable[Event]) -> list[Event]:
    """The events minus those of input attempts the analysis discarded."""
    events = list(events)
    discarded = discarded_attempts(events)
    return [event for event in events if isinstance(event, DiscardEvent) or event.attempt not in discarded]


def merge(events: Iterable[Event], request: Request, cut: bool = False) -> Result:
    """The result of the analysis's compiled functions: those of the workspace (whether they ran or
    not) and every other one the program called (a library's own ``@torch.compile``), with their
    breaks, graphs and recompilations; ``cut``: the budget ended while the program ran (what never
    ran may be what it did not reach). How the analysis ended is the caller's to add."""
    path = request.path
    roots = roots_of(request)
    every = list(events)
    discarded = discarded_attempts(every)
    # Compiled versions that only a discarded attempt made: the module's own calls never saw them.
    unseen = {
        e.compile_id for e in every if isinstance(e, FrameEvent) and e.attempt in discarded and e.compile_id
    }
    events, processes = fold_processes(live_events(every))
    called = {event.target for event in events if isinstance(event, CallEvent)}
    targets = {
        event.target: event
        for event in events
        if isinstance(event, TargetEvent)
        and (
            event.target in called
            or path in (event.path, event.call_path)
            or in_workspace(event.path, roots)
            or in_workspace(event.call_path, roots)
        )
        and not event.reused  # the server keeps its last results
    }
    names = {number: target.qualname for number, target in targets.items()}
    frames = [e for e in events if isinstance(e, FrameEvent) and e.target in targets]
    compilations = [
        replace(e, recompile=False, guard=None) if e.guard is not None and e.guard.failed in unseen else e
        for e in frames
        if e.compile_id
    ]
    functions = _functions(events, targets, compilations, processes, cut)
    breaks = _breaks(
        [e for e in events if isinstance(e, BreakEvent) and e.target in targets and e.chain and e.messages],
        frames,
        names,
        {number for number, target in targets.items() if target.fullgraph},
    )
    graphs = tuple(
        Graph(
            function=names[event.target],
            frame=event.frame,
            ops=event.ops,
            first_line=event.first_line,
            compile_id=event.compile_id,
        )
        for event in events
        if isinstance(event, GraphEvent) and event.target in targets
    )
    elided = tuple(
        Elided(function=names[e.target], frame=e.frame, compile_id=e.compile_id, work=e.work)
        for e in events
        if isinstance(e, ElidedEvent) and e.target in targets
    )
    return Result(
        path=path,
        status=OK,
        functions=functions,
        breaks=breaks,
        graphs=graphs,
        recompiles=_recompiles(compilations, targets),
        elided=elided,
        costs=_costs(events, names, graphs),
        shapes=tuple(
            dict.fromkeys(
                Shape(
                    function=names[e.target],
                    compile_id=e.compile_id,
                    decision=e.decision,
                    subject=e.subject,
                    dim=e.dim,
                    value=e.value,
                    reason=e.reason,
                    rank=e.rank,
                    chain=e.chain,
                )
                for e in events
                if isinstance(e, ShapeEvent) and e.target in targets
            )
        ),
        # ``set_stance(...)`` sets the stance, and its ``with`` sets it again on entry: once each.
        stances=tuple(
            dict.fromkeys(
                Stance(e.stance, e.path, e.line) for e in events if isinstance(e, StanceEvent) and e.path
            )
        ),
    )


def _costs(events: list[Event], names: dict[int, str], graphs: tuple[Graph, ...]) -> tuple[Cost, ...]:
    """What each compilation cost, once per compile id of a function (each of the program's processes
    numbers its own: they compile alike), with the graphs it made."""
    made: dict[tuple[str, str], int] = {}
    for graph in graphs:
        key = (graph.function, graph.compile_id)
        made[key] = made.get(key, 0) + 1
    found: dict[tuple[str, str], Cost] = {}
    for e in events:
        if not isinstance(e, CostEvent) or e.target not in names:
            continue
        function = names[e.target]
        found.setdefault(
            (function, e.compile_id),
            Cost(
                function=function,
                frame=e.frame,
                compile_id=e.compile_id,
                own=e.own,
                resumes_at=e.resumes_at,
                seconds=e.seconds,
                backend_seconds=e.backend_seconds,
                guards=e.guards,
                shape_guards=e.shape_guards,
                graphs=made.get((function, e.compile_id), 0),
                ops=e.ops,
                restarts=e.restarts,
                restart_seconds=e.restart_seconds,
            ),
        )
    return tuple(sorted(found.values(), key=lambda c: (c.function, _compile_order(c.compile_id))))


def _recompiles(compilations: list[FrameEvent], targets: dict[int, TargetEvent]) -> tuple[Recompile, ...]:
    """Each recompilation; a frame of the function's own (a resume function too) is the function's code."""
    found = []
    for e in compilations:
        if not e.recompile:
            continue
        target = targets[e.target]
        found.append(
            Recompile(
                function=target.qualname,
                frame=Code(target.path, target.line, e.frame) if e.own else Code(e.path, e.line, e.frame),
                direct=e.own,
                compile_id=e.compile_id,
                guard=e.guard,
                dynamic=e.dynamic,
                limit=e.limit,
                limit_value=e.limit_value,
                resumes_at=e.resumes_at,
                # Under fullgraph=True a recompile limit raises FailOnRecompileLimitHit: no eager fallback.
                raises=e.raises or ("fullgraph" if e.limit and target.fullgraph else ""),
                called_at=e.called_at,
            )
        )
    return tuple(found)


def _functions(
    events: list[Event],
    targets: dict[int, TargetEvent],
    compilations: list[FrameEvent],
    processes: dict[int, tuple[str, ...]],
    cut: bool,
) -> tuple[Function, ...]:
    calls: dict[int, CallEvent] = {}
    verdicts: dict[int, VerdictEvent] = {}
    reached: dict[int, list[Code]] = {}
    inlined: dict[int, str] = {}  # target → the function whose graph traced it inline
    for event in events:
        if isinstance(event, CallEvent):
            calls.setdefault(event.target, event)
        elif isinstance(event, InlinedEvent) and event.into in targets:
            inlined.setdefault(event.target, targets[event.into].qualname)
        elif isinstance(event, VerdictEvent):
            verdicts[event.target] = event
        elif isinstance(event, ReachEvent):
            reached.setdefault(event.target, []).append(Code(*event.code))
    functions = [
        Function(
            name=event.qualname.rsplit(".", 1)[-1],
            qualname=event.qualname,
            path=event.path,
            line=event.line,
            kind=event.kind,
            reason=event.reason,
            site=event.site,
        )
        for event in events
        if isinstance(event, StaticEvent)
    ]
    aliases: dict[int, list[str]] = {}
    for event in events:
        if isinstance(event, SiteEvent):
            aliases.setdefault(event.target, []).append(event.site)
    frames = _frames(compilations, targets)
    for number, target in targets.items():
        call = calls.get(number)
        verdict = verdicts.get(number)
        reason = verdict.reason if verdict else ""
        inside = inlined.get(number, "") if call is None else ""  # its own call says more, if it had one
        if call is None and not reason and not inside:
            reason = (
                "the program was cut at the end of its budget, before it ran it"  # it may come next
                if cut
                else "torch.compile never ran it during the analysis"
            )
            if target.generator and sys.version_info < (3, 11):  # CPython 3.10 skips them, any torch
                reason += "; Python 3.10 never hands a generator function's frames to Dynamo: it runs eagerly"
        function = Function(
            name=target.name,
            qualname=target.qualname,
            path=target.path,
            line=target.line,
            kind=target.kind,
            analysed=call is not None or bool(inside),
            reason="" if call is not None or inside else reason,
            inputs=call.inputs if call else "",
            input_source=call.source if call else "",
            fullgraph=target.fullgraph,
            reached=tuple(reached.get(number, ())),
            site=target.site,
            call_line=target.call_line,
            call_path=target.call_path,
            called_at=call.called_at if call else None,
            compilations=sum(frame.compilations for frame in frames.get(number, ()) if frame.own),
            inlined=inside,
            processes=processes.get(number, ()),
            frames=frames.get(number, ()),
        )
        # Every compile site of one compiled function (compiled twice: one code, one cache) is it.
        functions += [function] + [replace(function, site=site) for site in aliases.get(number, [])]
    return tuple(functions)


def _frames(
    compilations: list[FrameEvent], targets: dict[int, TargetEvent]
) -> dict[int, tuple[Compiled, ...]]:
    """Each target's frames as torch counts them, each with its compile ids: its own code, each of its
    resume frames (by the break it resumes after), then each callee it re-entered, in order of
    their first compilation."""
    # A resume frame's code starts at its break: its function is where its function's own frame is.
    starts = {(e.path, e.frame): e.line for e in compilations if e.resumes_at is None}
    found: dict[int, dict[tuple[bool, str, str, int | None], list[FrameEvent]]] = {}
    for event in compilations:
        key = (event.own, event.path, event.frame, event.resumes_at)
        found.setdefault(event.target, {}).setdefault(key, []).append(event)
    frames: dict[int, tuple[Compiled, ...]] = {}
    for number, by_frame in found.items():
        target = targets[number]
        listed = [
            Compiled(
                frame=frame,
                path=target.path if own else path,
                line=target.line if own else starts.get((path, frame), events[0].line),
                resumes_at=resumes_at,
                own=own,
                compile_ids=tuple(e.compile_id for e in events),
                refused=sum(1 for e in events if e.limit),
            )
            for (own, path, frame, resumes_at), events in by_frame.items()
        ]
        order = {
            c: (not c.own, (c.resumes_at or 0) if c.own else 0, _compile_order(c.compile_ids[0]))
            for c in listed
        }
        frames[number] = tuple(sorted(listed, key=order.__getitem__))
    return frames


def _breaks(
    events: list[BreakEvent], frames: list[FrameEvent], names: dict[int, str], fullgraph: set[int]
) -> tuple[Break, ...]:
    """The root causes; every break of a target compiled with ``fullgraph=True`` raises."""
    groups: dict[GroupKey, _Group] = {}
    for event in events:
        if not (event.logged or event.direct):
            continue  # a callee's frame Dynamo declined (a generator run eagerly): not a graph break
        key = (event.target, event.messages[0].gb_type, event.chain)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(event)
        group.add(event)

    # Longest chains first: each kept group files every suffix of its chain, so a shorter group
    # finds the longest chain extending it in one look-up (linear in the total chain length).
    kept: list[_Group] = []
    by_suffix: dict[GroupKey, _Group] = {}
    for group in sorted(groups.values(), key=lambda g: -len(g.chain)):
        longer = by_suffix.get((group.target, group.gb_type, group.chain))
        if longer is not None and longer is not group and len(longer.chain) > len(group.chain):
            longer.absorb(group)
            continue
        kept.append(group)
        for start in range(1, len(group.chain)):
            by_suffix.setdefault((group.target, group.gb_type, group.chain[start:]), group)
    kept = _by_root(_without_loop_drops(_without_wrappers(kept)))

    outcomes = {(frame.target, frame.compile_id): frame for frame in frames if frame.own}
    effects = {id(group): _effect(group, outcomes) for group in kept}
    failures = {id(group): _failure(group, outcomes) for group in kept}
    reasons: dict[int, str] = {}
    for group in list(kept):
        cause = _caused_by(group, kept, effects)
        if cause is not None:  # Dynamo gave up while handling ``cause``: this is why, not a break of its own
            kept.remove(group)
            reasons[id(cause)] = f"{group.gb_type}: {group.messages[0].explanation}"

    breaks = []
    for group in kept:
        root = group.messages[0]
        effect, eager_from = effects[id(group)]
        eager_reason = reasons.get(id(group), "")
        if effect == EAGER and not eager_reason and len(group.messages) > 1:
            outer = group.messages[-1]
            eager_reason = f"{outer.gb_type}: {outer.explanation}"
        if effect == EAGER and not eager_reason:
            eager_reason = group.reason or failures[id(group)]
        breaks.append(
            Break(
                function=names[group.target],
                gb_type=root.gb_type,
                gb_id=root.gb_id,
                url=root.url,
                explanation=root.explanation,
                hints=root.hints,
                context=root.context,
                chain=group.chain,
                count=group.count,
                effect=effect,
                eager_reason=eager_reason,
                eager_from=eager_from,
                gaps=root.gaps,
                called_at=group.called_at,
                split=group.split,
                nested=group.nested,
                raises="fullgraph" if group.target in fullgraph else group.raises,
                classes=root.classes,
                paths=tuple(group.paths),
                processes=tuple(sorted(group.processes - {""}, key=in_order)),
                compile_ids=tuple(sorted((c for c in group.compiles if c), key=_compile_order)),
            )
        )
    breaks = _one_per_root(breaks)
    breaks.sort(key=lambda b: (b.function, b.chain[0].line, b.chain[0].column or 0, b.gb_type))
    return tuple(breaks)


def _one_per_root(breaks: list[Break]) -> list[Break]:
    """One break per root cause, whichever compiled functions reached it (a disabled call in a helper
    that two of them call): the costliest function's (of those alike, the outermost's: the longest
    chain), its count that function's, with the others' functions, chains and compilations beside it."""
    by_root: dict[tuple[str, Frame], list[Break]] = {}
    for brk in breaks:
        by_root.setdefault((brk.gb_type, brk.chain[-1]), []).append(brk)
    merged = []
    for same in by_root.values():
        first, *others = sorted(same, key=lambda b: (_cost(b), -len(b.chain), b.function))
        merged.append(
            replace(
                first,
                functions=tuple(dict.fromkeys(b.function for b in (first, *others))),
                raises=first.raises or next((b.raises for b in others if b.raises), ""),
                paths=first.paths + tuple(path for b in others for path in (b.chain, *b.paths)),
                processes=tuple(sorted({p for b in same for p in b.processes}, key=in_order)),
                compile_ids=tuple(sorted({c for b in same for c in b.compile_ids}, key=_compile_order)),
            )
        )
    return merged


def _cost(brk: Break) -> int:
    """0 for a break whose function's frame runs entirely in eager mode, 1 after a line, 2 a split."""
    return 2 if brk.effect != EAGER else 1 if brk.eager_from is not None else 0


def _compile_order(compile_id: str) -> tuple[int, ...]:
    """``10/2`` after ``9/3``: compile ids by their numbers."""
    return tuple(int(part) if part.isdigit() else 0 for part in compile_id.split("/"))


def _without_wrappers(groups: list[_Group]) -> list[_Group]:
    """Each break reached through extra wrapper frames merged into the one with the most frames; a
    callee's break seen only when the callee was re-entered, into the function's own break with the
    same root frame (Dynamo's generated code may name the line of an inlined caller: torch 2.10)."""
    kept: list[_Group] = []
    # Both merges need the same function, type and root frame: only those are compared (40,000
    # distinct chains stay linear).
    alike: dict[tuple[int, str, Frame], list[_Group]] = {}
    for group in sorted(groups, key=lambda g: -len(g.chain)):
        peers = alike.setdefault((group.target, group.gb_type, group.chain[-1]), [])
        wider = next((other for other in peers if other.wraps(group) or other.reenters(group)), None)
        if wider is not None:
            wider.absorb(group)
        else:
            kept.append(group)
            peers.append(group)
    return kept


def _without_loop_drops(groups: list[_Group]) -> list[_Group]:
    """Without the break a caller logs when Dynamo drops a callee's frame for a break in its loop
    (before torch 2.11): the callee's break, below it in the same compilation, is its root cause."""
    return [
        group
        for group in groups
        if group.gb_type != LOOP_BREAK
        or not any(
            len(other.chain) > len(group.chain)
            and other.chain[: len(group.chain)] == group.chain
            and other.compiles & group.compiles
            for other in groups
        )
    ]


def _by_root(groups: list[_Group]) -> list[_Group]:
    """One break per root cause: a chain to the same cause as a shorter one (a library function reached
    through two of its callers, or from two lines of the compiled function) is a path of that break."""
    kept: dict[tuple[int, str, Frame], _Group] = {}
    for group in sorted(groups, key=lambda g: len(g.chain)):  # stable: the first seen among equals
        first = kept.setdefault((group.target, group.gb_type, group.chain[-1]), group)
        if first is not group:
            first.absorb(group)
            first.paths.append(group.chain)
    return list(kept.values())


def _effect(group: _Group, outcomes: dict[tuple[int, str], FrameEvent]) -> tuple[Effect, int | None]:
    """What Dynamo did to the target's own frame in the compilations that hit the break."""
    recorded = [
        outcomes[(group.target, compile_id)]
        for compile_id in group.direct
        if (group.target, compile_id) in outcomes
    ]
    if not recorded:  # no record of those frames (a frame refused before translation): the break says
        return (EAGER, None) if group.skipped else (SPLIT, None)
    eager = [frame for frame in recorded if not frame.guarded]
    if not eager:
        return SPLIT, None
    if any(frame.resumes_at is None for frame in eager):
        return EAGER, None
    return EAGER, min(frame.resumes_at for frame in eager if frame.resumes_at is not None)


def _failure(group: _Group, outcomes: dict[tuple[int, str], FrameEvent]) -> str:
    """Why Dynamo gave up on the target's own frame in a compilation that hit the break, if it said."""
    for compile_id in sorted(group.direct):
        frame = outcomes.get((group.target, compile_id))
        if frame is not None and not frame.guarded and frame.failure:
            return frame.failure
    return ""


def _caused_by(
    group: _Group, groups: list[_Group], effects: dict[int, tuple[Effect, int | None]]
) -> _Group | None:
    """The break Dynamo was handling when it gave up with ``group``'s, at the same place and compile."""
    if not group.skipped or effects[id(group)][0] != EAGER:
        return None
    for other in groups:
        if (
            other is not group
            and not other.skipped
            and (other.target, other.chain) == (group.target, group.chain)
            and other.direct & group.direct
        ):
            return other
    return None
