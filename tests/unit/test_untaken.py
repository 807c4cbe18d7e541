"""A compile call in a branch the run did not take, said as what the run is: the condition that was
false (or true) where the calls that ran show the run went through its ``if``, else the branches
one of which it did not take."""

from __future__ import annotations

from gbls.engine.untaken import untaken

SOURCE = """\
import torch


def main(compile, speculative, mode):
    if compile:
        if speculative:
            forward = torch.compile(forward)
        step = torch.compile(step)
    if mode == "a":
        a = torch.compile(a)
    elif mode == "b":
        b = torch.compile(b)
    else:
        c = torch.compile(c)
    return step


def other():
    return torch.compile(other)
"""


def test_a_call_beside_it_that_ran_shows_the_condition_was_false() -> None:
    # The step's call ran, inside `if compile:`: the run went through `if speculative:`.
    assert untaken(SOURCE, 7, [8]) == "`if speculative:` (line 6) was false"
    # A call in the other branch ran: the `if` went the other way.
    assert untaken(SOURCE, 14, [10]) == '`if mode == "a":` (line 9) was true (the call is in its `else`)'


def test_without_a_call_that_shows_which_branch_was_not_taken_all_are_named() -> None:
    # Nothing ran: the run may not have entered main() at all.
    assert untaken(SOURCE, 8, []) == "under `if compile:` (line 5), which this run did not take"
    # `elif` under the first `if`'s `else`: either test may have decided it.
    assert untaken(SOURCE, 12, [8]) == (
        'under the `else` of `if mode == "a":` (line 9), `elif mode == "b":` (line 11), '
        "which this run did not take"
    )


def test_a_call_in_no_branch_of_its_function_was_not_skipped_by_one() -> None:
    assert untaken(SOURCE, 19, [8]) == ""
    assert untaken(SOURCE, 8, [7]) == ""  # a call beside it in its branch ran: the branch was taken
    assert untaken("def f(:\n", 1, []) == ""  # no syntax, nothing said
