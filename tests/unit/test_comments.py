"""The ``# gbls:`` comment grammar, shared by the worker (examples) and the server (suppression, cache)."""

from __future__ import annotations

from gbls.worker.shared.directives import (
    example_sources,
    is_directive,
    is_suppressed,
    suppression_comments,
    suppressions,
    with_suppression,
    without_suppression,
)


def test_examples_are_read_from_the_comment_block_above_a_line() -> None:
    lines = [
        "import torch",
        "# gbls: example(torch.randn(4, 8), dim=1)",
        "# an ordinary comment in between",
        "#gbls:example( torch.randn(2) )",
        "@torch.compile",
        "def f(x, dim=0):",
        "    return x",
    ]
    assert example_sources(lines, 6) == [(2, "torch.randn(4, 8), dim=1"), (4, " torch.randn(2) ")]
    assert example_sources(lines, 5) == [(2, "torch.randn(4, 8), dim=1"), (4, " torch.randn(2) ")]
    assert example_sources(lines, 1) == []
    # A code line ends the block: an example further up belongs to something else.
    assert example_sources(["# gbls: example(1)", "x = 1", "def g(y): ..."], 3) == []


def test_suppressions_by_line_in_real_comments_only() -> None:
    source = (
        "x = f(y)  # gbls: ignore[GB0059, gb0124]\n"
        "z = g(y)  # gbls: ignore\n"
        's = "# gbls: ignore"\n'
        "w = h(y)  # gbls: ignore[]\n"
        "v = 1  # noqa  # gbls:ignore[GB0025]\n"
    )
    found = suppressions(source)
    assert found == {
        1: frozenset({"GB0059", "GB0124"}),
        2: None,
        4: frozenset(),
        5: frozenset({"GB0025"}),
    }
    assert is_suppressed(found, 1, "GB0124") and not is_suppressed(found, 1, "GB0025")
    assert is_suppressed(found, 2, "GB0001")
    assert not is_suppressed(found, 3, "GB0059")  # inside a string
    assert not is_suppressed(found, 4, "GB0059")  # an empty list suppresses nothing
    assert suppressions("def broken(:\n    pass  # gbls: ignore\n") == {2: None}


def test_adding_a_suppression_keeps_what_the_line_says() -> None:
    assert with_suppression("    z = f(y)", "GB0059") == "    z = f(y)  # gbls: ignore[GB0059]"
    assert with_suppression("    z = f(y)  ", None) == "    z = f(y)  # gbls: ignore"
    assert (
        with_suppression("z = f(y)  # gbls: ignore[GB0059]", "GB0124")
        == "z = f(y)  # gbls: ignore[GB0059, GB0124]"
    )
    assert (
        with_suppression("z = f(y)  # gbls: ignore[GB0059]", "GB0059") == "z = f(y)  # gbls: ignore[GB0059]"
    )
    assert (
        with_suppression("z = f(y)  # gbls: ignore[GB0059]  # why", None) == "z = f(y)  # gbls: ignore  # why"
    )
    assert with_suppression("z = f(y)  # gbls: ignore", "GB0059") == "z = f(y)  # gbls: ignore"


def test_directives_are_what_the_cache_keeps() -> None:
    assert is_directive("# gbls: ignore") and is_directive("#gbls: example(1)")
    assert not is_directive("# see gbls: docs") and not is_directive("# an ordinary comment")


def test_taking_codes_out_of_a_suppression_leaves_the_rest() -> None:
    line = "    z = f(y)  # gbls: ignore[GB0059, GB0124]  # why"
    assert without_suppression(line, frozenset({"GB0059"})) == "    z = f(y)  # gbls: ignore[GB0124]  # why"
    assert without_suppression(line, frozenset({"GB0059", "GB0124"})) == "    z = f(y)  # why"
    assert without_suppression("    z = f(y)  # gbls: ignore", None) == "    z = f(y)"
    assert without_suppression("    z = f(y)", None) == "    z = f(y)"
    # Where each suppression is on its line: the directive, not the comment around it.
    assert suppression_comments("z = 1  # note # gbls: ignore[gb0059]\n") == {
        1: (frozenset({"GB0059"}), 14, 36)
    }
