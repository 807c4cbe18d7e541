"""Whether a fixed program does what the program did, as two analyses recorded it (``Outcome``): what
each compiled function's calls returned, and what the program printed; numbers within a float's
tolerance (a fix may reorder arithmetic), printed numbers within their last printed digit.

A fix that says it drops output (a ``print`` removed, or left out of compiled code) may print
fewer lines, and only that: every line it prints is one the program printed, in the same order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from ...worker.shared.protocol import CALLS_RECORDED, Outcome, Returned
from .edits import Changes

RELATIVE = 1e-4
ABSOLUTE = 1e-6
# A number as Python and torch print them: "-3", "0.5000", "1.2e-05", "nan", "inf".
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|nan|inf)")
SHOWN = 60  # characters of a value or line quoted in a verdict
GENERATOR = ("<generator>",)  # what a call that made a generator returned, as the analysis records it


def difference(
    before: Outcome,
    after: Outcome,
    changes: Changes,
    inline: frozenset[str] = frozenset(),
    renamed: Mapping[str, str] | None = None,
    checked_after: frozenset[str] = frozenset(),
    returns_first: int = 0,
) -> str | None:
    """How ``after`` differs from ``before`` beyond what the fix says it ``changes``, in words; None
    where it does not, or where either run's outcome was not recorded (the runs' ends are compared
    apart). ``inline``: the compiled functions that ``after`` only ran traced inline in another's
    graphs; a call made inside compiled code is not recorded, and what it returned is compared as
    part of what the calls of that other function return. ``renamed``: the compiled functions whose
    calls ``after`` makes as calls of another (a fix's ``compiled_as``), compared call by call with
    that one's; a generator's call with its consumer's, which returns the generator's items where it
    returned the generator (what the program does with the items is compared in its other results and
    its output). ``checked_after``: of those others, the ones whose result a check then reads in
    Python, which return on the calls where the one they replace raised: what each call of that one
    returned is returned by theirs in the same order, among the calls whose check then raised."""
    if not (before.recorded and after.recorded):
        return None
    was = tuple(
        Returned((renamed or {}).get(r.function, r.function), r.call, r.value) for r in before.returns
    )
    consumed = frozenset((renamed or {}).values())
    checked = tuple(r for r in was if r.function in checked_after)
    now = tuple(r for r in after.returns if r.function in checked_after)
    return (
        _checked_returns(checked, now, returns_first)
        or _returns(
            tuple(r for r in was if r.function not in checked_after),
            tuple(r for r in after.returns if r.function not in checked_after),
            inline,
            consumed,
            returns_first,
        )
        or _printed(before, after, changes)
    )


def _checked_returns(before: tuple[Returned, ...], after: tuple[Returned, ...], first: int) -> str | None:
    """Whether the calls of functions whose result a check reads after them return what ``before``'s
    did, in order, the calls whose check raised between them."""
    for function in sorted({r.function for r in before} | {r.function for r in after}):
        now = sorted((r for r in after if r.function == function), key=lambda r: r.call)
        position = 0
        for returned in sorted((r for r in before if r.function == function), key=lambda r: r.call):
            while position < len(now) and not _first_items(returned.value, now[position].value, first):
                position += 1
            if position == len(now):
                if len(now) >= CALLS_RECORDED:
                    break  # past the calls recorded: the ones whose check raised took their place
                call = _ordinal(returned.call)
                return f"no call of `{function}` returns what its {call} call returned"
            position += 1
    return None


def _returns(
    before: tuple[Returned, ...],
    after: tuple[Returned, ...],
    inline: frozenset[str],
    consumed: frozenset[str],
    first: int,
) -> str | None:
    now = {(r.function, r.call): r.value for r in after}
    for returned in before:
        value = now.get((returned.function, returned.call))
        call = _ordinal(returned.call)
        if value is None and returned.function in inline:
            continue
        if value is None:
            return f"the program no longer makes the {call} call of `{returned.function}`"
        if returned.function in consumed and returned.value == GENERATOR:
            continue
        if not _first_items(returned.value, value, first if returned.function in consumed else 0):
            was, became = _first_difference(returned.value, value)
            return f"the {call} call of `{returned.function}` returns {became} where it returned {was}"
    calls = {(r.function, r.call) for r in before}
    extra = next((r for r in after if (r.function, r.call) not in calls), None)
    if extra is not None:
        return f"the program makes a {_ordinal(extra.call)} call of `{extra.function}` it did not make"
    return None


def _printed(before: Outcome, after: Outcome, changes: Changes) -> str | None:
    was, now = before.printed.splitlines(), after.printed.splitlines()
    if not (before.whole and after.whole):  # compare what both kept
        kept = min(len(was), len(now))
        was, now = was[:kept], now[:kept]
    if changes == "output":
        missing = _not_a_subsequence(now, was)
        if missing is not None:
            return f"it prints {_quoted(missing)}, which the program did not print there"
        return None
    for line, (old, new) in enumerate(zip(was, now, strict=False), 1):
        if not _same_line(old, new):
            return f"its output's line {line} reads {_quoted(new)} where it read {_quoted(old)}"
    if len(was) != len(now):
        if len(was) > len(now):
            return f"its output loses {_quoted(was[len(now)])}"
        return f"its output gains {_quoted(now[len(was)])}"
    return None


def _not_a_subsequence(lines: list[str], of: list[str]) -> str | None:
    """The first of ``lines`` that is not, in order, among ``of``; None when all are."""
    position = 0
    for line in lines:
        while position < len(of) and not _same_line(of[position], line):
            position += 1
        if position == len(of):
            return line
        position += 1
    return None


def _first_items(was: tuple[str, ...], now: tuple[str, ...], first: int) -> bool:
    """Whether ``now`` is what ``was`` is (``first`` 0), or its ``first`` items, the tuple ``was`` is
    a summary of cut there: one item, itself; several, a tuple of them. A value's summary ends where
    its tokens say (a tensor's shape counts its numbers, brackets nest), so the items ``now`` holds
    are those ``was`` starts with where its tokens start ``was``'s items."""
    if not first:
        return _same_tokens(was, now)
    if first > 1:
        if now[:1] != ("tuple[",) or now[-1:] != ("]",):
            return False
        now = now[1:-1]
    return was[:1] == ("tuple[",) and _same_tokens(was[1 : 1 + len(now)], now)


def _same_tokens(was: tuple[str, ...], now: tuple[str, ...]) -> bool:
    return len(was) == len(now) and all(_same_token(a, b) for a, b in zip(was, now, strict=True))


def _same_token(was: str, now: str) -> bool:
    if was == now:
        return True
    a, b = _number(was), _number(now)
    return a is not None and b is not None and _close(a, b, 0.0)


def _number(token: str) -> float | None:
    if token in ("True", "False"):
        return None
    try:
        return float(token)
    except ValueError:
        return None


def _close(a: float, b: float, digit: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ABSOLUTE + digit + RELATIVE * max(abs(a), abs(b))


def _same_line(was: str, now: str) -> bool:
    """The same words, and numbers that differ by no more than their last printed digit."""
    if was == now:
        return True
    words_was, words_now = NUMBER.split(was), NUMBER.split(now)
    numbers_was, numbers_now = NUMBER.findall(was), NUMBER.findall(now)
    if words_was != words_now or len(numbers_was) != len(numbers_now):
        return False
    return all(
        _close(float(a), float(b), max(_last_digit(a), _last_digit(b)))
        for a, b in zip(numbers_was, numbers_now, strict=True)
    )


def _last_digit(number: str) -> float:
    """The value of one unit in the last digit ``number`` was printed with: 0.0001 for "0.5000"."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals) if mantissa[-1:].isdigit() else 0.0


def _first_difference(was: tuple[str, ...], now: tuple[str, ...]) -> tuple[str, str]:
    for a, b in zip(was, now, strict=False):
        if not _same_token(a, b):
            return _quoted(a), _quoted(b)
    return _quoted(" ".join(was)), _quoted(" ".join(now))


def _quoted(text: str) -> str:
    return f"`{text if len(text) <= SHOWN else text[: SHOWN - 1] + '…'}`"


def _ordinal(call: int) -> str:
    number = call + 1
    suffix = "th" if 10 <= number % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(number % 10, "th")
    return f"{number}{suffix}"
