"""How the worker folds a child's events into one result, on events made by hand: root causes reached
on several paths, functions traced inline, the targets of the program's other processes, and what a
timeout kept from running. (What real programs produce is checked against torch's log elsewhere.)"""

from __future__ import annotations

from gbls.worker.shared.events import (
    BreakEvent,
    CallEvent,
    CostEvent,
    Event,
    FrameEvent,
    GraphEvent,
    InlinedEvent,
    ShapeEvent,
    StanceEvent,
    TargetEvent,
)
from gbls.worker.shared.merge import merge
from gbls.worker.shared.protocol import Frame, Guard, Message, Request

ANALYSED = Request(id="test", path="/w/f.py", source="", workspace="/w")
LIBRARY = "/venv/lib/python3.11/site-packages/lib/sched.py"


def target(number: int, qualname: str, process: str = "", line: int = 1) -> TargetEvent:
    return TargetEvent(
        target=number,
        name=qualname,
        qualname=qualname,
        path="/w/f.py",
        line=line,
        call_path="/w/f.py",
        call_line=line,
        process=process,
    )


def brk(number: int, compile_id: str, chain: list[Frame], direct: bool = True) -> BreakEvent:
    message = Message("Dynamic shape operator", "", "", (), "GB0036")
    return BreakEvent(
        target=number, compile_id=compile_id, direct=direct, messages=(message,), chain=tuple(chain)
    )


def test_a_root_cause_reached_on_two_paths_is_one_break_with_both() -> None:
    split = Frame("/w/f.py", "denoise", 16, 11, 40)
    cause = Frame(LIBRARY, "previous_timestep", 661, 20, 60)
    through_step = [split, Frame(LIBRARY, "step", 492, 18, 50), cause]
    through_variance = [
        split,
        Frame(LIBRARY, "step", 557, 28, 80),
        Frame(LIBRARY, "_get_variance", 379, 8, 40),
        cause,
    ]
    events: list[Event] = [
        target(0, "denoise"),
        CallEvent(target=0),
        brk(0, "0/0", through_step),
        brk(0, "9/0", through_variance, direct=False),
    ]
    (only,) = merge(events, ANALYSED).breaks
    assert list(only.chain) == through_step and only.paths == (tuple(through_variance),)
    assert only.count == 1


def test_a_target_traced_inline_in_another_is_analysed_as_part_of_it() -> None:
    events: list[Event] = [
        target(0, "Linear"),
        target(1, "step", line=9),
        CallEvent(target=1),
        InlinedEvent(target=0, into=1),
    ]
    linear, step = merge(events, ANALYSED).functions
    assert (linear.analysed, linear.inlined, linear.reason) == (True, "step", "")
    assert (step.analysed, step.inlined) == (True, "")


def test_the_ranks_targets_are_one_function_and_their_breaks_one_break() -> None:
    chain = [Frame("/w/f.py", "forward", 20, 8, 30)]
    events: list[Event] = [
        target(0, "main_only", line=30),
        CallEvent(target=0),
        brk(0, "0/0", [Frame("/w/f.py", "main_only", 31, 4, 9)]),
        *(
            event
            for rank, number in ((0, 1 << 40), (1, 2 << 40))
            for event in (
                target(number, "Net", process=f"rank {rank}", line=18),
                CallEvent(target=number),
                brk(number, "0/0", chain),
            )
        ),
    ]
    found = merge(events, ANALYSED)
    main_only, net = found.functions
    assert (main_only.processes, net.processes) == ((), ("rank 0", "rank 1"))
    assert {b.function: b.processes for b in found.breaks} == {"main_only": (), "Net": ("rank 0", "rank 1")}


def test_what_the_end_of_the_budget_kept_from_running_never_is_said_to_have_never_run() -> None:
    events: list[Event] = [target(0, "later")]
    (stopped,) = merge(events, ANALYSED, cut=True).functions
    assert (stopped.analysed, stopped.reason) == (
        False,
        "the program was cut at the end of its budget, before it ran it",
    )
    (ended,) = merge(events, ANALYSED).functions
    assert ended.reason == "torch.compile never ran it during the analysis"


def test_ranks_that_compile_alike_compile_once() -> None:
    """Each rank compiles the function, splits it in two graphs and recompiles it once for the same
    reason: the function has two graphs and one recompilation, as each rank's own log says."""
    guard = Guard(failed="0/0", text="tensor 'x' size mismatch at index 0. expected 4, actual 5")
    events: list[Event] = [
        event
        for rank, number in ((0, 1 << 40), (1, 2 << 40))
        for event in (
            target(number, "step", process=f"rank {rank}", line=18),
            CallEvent(target=number),
            GraphEvent(target=number, frame="step", ops=1, first_line=19),
            GraphEvent(target=number, frame="step", ops=1, first_line=21),
            FrameEvent(target=number, compile_id="0/0", frame="step", path="/w/f.py", line=18),
            FrameEvent(
                target=number,
                compile_id="0/1",
                frame="step",
                path="/w/f.py",
                line=18,
                recompile=True,
                guard=guard,
            ),
        )
    ]
    found = merge(events, ANALYSED)
    (step,) = found.functions
    assert (step.processes, step.compilations) == (("rank 0", "rank 1"), 2)
    assert [g.first_line for g in found.graphs] == [19, 21]
    assert [r.compile_id for r in found.recompiles] == ["0/1"]


def test_each_compilation_costs_once_with_its_graphs() -> None:
    """The ranks of one program number their compilations alike: each compile id's cost is said once,
    with the graphs it made; torch's decisions and the program's stances once each."""
    events: list[Event] = [
        event
        for rank, number in ((0, 1 << 40), (1, 2 << 40))
        for event in (
            target(number, "step", process=f"rank {rank}", line=18),
            CallEvent(target=number),
            GraphEvent(target=number, frame="step", ops=1, first_line=19, compile_id="0/0"),
            GraphEvent(target=number, frame="step", ops=2, first_line=21, compile_id="1/0"),
            CostEvent(target=number, compile_id="0/0", frame="step", seconds=0.5 + rank, guards=9, ops=1),
            CostEvent(target=number, compile_id="1/0", frame="step", resumes_at=20, seconds=0.1, guards=8),
            ShapeEvent(target=number, compile_id="0/0", subject="x", dim=0, value="4 → 6"),
            StanceEvent(stance="eager_on_recompile", path="/w/f.py", line=30),
        )
    ]
    found = merge(events, ANALYSED)
    assert [(c.compile_id, c.seconds, c.graphs, c.resumes_at) for c in found.costs] == [
        ("0/0", 0.5, 1, None),
        ("1/0", 0.1, 1, 20),
    ]
    assert [(s.subject, s.dim, s.value) for s in found.shapes] == [("x", 0, "4 → 6")]
    assert [(s.stance, s.line) for s in found.stances] == [("eager_on_recompile", 30)]


def test_a_recompile_limit_under_fullgraph_raises_at_the_call() -> None:
    call = Frame("/w/f.py", "<module>", 10, 4, 28)
    events: list[Event] = [
        TargetEvent(target=0, name="total", qualname="total", path="/w/f.py", line=4, fullgraph=True),
        CallEvent(target=0),
        FrameEvent(target=0, compile_id="0/0", frame="total", path="/w/f.py", line=4),
        FrameEvent(
            target=0,
            compile_id="0/1",
            frame="total",
            path="/w/f.py",
            line=4,
            recompile=True,
            limit="recompile_limit",
            limit_value=1,
            called_at=call,
        ),
    ]
    (limited,) = merge(events, ANALYSED).recompiles
    assert (limited.raises, limited.called_at) == ("fullgraph", call)
