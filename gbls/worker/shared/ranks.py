"""The events of the program's own processes (spawned ranks, ``subprocess`` running the same
interpreter) folded into the analysis's: one function per compile site, whichever processes compiled
it, each break with the process it happened in. Standard library only, as the merge."""

from __future__ import annotations

from dataclasses import replace

from .events import BreakEvent, Event, FrameEvent, GraphEvent, InlinedEvent, TargetEvent

MAIN = "main process"


def fold_processes(events: list[Event]) -> tuple[list[Event], dict[int, tuple[str, ...]]]:
    """One function per compile site across the program's processes: each rank of a spawned group
    compiles its own, a target of its own, which is folded into the first target of the same code
    compiled at the same place. Each break keeps the process it happened in; each folded target, the
    processes that compiled it (only where other processes than the analysed one did). Ranks that
    compile alike are one function's compilations, not several: a compilation (or recompilation) is
    counted once however many processes made it, and a graph as often as the process that made it
    most often (each process numbers its own compilations: "0/1" is the same step in each)."""
    first: dict[tuple[str, str, int, str, int], int] = {}
    into: dict[int, int] = {}
    process: dict[int, str] = {}
    for event in events:
        if isinstance(event, TargetEvent):
            process[event.target] = event.process
            key = (event.qualname, event.path, event.line, event.call_path, event.call_line)
            if event.process and key in first:  # the analysed process's own targets stay apart
                into[event.target] = first[key]
            else:
                first.setdefault(key, event.target)
    if not any(process.values()):
        return events, {}
    compiled_in: dict[int, list[str]] = {}
    for number, label in process.items():
        compiled_in.setdefault(into.get(number, number), []).append(label or MAIN)
    named = {number: tuple(sorted(set(labels), key=in_order)) for number, labels in compiled_in.items()}
    shown = {number: labels for number, labels in named.items() if labels != (MAIN,)}
    folded: list[Event] = []
    compilations: set[tuple[object, ...]] = set()
    graphs: dict[tuple[object, ...], int] = {}  # each graph's most copies in one process
    made: dict[tuple[object, ...], int] = {}  # each graph's copies in each process
    for event in events:
        target = getattr(event, "target", None)
        if isinstance(event, TargetEvent) and event.target in into:
            continue  # its first target stands for it
        if isinstance(event, FrameEvent):
            compilation = (
                into.get(event.target, event.target),
                event.compile_id,
                event.frame,
                event.recompile,
            )
            if compilation in compilations:
                continue  # another process made this compilation too
            compilations.add(compilation)
        if isinstance(event, GraphEvent):
            graph = (into.get(event.target, event.target), event.frame, event.ops, event.first_line)
            copies = (*graph, event.target)
            mine = made[copies] = made.get(copies, 0) + 1
            if mine <= graphs.get(graph, 0):
                continue  # another process made this graph as often already
            graphs[graph] = mine
        if isinstance(target, int):
            if isinstance(event, BreakEvent) and into.get(target, target) in shown:
                event = replace(event, process=process.get(target, "") or MAIN)
            if target in into:
                event = replace(event, target=into[target])  # type: ignore[call-arg]
        if isinstance(event, InlinedEvent) and event.into in into:
            event = replace(event, into=into[event.into])
        folded.append(event)
    return folded, shown


def in_order(label: str) -> tuple[str, int]:
    """ "rank 2" before "rank 10"."""
    name, _, number = label.rpartition(" ")
    return (name, int(number)) if number.isdigit() else (label, 0)
