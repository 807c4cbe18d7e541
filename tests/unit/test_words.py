"""Dynamo's text about a break in the user's words: a resume function as its function resumed after
a line, an ATen operator as the call the user wrote, else as its torch function."""

from __future__ import annotations

from gbls.engine import words

BRANCH = (
    "The branch condition involves a tensor computed as follows:\n"
    '    # File "/w/m.py", line 8, in torch_dynamo_resume_in_scale_at_7, code: if y.sum() > 0:'
)


def test_a_resume_function_is_its_function_resumed_after_a_line() -> None:
    assert words.resumed(BRANCH).endswith("line 8, in scale (resumed after line 7), code: if y.sum() > 0:")
    assert words.resumed("in torch_dynamo_resume_in__get_variance_at_379,") == (
        "in _get_variance (resumed after line 379),"
    )


def test_an_operator_is_the_call_the_user_wrote_else_its_torch_function() -> None:
    explanation = (
        "Operator `aten._local_scalar_dense.default` has a non-Tensor output whose value is dependent on "
        "the data of Tensor inputs."
    )
    assert words.said(explanation, "np.random.rand()").startswith(
        "`np.random.rand()` has a non-Tensor output"
    )
    assert words.said("aten._local_scalar_dense.default", "np.random.rand()") == "`np.random.rand()`"
    # Python 3.10 gives no columns: no call as written, the torch function it is.
    assert words.said(explanation, "").startswith("a tensor's value read as a Python number (`.item()`) has")
    said = words.said("Operator `aten.nonzero.default`'s output shape", "")
    assert said == "`torch.nonzero`'s output shape"


def test_the_flag_for_keyword_arguments_is_said_where_true() -> None:
    text = "Dynamo does not know how to trace builtin operator `print` with argument types ['str', 'Size']"
    assert words.said(f"{text} (has_kwargs False)", "") == text
    assert words.said(f"{text} (has_kwargs True)", "") == f"{text} and keyword arguments"


def test_torch_2_6_s_builtin_is_said_as_later_releases_say_it() -> None:
    variable = "<class 'torch._dynamo.variables.{}'>"
    constant, tensor = variable.format("constant.ConstantVariable"), variable.format("TensorVariable")
    text = f"builtin: print [{constant}, {tensor}]"
    assert words.said(f"{text} False", "") == (
        "Dynamo does not know how to trace builtin operator `print` with argument types "
        "['constant', 'tensor']"
    )
    assert words.said(f"{text} True", "").endswith("['constant', 'tensor'] and keyword arguments")
    user = variable.format("user_defined.UserDefinedObjectVariable")
    assert words.said(f"called with {user}", "") == "called with 'user defined object'"


def test_a_function_is_named_without_its_address() -> None:
    said = words.said("Skip calling function `<function Opaque.forward at 0x7f0053a9eac0>` since it", "")
    assert said == "Skip calling function `Opaque.forward` since it"
