"""Dynamo's text as markdown: code spans closed, markdown's own characters escaped, snippets fenced."""

from __future__ import annotations

from gbls.lsp.markdown import Where, explanation, prose


def test_a_code_span_left_open_is_closed_after_its_word() -> None:
    # GB0291's hint, as torch's graph_break_registry.json has it.
    hint = "Add the logging method to `torch._dynamo.config.ignore_logger_methods."
    assert prose(hint) == "Add the logging method to `torch._dynamo.config.ignore_logger_methods`."


def test_markdowns_own_characters_are_escaped_outside_code() -> None:
    text = "__torch_function__ of <class 'Foo'> with *args and has_kwargs; `__init__` stays"
    assert (
        prose(text)
        == r"\_\_torch_function\_\_ of \<class 'Foo'> with \*args and has_kwargs; `__init__` stays"
    )


def test_a_snippet_is_fenced_and_names_files_in_the_workspace() -> None:
    # GB0170's explanation, as Dynamo writes it.
    text = (
        "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not support "
        "tracing dynamic control flow.\n\n  The branch condition involves a tensor computed as follows:\n"
        '    # File "/work/project/pkg/model.py", line 7, in forward, code: if y.sum() > 0:\n'
        "    gt = gt(sum_1, 0)\n    "
    )
    assert explanation(text, Where("/work/project/train.py", "/work/project")) == (
        "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). Dynamo does not support "
        "tracing dynamic control flow. The branch condition involves a tensor computed as follows:\n\n"
        '```python\n# File "pkg/model.py", line 7, in forward, code: if y.sum() > 0:\ngt = gt(sum_1, 0)\n```'
    )


def test_places_are_named_for_the_reader() -> None:
    where = Where("/work/project/train.py", "/work/project")
    assert where.line("/work/project/train.py", 3) == "line 3"
    assert where.line("/work/project/pkg/model.py", 7) == "pkg/model.py:7"
    assert (
        where.link("/work/project/pkg/model.py", 7)
        == "[pkg/model.py:7](file:///work/project/pkg/model.py#L7)"
    )
    assert where.line("/usr/lib/python3/site.py", 1) == "/usr/lib/python3/site.py:1"  # outside the workspace
    plain = Where("/work/project/train.py", "/work/project", links=False)
    assert plain.link("/work/project/pkg/model.py", 7) == "pkg/model.py:7"
