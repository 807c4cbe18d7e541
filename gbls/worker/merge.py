"""Fold the capture's event stream into one result: one break per root cause, with counts.

Dynamo reports the same root cause several times: once in the compiled frame (with the whole
inline chain), again when the eager call re-enters each callee as a frame of its own, again in
resume functions, and again after a restart of the analysis or a recompile. Events carry the
chain already prefixed with the eager call chain, so identical chains are one root cause; a
chain that is a suffix of a longer one (a re-entered callee whose caller could not be seen) is
merged into the longer one. ``count`` is the number of compilations of the function itself that
hit the break; when only re-entered callees saw it, those of the outermost one.
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Set, Tuple

from .events import (
    BreakEvent,
    CallEvent,
    DiscardEvent,
    Event,
    GraphEvent,
    ReachEvent,
    StaticEvent,
    TargetEvent,
    VerdictEvent,
)
from .protocol import EAGER, SPLIT, Break, Code, Frame, Function, Graph

Chain = Tuple[Frame, ...]
GroupKey = Tuple[int, str, Chain]


class _Group:
    def __init__(self, event: BreakEvent) -> None:
        self.target = event.target
        self.messages = event.messages
        self.chain = event.chain
        self.called_at = event.called_at
        self.skipped = False
        self.direct: Set[str] = set()
        self.reentries: Set[str] = set()

    @property
    def gb_type(self) -> str:
        return self.messages[0].gb_type

    def add(self, event: BreakEvent) -> None:
        self.skipped = self.skipped or event.skipped
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

    def absorb(self, other: "_Group") -> None:
        self.called_at = self.called_at or other.called_at
        self.skipped = self.skipped or other.skipped
        self.direct |= other.direct
        self.reentries |= other.reentries


def live_events(events: Iterable[Event]) -> List[Event]:
    """The events minus those of input attempts the analysis discarded."""
    events = list(events)
    discarded = {event.attempt for event in events if isinstance(event, DiscardEvent)}
    return [event for event in events if isinstance(event, DiscardEvent) or event.attempt not in discarded]


def merge(
    events: Iterable[Event], path: str
) -> Tuple[Tuple[Function, ...], Tuple[Break, ...], Tuple[Graph, ...]]:
    events = live_events(events)
    targets = {
        event.target: event
        for event in events
        if isinstance(event, TargetEvent)
        and path in (event.path, event.call_path)
        and not event.reused  # the server keeps its last results
    }
    names = {number: target.qualname for number, target in targets.items()}
    functions = _functions(events, targets, path)
    breaks = _breaks(
        [e for e in events if isinstance(e, BreakEvent) and e.target in targets and e.chain and e.messages],
        names,
    )
    graphs = tuple(
        Graph(function=names[event.target], frame=event.frame, ops=event.ops, first_line=event.first_line)
        for event in events
        if isinstance(event, GraphEvent) and event.target in targets
    )
    return functions, breaks, graphs


def _functions(events: List[Event], targets: Dict[int, TargetEvent], path: str) -> Tuple[Function, ...]:
    calls: Dict[int, CallEvent] = {}
    verdicts: Dict[int, VerdictEvent] = {}
    reached: Dict[int, List[Code]] = {}
    for event in events:
        if isinstance(event, CallEvent):
            calls.setdefault(event.target, event)
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
    for number, target in targets.items():
        call = calls.get(number)
        verdict = verdicts.get(number)
        reason = verdict.reason if verdict else ""
        if call is None and not reason:
            reason = "torch.compile never ran it during the analysis"
        functions.append(
            Function(
                name=target.name,
                qualname=target.qualname,
                path=target.path,
                line=target.line,
                kind=target.kind,
                analysed=call is not None,
                reason="" if call is not None else reason,
                inputs=call.inputs if call else "",
                input_source=call.source if call else "",
                fullgraph=target.fullgraph,
                reached=tuple(reached.get(number, ())),
                site=target.site,
                call_line=target.call_line if target.call_path == path else 0,
            )
        )
    return tuple(functions)


def _breaks(events: List[BreakEvent], names: Dict[int, str]) -> Tuple[Break, ...]:
    groups: Dict[GroupKey, _Group] = {}
    for event in events:
        key = (event.target, event.messages[0].gb_type, event.chain)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(event)
        group.add(event)

    # Longest chains first: each kept group files every suffix of its chain, so a shorter group
    # finds the longest chain extending it in one look-up (linear in the total chain length).
    kept: List[_Group] = []
    by_suffix: Dict[GroupKey, _Group] = {}
    for group in sorted(groups.values(), key=lambda g: -len(g.chain)):
        longer = by_suffix.get((group.target, group.gb_type, group.chain))
        if longer is not None and longer is not group and len(longer.chain) > len(group.chain):
            longer.absorb(group)
            continue
        kept.append(group)
        for start in range(1, len(group.chain)):
            by_suffix.setdefault((group.target, group.gb_type, group.chain[start:]), group)

    breaks = []
    for group in kept:
        root = group.messages[0]
        eager_reason = ""
        if group.skipped and len(group.messages) > 1:
            outer = group.messages[-1]
            eager_reason = f"{outer.gb_type}: {outer.explanation}"
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
                effect=EAGER if group.skipped else SPLIT,
                eager_reason=eager_reason,
                called_at=group.called_at,
            )
        )
    breaks.sort(key=lambda b: (b.function, b.chain[0].line, b.chain[0].column or 0, b.gb_type))
    return tuple(breaks)
