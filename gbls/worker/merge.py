"""Fold the capture's event stream into one result: one break per root cause, with counts.

Dynamo reports the same root cause several times: once in the compiled frame (with the whole
inline chain), again when the eager call re-enters each callee as a frame of its own, again in
resume functions, and again after a restart of the analysis or a recompile. Events carry the
chain already prefixed with the eager call chain, so identical chains are one root cause; a
chain that is a suffix of a longer one (a re-entered callee whose caller could not be seen) is
merged into the longer one. ``count`` is the number of compilations of the function itself that
hit the break; re-entries only count when nothing else saw it.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Set, Tuple

from .protocol import EAGER, SPLIT, Break, Code, Frame, Function, Graph

ChainKey = Tuple[Tuple[Any, ...], ...]


class _Group:
    def __init__(self, event: Dict[str, Any], chain: ChainKey) -> None:
        self.target = event["target"]
        self.messages = event["messages"]
        self.chain = chain
        self.skipped = False
        self.direct: Set[str] = set()
        self.reentries: Set[str] = set()

    def add(self, event: Dict[str, Any]) -> None:
        self.skipped = self.skipped or bool(event["skipped"])
        (self.direct if event["direct"] else self.reentries).add(event["compile_id"])

    def absorb(self, other: "_Group") -> None:
        self.skipped = self.skipped or other.skipped
        self.direct |= other.direct
        self.reentries |= other.reentries

    @property
    def gb_type(self) -> str:
        return str(self.messages[0]["gb_type"])

    def is_extended_by(self, longer: "_Group") -> bool:
        return (
            longer.target == self.target
            and longer.gb_type == self.gb_type
            and len(longer.chain) > len(self.chain)
            and longer.chain[-len(self.chain) :] == self.chain
        )


def live_events(events: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The events minus those of input attempts the analysis discarded."""
    events = list(events)
    discarded = {event["attempt"] for event in events if event["event"] == "discard"}
    return [event for event in events if event.get("attempt") not in discarded]


def merge(
    events: Iterable[Dict[str, Any]], path: str
) -> Tuple[Tuple[Function, ...], Tuple[Break, ...], Tuple[Graph, ...]]:
    events = live_events(events)
    targets = {
        event["target"]: event
        for event in events
        if event["event"] == "target"
        and path in (event["path"], event["call_path"])
        and not event.get("reused")  # the server keeps its last results
    }
    names = {number: target["qualname"] for number, target in targets.items()}
    functions = _functions(events, targets)
    breaks = _breaks([e for e in events if e["event"] == "break" and e["target"] in targets], names)
    graphs = tuple(
        Graph(
            function=names[event["target"]],
            frame=event["frame"],
            ops=event["ops"],
            first_line=event["first_line"],
            last_line=event["last_line"],
        )
        for event in events
        if event["event"] == "graph" and event["target"] in targets
    )
    return functions, breaks, graphs


def _functions(events: List[Dict[str, Any]], targets: Dict[int, Dict[str, Any]]) -> Tuple[Function, ...]:
    calls: Dict[int, Dict[str, Any]] = {}
    verdicts: Dict[int, Dict[str, Any]] = {}
    reached: Dict[int, List[Code]] = {}
    for event in events:
        if event["event"] == "call":
            calls.setdefault(event["target"], event)
        elif event["event"] == "verdict":
            verdicts[event["target"]] = event
        elif event["event"] == "reach":
            reached.setdefault(event["target"], []).append(Code(*event["code"]))
    functions = [
        Function(
            name=event["qualname"].rsplit(".", 1)[-1],
            qualname=event["qualname"],
            path=event["path"],
            line=event["line"],
            kind=event["kind"],
            reason=event["reason"],
        )
        for event in events
        if event["event"] == "static"
    ]
    for number, target in targets.items():
        call = calls.get(number)
        verdict = verdicts.get(number, {})
        reason = verdict.get("reason", "")
        if call is None and not reason:
            reason = "torch.compile never ran it during the analysis"
        functions.append(
            Function(
                name=target["name"],
                qualname=target["qualname"],
                path=target["path"],
                line=target["line"],
                kind=target["kind"],
                analysed=call is not None,
                reason="" if call is not None else reason,
                inputs=call["inputs"] if call else "",
                input_source=call["source"] if call else "",
                fullgraph=target["fullgraph"],
                reached=tuple(reached.get(number, ())),
            )
        )
    return tuple(functions)


def _breaks(events: List[Dict[str, Any]], names: Dict[int, str]) -> Tuple[Break, ...]:
    groups: Dict[Tuple[Any, ...], _Group] = {}
    for event in events:
        chain: ChainKey = tuple(tuple(frame) for frame in event["chain"])
        key = (event["target"], event["messages"][0]["gb_type"], chain)
        group = groups.get(key)
        if group is None:
            group = groups[key] = _Group(event, chain)
        group.add(event)

    kept: List[_Group] = []
    for group in sorted(groups.values(), key=lambda g: -len(g.chain)):
        longer = next((k for k in kept if group.is_extended_by(k)), None)
        if longer is not None:
            longer.absorb(group)
        else:
            kept.append(group)

    breaks = []
    for group in kept:
        root = group.messages[0]
        eager_reason = ""
        if group.skipped and len(group.messages) > 1:
            outer = group.messages[-1]
            eager_reason = f"{outer['gb_type']}: {outer['explanation']}"
        breaks.append(
            Break(
                function=names[group.target],
                gb_type=root["gb_type"],
                gb_id=root["gb_id"],
                url=root["url"],
                explanation=root["explanation"],
                hints=tuple(root["hints"]),
                context=root["context"],
                chain=tuple(Frame(*frame) for frame in group.chain),
                count=len(group.direct) or len(group.reentries) or 1,
                effect=EAGER if group.skipped else SPLIT,
                eager_reason=eager_reason,
            )
        )
    breaks.sort(key=lambda b: (b.function, b.chain[0].line, b.chain[0].column or 0, b.gb_type))
    return tuple(breaks)
