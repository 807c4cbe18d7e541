"""What a fix must keep of what the program did: two runs' outcomes compared, numbers within a float's
tolerance, printed numbers within their last printed digit, and the output a fix says it drops."""

from __future__ import annotations

from gbls.engine.fixes.outcomes import difference
from gbls.worker.shared.protocol import Outcome, Returned


def ran(*returns: Returned, printed: str = "", whole: bool = True) -> Outcome:
    return Outcome(returns=returns, printed=printed, whole=whole, recorded=True)


def tensor(*values: str, function: str = "step", call: int = 0) -> Returned:
    return Returned(function, call, ("tensor float32 (2,)", *values))


def test_the_same_results_within_a_floats_tolerance_are_kept() -> None:
    before = ran(tensor("1.0", "0.30000001192092896"))
    assert difference(before, ran(tensor("1.0000001", "0.3")), "") is None
    assert difference(before, ran(tensor("nan", "0.3")), "") == (
        "the 1st call of `step` returns `nan` where it returned `1.0`"
    )
    assert difference(ran(tensor("nan", "inf")), ran(tensor("nan", "inf")), "") is None


def test_another_type_shape_or_call_is_a_change() -> None:
    before = ran(tensor("1.0", "2.0"), tensor("3.0", "4.0", call=1))
    shape = Returned("step", 0, ("tensor float32 (1, 2)", "1.0", "2.0"))
    assert "returns `tensor float32 (1, 2)` where it returned `tensor float32 (2,)`" in (
        difference(before, ran(shape, tensor("3.0", "4.0", call=1)), "") or ""
    )
    assert difference(before, ran(tensor("1.0", "2.0")), "") == (
        "the program no longer makes the 2nd call of `step`"
    )
    assert difference(ran(tensor("1.0", "2.0")), before, "") == (
        "the program makes a 2nd call of `step` it did not make"
    )
    assert difference(ran(Returned("f", 0, ("True",))), ran(Returned("f", 0, ("1",))), "") is not None


def test_printed_numbers_may_differ_in_their_last_digit() -> None:
    before = ran(printed="loss tensor([0.1234, 2.0000])\nstep 1\n")
    assert difference(before, ran(printed="loss tensor([0.1235, 2.0000])\nstep 1\n"), "") is None
    assert difference(before, ran(printed="loss tensor([0.1240, 2.0000])\nstep 1\n"), "") == (
        "its output's line 1 reads `loss tensor([0.1240, 2.0000])` where it read "
        "`loss tensor([0.1234, 2.0000])`"
    )
    assert difference(before, ran(printed="loss (0.1234, 2.0000)\nstep 1\n"), "") is not None


def test_output_lost_is_a_change_unless_the_fix_says_it_drops_output() -> None:
    before = ran(printed="step 0\nstep 1\nresult [1.0]\n")
    dropped = ran(printed="result [1.0]\n")
    lost = "its output's line 1 reads `result [1.0]` where it read `step 0`"
    assert difference(before, dropped, "") == lost
    assert difference(before, ran(printed="step 0\nstep 1\n"), "") == "its output loses `result [1.0]`"
    assert difference(before, dropped, "output") is None
    # Dropping lines is all such a fix may do: none new, none out of order.
    assert difference(before, ran(printed="result [2.0]\n"), "output") == (
        "it prints `result [2.0]`, which the program did not print there"
    )
    assert difference(before, ran(printed="result [1.0]\nstep 0\n"), "output") is not None


def test_what_either_run_did_not_record_is_not_compared() -> None:
    before = ran(tensor("1.0", "2.0"), printed="a\n")
    assert difference(before, Outcome(), "") is None
    # Where a run printed past its bound, the lines both kept are compared.
    assert difference(ran(printed="a\nb\nc", whole=False), ran(printed="a\nb\n"), "") is None


def test_the_calls_of_a_function_that_now_runs_only_inline_are_compared_in_its_callers() -> None:
    """A compiled function called by another, which the fix lets Dynamo trace inline: its own calls are
    no longer recorded (a call inside compiled code is not one), its caller's still are, and compared."""
    before = ran(tensor("1.0", "2.0", function="inner"), tensor("3.0", "6.0", function="outer"))
    after = ran(tensor("3.0", "6.0", function="outer"))
    assert difference(before, after, "", frozenset({"inner"})) is None
    assert difference(before, after, "") == "the program no longer makes the 1st call of `inner`"
    changed = ran(tensor("3.0", "7.0", function="outer"))
    assert difference(before, changed, "", frozenset({"inner"})) == (
        "the 1st call of `outer` returns `7.0` where it returned `6.0`"
    )


