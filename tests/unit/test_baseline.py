"""The baseline's entries: the code that names a finding, how entries match, the file they live in."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from gbls.engine import baseline
from gbls.engine.baseline import BaselineError, Entry
from gbls.engine.ranges import Span


def test_the_code_at_a_root_is_its_text_with_its_whitespace_collapsed() -> None:
    text = "x = 1\nif (a >\n        b):\n    print( 'x' )  # said\n"
    assert baseline.code_at(text, Span(4, 4, 4, 16)) == "print( 'x' )"
    assert baseline.code_at(text, Span(2, 3, 3, 10)) == "(a > b)"
    assert baseline.code_at(text, Span(1, 0, 1, 0)) == "x = 1"  # no range: the whole line


def test_each_entry_matches_one_finding() -> None:
    first, second = Entry("m.py", "f", "t", "print(x)"), Entry("m.py", "f", "t", "print(y)")
    left = Counter([first, first, second])
    assert baseline.is_new([first, second, first, first, second], left) == [False, False, False, True, True]
    assert not +left


def test_a_baseline_file_is_sorted_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "gbls-baseline.json"
    entries = [Entry("b.py", "g", "t", "y"), Entry("a.py", "f", "t", "x")]
    baseline.dump(str(path), entries)
    assert json.loads(path.read_text()) == {
        "version": 1,
        "entries": [
            {"path": "a.py", "function": "f", "type": "t", "code": "x"},
            {"path": "b.py", "function": "g", "type": "t", "code": "y"},
        ],
    }
    assert baseline.load(str(path)) == sorted(entries)


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("not json", "is not a gbls baseline: Expecting value"),
        ("[]", "is not a gbls baseline of format version 1"),
        ('{"version": 2, "entries": []}', "is not a gbls baseline of format version 1"),
        (
            '{"version": 1, "entries": [{"path": "a.py"}]}',
            "an entry is not as gbls writes them (KeyError: 'function')",
        ),
    ],
)
def test_a_file_that_is_no_baseline_is_said_to_be(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "gbls-baseline.json"
    path.write_text(text)
    with pytest.raises(BaselineError, match=re.escape(said)):
        baseline.load(str(path))


def test_a_missing_baseline_is_said_to_be(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"cannot read the baseline .*: No such file or directory"):
        baseline.load(str(tmp_path / "missing.json"))
