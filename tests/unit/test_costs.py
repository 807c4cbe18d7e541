"""What compiling costs, said from measured compilations made by hand: the rows of a function's
compilations and why each happened, its total, what a break costs and the order breaks are fixed in.
(The measures themselves are checked against torch's own metrics in tests/engine/test_costs.py.)"""

from __future__ import annotations

from gbls.engine import costs
from gbls.engine.model import BreakReport, FunctionReport, Location, RecompileReport, costliest_first
from gbls.engine.ranges import Span
from gbls.worker.shared import metrics
from gbls.worker.shared.protocol import Break, Code, Cost, Elided, Frame, Function, Recompile

PATH = "/w/f.py"
SPAN = Span(5, 4, 5, 10)


def forward(*spent: Cost, elided: tuple[Elided, ...] = ()) -> FunctionReport:
    target = Function("forward", "forward", PATH, 4, analysed=True, compilations=3)
    return FunctionReport(target, PATH, 4, (), 0, 0, SPAN, None, None, elided=elided, costs=spent)


def recompiled(changed: str, *ids: str, spent: tuple[Cost, ...] = ()) -> RecompileReport:
    members = tuple(Recompile("forward", Code(PATH, 4, "forward"), True, compile_id) for compile_id in ids)
    return RecompileReport(
        "forward", Code(PATH, 4, "forward"), True, members, PATH, SPAN, None, "", changed=changed, costs=spent
    )


def test_each_compilation_says_why_it_happened_and_the_total_what_recompiling_cost() -> None:
    first = Cost("forward", "forward", "0/0", seconds=2.0, guards=11)
    grad = Cost("forward", "forward", "0/1", seconds=0.5, guards=11)
    size = Cost("forward", "forward", "0/2", seconds=1.5, guards=12)
    resumed = Cost("forward", "forward", "1/0", resumes_at=9, seconds=0.1)
    function = forward(first, grad, size, resumed, elided=(Elided("forward", "forward", "0/2", 10**9),))
    reports = (
        recompiled("grad mode", "0/1", spent=(grad,)),
        recompiled("the shape of `x`", "0/2", spent=(size,)),
    )
    rows = costs.rows(function, reports)
    assert [(r.cost.compile_id, r.why, r.computed) for r in rows] == [
        ("0/0", "first compilation", True),
        ("0/1", "recompiled for grad mode", True),
        ("0/2", "recompiled for the shape of `x`", False),
        ("1/0", "the code of `forward` after line 9 (a break)", True),
    ]
    assert costs.summary(function, reports) == (
        "`forward`: 3 compilations, 4.1 s of translation, 2 s of it recompiling (1.5 s for the shape of "
        "`x`, 0.5 s for grad mode), 0.1 s translating the code after its breaks"
    )
    assert costs.summary(forward(), ()) == ""  # nothing measured (a log): nothing said


def test_a_break_costs_its_share_of_the_restart_and_the_code_after_it() -> None:
    chain = (Frame(PATH, "forward", 9, 4, 20),)
    cause = Break(
        "forward", "Failed to trace builtin operator", "GB0059", None, "", (), "", chain, compile_ids=("0/0",)
    )
    restarted = Cost(
        "forward",
        "forward",
        "0/0",
        seconds=1.0,
        restarts=("Failed to trace builtin operator", "Data-dependent branching"),
        restart_seconds=0.6,
    )
    resumed = Cost("forward", "forward", "1/0", resumes_at=9, seconds=0.25)
    elsewhere = Cost("forward", "forward", "2/0", resumes_at=12, seconds=9.0)
    spent = costs.of_break(cause, (restarted, resumed, elsewhere))
    assert spent == (restarted, resumed)
    brk = BreakReport(cause, PATH, SPAN, (Location(PATH, "forward", SPAN),), "print", costs=spent)
    assert brk.seconds == 0.3 + 0.25  # half the restart (two breaks restarted it), all the code after
    cheap = BreakReport(cause, PATH, Span(7, 0, 7, 5), (Location(PATH, "forward", SPAN),), "print")
    # Split alike and hit as often: the one that cost more translations is fixed first.
    assert costliest_first((cheap, brk)) == (brk, cheap)


def test_a_restart_torch_2_6_names_by_its_aten_operator_is_said_in_the_users_words() -> None:
    """torch 2.6 names a restart by its break's line of text (its metrics, as gbls read them from
    torch 2.6 on ``tests/fixtures/words/noisy_step.py``): the row says the torch function, and the
    break whose text it is (its call said as written) gets its share of the restart all the same."""
    text = (
        "data dependent operator: aten._local_scalar_dense.default; to enable, set "
        "torch._dynamo.config.capture_scalar_outputs = True"
    )
    restarted = Cost("step", "step", "0/0", seconds=0.03, restarts=(text,), restart_seconds=0.02)
    (row,) = costs.rows(forward(restarted), ())
    said = "data dependent operator: a tensor's value read as a Python number (`.item()`); to enable"
    assert row.reasons == (said + text.partition("; to enable")[2],)
    assert row.restarts == f"restarted once: {row.reasons[0]}"
    chain = (Frame(PATH, "step", 14, 12, 28),)
    cause = Break("step", text, None, None, "", (), "", chain, compile_ids=("0/0",))
    brk = BreakReport(
        cause,
        PATH,
        SPAN,
        (Location(PATH, "step", SPAN),),
        "np.random.rand",
        costs=(restarted,),
        call="np.random.rand()",
    )
    assert brk.gb_type.startswith("data dependent operator: `np.random.rand()`;")
    assert brk.seconds == 0.02


def test_torch_2_6_restarts_are_named_as_its_breaks_are() -> None:
    """Two of torch 2.6's texts for `print` (its metrics' reasons) are the one gb_type later releases
    restart for: one restart; a text gbls has no gb_type for keeps its first line."""
    reasons = {
        "builtin: print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False",
        "builtin: print [<class 'torch._dynamo.variables.lists.TupleVariable'>] False",
        "data dependent operator: aten._local_scalar_dense.default; to enable, ...\nfrom user code:",
    }
    measured = metrics.measured({"restart_reasons": reasons}.get)
    assert measured["restarts"] == (
        "Failed to trace builtin operator",
        "data dependent operator: aten._local_scalar_dense.default; to enable, ...",
    )


def test_durations_are_said_in_two_digits() -> None:
    assert [costs.seconds(s) for s in (0.0312, 0.27, 4.13, 12.6)] == ["0.031 s", "0.27 s", "4.1 s", "13 s"]