def test_the_calls_of_a_function_compiled_under_another_name_are_compared_with_its() -> None:
    """A fix that compiles a function's code under another name (``compiled_as``): its calls are the
    other's, call by call; a generator's call returned the generator, its consumer's the items."""
    checked = ran(tensor("0.25", "0.25", function="ratio"))
    renamed = {"ratio": "_ratio_compiled"}
    assert (
        difference(checked, ran(tensor("0.25", "0.25", function="_ratio_compiled")), "", renamed=renamed)
        is None
    )
    assert difference(
        checked, ran(tensor("0.5", "0.25", function="_ratio_compiled")), "", renamed=renamed
    ) == ("the 1st call of `_ratio_compiled` returns `0.5` where it returned `0.25`")
    assert difference(checked, ran(), "", renamed=renamed) == (
        "the program no longer makes the 1st call of `_ratio_compiled`"
    )
    generator = ran(Returned("produce", 0, ("<generator>",)))
    items = ran(Returned("produce_list", 0, ("list[", "tensor float32 (2,)", "2.0", "2.0", "]")))
    assert difference(generator, items, "", renamed={"produce": "produce_list"}) is None
    assert difference(generator, items, "") == "the program no longer makes the 1st call of `produce`"
    twice = ran(*items.returns, Returned("produce_list", 1, ("list[", "]")))
    assert difference(generator, twice, "", renamed={"produce": "produce_list"}) == (
        "the program makes a 2nd call of `produce_list` it did not make"
    )


def test_the_calls_of_a_function_whose_checks_now_run_after_it_are_matched_in_order() -> None:
    """A fix whose checks run in Python after the compiled code (``checked_after``): the compiled code
    also returns on the calls where the function raised, the check raising instead; what each call
    that returned returned is returned in the same order, among those calls."""
    renamed, checked = {"grow": "_grow_compiled"}, frozenset({"_grow_compiled"})
    before = ran(tensor("1.0", "2.0", function="grow"), tensor("3.0", "4.0", function="grow", call=1))
    refused = tensor("9.0", "9.0", function="_grow_compiled")  # the call whose check raised
    after = ran(
        refused,
        tensor("1.0", "2.0", function="_grow_compiled", call=1),
        tensor("3.0", "4.0", function="_grow_compiled", call=2),
    )
    assert difference(before, after, "", renamed=renamed, checked_after=checked) is None
    assert difference(before, after, "", renamed=renamed) == (
        "the 1st call of `_grow_compiled` returns `9.0` where it returned `1.0`"
    )
    swapped = ran(
        tensor("3.0", "4.0", function="_grow_compiled"),
        tensor("1.0", "2.0", function="_grow_compiled", call=1),
    )
    assert difference(before, swapped, "", renamed=renamed, checked_after=checked) == (
        "no call of `_grow_compiled` returns what its 2nd call returned"
    )
    # The program's output is compared as ever.
    said = ran(refused, printed="caught too long\n")
    assert (
        difference(ran(printed="caught too long\n"), said, "", renamed=renamed, checked_after=checked) is None
    )
    assert difference(
        ran(printed="caught too long\n"), ran(refused), "", renamed=renamed, checked_after=checked
    ) == ("its output loses `caught too long`")


def test_the_calls_of_a_function_that_returns_the_first_items_of_what_it_replaced_return_those_items() -> (
    None
):
    """A fix whose compiled body returns the first items of the tuple the function returned, Python
    computing the rest after it (``returns_first``, a timer's reading): each call returns those items."""
    renamed = {"timed": "_timed_compiled"}
    before = ran(Returned("timed", 0, ("tuple[", "tensor float32 (2,)", "1.0", "2.0", "True", "]")))
    one = ran(tensor("1.0", "2.0", function="_timed_compiled"))
    assert difference(before, one, "", renamed=renamed, returns_first=1) is None
    assert difference(before, one, "", renamed=renamed) == (
        "the 1st call of `_timed_compiled` returns `tensor float32 (2,)` where it returned `tuple[`"
    )
    other = ran(tensor("1.0", "3.0", function="_timed_compiled"))
    assert difference(before, other, "", renamed=renamed, returns_first=1) is not None
    pair = ran(Returned("_timed_compiled", 0, ("tuple[", "tensor float32 (2,)", "1.0", "2.0", "True", "]")))
    assert difference(before, pair, "", renamed=renamed, returns_first=2) is None
    assert difference(before, pair, "", renamed=renamed, returns_first=1) is not None
