"""Translate, don't compute: a compiled graph that costs real arithmetic runs without it.

Graph by graph, in this process: what an elided call returns has the layout, dtype, device, autograd
state and aliasing of what the graph returns when it runs (each graph is run both ways on the same
inputs), and backward through it gives every parameter a gradient of its shape. Through the worker:
programs whose compiled model gbls does not compute, one of which reads its loss and stops early,
one of which samples from zeros and fails, each answered as torch's own log of the program says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
import torch._dynamo
from torch import nn
from torch.utils._pytree import tree_leaves

from gbls.settings import Settings
from gbls.worker.analysis import elision

from ..support import FIXTURES
from ..support.worker import Analyse
from . import test_engine, test_recompiles

VALUES = FIXTURES / "values"
Pairs = list[tuple[Any, Any, tuple[Any, ...]]]  # exact outputs, elided outputs, the inputs


@pytest.fixture
def both() -> Iterator[Callable[..., Pairs]]:
    """``both(fn, *calls)``: ``fn`` compiled with a backend that runs each graph exactly and elided on
    the same inputs, called with each of ``calls`` (a tuple of arguments); each graph call's
    (exact outputs, elided outputs)."""
    pairs: Pairs = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        graph = elision.ElidedGraph(gm)

        def run(*arguments: Any) -> Any:
            exact = gm.forward(*arguments)
            pairs.append((exact, graph(*arguments), arguments))
            return exact

        return run

    def compile_and_call(
        fn: Callable[..., Any], *calls: tuple[Any, ...], dynamic: bool | None = None
    ) -> Pairs:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
        for arguments in calls:
            compiled(*arguments)
        return pairs

    yield compile_and_call
    torch._dynamo.reset()


def aliases(output: torch.Tensor, arguments: tuple[Any, ...]) -> list[int]:
    return [
        index
        for index, argument in enumerate(arguments)
        if isinstance(argument, torch.Tensor)
        and argument.untyped_storage().data_ptr() == output.untyped_storage().data_ptr()
    ]


def assert_same_layouts(pairs: Pairs) -> None:
    assert pairs
    for exact, elided, arguments in pairs:
        assert type(exact) is type(elided)
        exact_leaves, elided_leaves = tree_leaves(exact), tree_leaves(elided)
        assert len(exact_leaves) == len(elided_leaves)
        for real, made in zip(exact_leaves, elided_leaves, strict=True):
            if not isinstance(real, torch.Tensor):
                assert real == made
                continue
            assert isinstance(made, torch.Tensor)
            assert (made.shape, made.stride(), made.storage_offset()) == (
                real.shape,
                real.stride(),
                real.storage_offset(),
            )
            assert (made.dtype, made.device, made.requires_grad) == (
                real.dtype,
                real.device,
                real.requires_grad,
            )
            assert aliases(made, arguments) == aliases(real, arguments)
            if not aliases(made, arguments):
                assert not made.any()  # zeros: nothing was computed


def test_a_matrix_product_and_its_transpose(both: Callable[..., Pairs]) -> None:
    def fn(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = (x @ w).relu()
        return y, (y * 2).t()

    assert_same_layouts(both(fn, (torch.randn(64, 128), torch.randn(128, 32))))


def test_outputs_of_other_dtypes_and_a_view_of_an_input(both: Callable[..., Pairs]) -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.argmax(-1), x > 0, x.to(torch.bfloat16), x[1:], x.sum()

    assert_same_layouts(both(fn, (torch.randn(8, 16),)))


def test_sizes_that_change_between_calls(both: Callable[..., Pairs]) -> None:
    def fn(x: torch.Tensor) -> tuple[int, torch.Tensor]:
        return x.size(0) * 2, x.reshape(x.size(0), -1, 2).sum(1).transpose(0, 1)

    pairs = both(fn, (torch.randn(4, 8),), (torch.randn(6, 8),), (torch.randn(10, 8),), dynamic=True)
    assert len(pairs) == 3
    assert_same_layouts(pairs)


def test_what_requires_grad_and_what_the_graph_made_without_it(both: Callable[..., Pairs]) -> None:
    layer = nn.Linear(32, 16)

    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        with torch.no_grad():
            scale = layer(x).abs().mean()
        return layer(x), scale

    assert_same_layouts(both(fn, (torch.randn(4, 32),)))


def test_outputs_that_share_their_storage_are_computed(both: Callable[..., Pairs]) -> None:
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x + 1
        return y, y.view(-1)

    with pytest.raises(torch._dynamo.exc.BackendCompilerFailed, match="outputs sharing their storage"):
        both(fn, (torch.randn(4, 4),))


def test_a_size_only_the_run_tells_is_computed(both: Callable[..., Pairs]) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.nonzero()

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        with pytest.raises(
            torch._dynamo.exc.BackendCompilerFailed, match="a size only the graph's run tells"
        ):
            both(fn, (torch.randn(8),))


def test_backward_gives_every_parameter_a_gradient_and_the_optimizer_steps() -> None:
    torch._dynamo.reset()
    head = nn.Linear(64, 100)
    model = nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 64), nn.GELU(), head)
    seen: list[tuple[int, ...]] = []
    record = lambda p: seen.append(tuple(p.grad.shape))  # noqa: E731
    head.weight.register_post_accumulate_grad_hook(record)  # type: ignore[no-untyped-call]
    compiled = torch.compile(model, backend=lambda gm, _: elision.ElidedGraph(gm))
    optimizer = torch.optim.AdamW(model.parameters())
    idx = torch.randint(0, 100, (4, 8))
    for _ in range(2):  # the second backward finds every gradient there already
        logits = compiled(idx)
        assert logits.shape == (4, 8, 100) and logits.requires_grad
        loss = nn.functional.cross_entropy(logits.view(-1, 100), idx.view(-1))
        loss.backward()  # type: ignore[no-untyped-call]
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())
    assert seen == [(100, 64), (100, 64)]  # a hook that wants each gradient gets each one
    optimizer.step()
    with torch.no_grad():
        assert not compiled(idx).requires_grad
    torch._dynamo.reset()


def test_the_cost_of_a_graph_counts_its_matrix_products() -> None:
    torch._dynamo.reset()
    works: list[int] = []

    def backend(gm: torch.fx.GraphModule, example_inputs: Any) -> Callable[..., Any]:
        works.append(elision.work(gm))
        return gm.forward

    torch.compile(nn.Linear(1024, 1024), backend=backend)(torch.randn(512, 1024))
    torch.compile(lambda x: x + 1, backend=backend)(torch.randn(512, 1024))
    # 512 x 1024 outputs, 1024 multiply-adds each (and the bias); an addition, one each.
    assert works[0] >= 512 * 1024 * 1024 > elision.WORK_LIMIT
    assert works[1] == 512 * 1024 < elision.WORK_LIMIT
    torch._dynamo.reset()


async def test_a_loop_that_stops_on_its_loss_is_analysed_as_torch_logs_it(analyse_file: Analyse) -> None:
    """With values elided the loss reads 0.0 and the loop ends after one step, not twenty: Dynamo sees
    the same program, and gbls's answer is torch's log of the program computed."""
    fixture = VALUES / "loss_loop.py"
    report = await analyse_file(fixture)
    assert (report.status, report.message) == ("ok", "")
    (model,) = report.functions
    assert model.analysed and model.elided
    assert sorted(e.compile_id for e in model.elided) == ["0/0", "0/1"]
    assert "not computed" in model.not_computed
    test_engine.assert_agrees_with_torch(report, fixture)
    test_recompiles.assert_agrees_with_torch(report, fixture)
    (recompiled,) = report.recompiles
    assert recompiled.guard is not None and "grad_mode" in recompiled.guard.text


async def test_a_program_that_fails_on_elided_values_runs_again_computing_them(analyse_file: Analyse) -> None:
    """Sampling from zero probabilities raises; under python it does not. gbls runs the program again
    with every value computed, says so, and answers as torch's log of the program does."""
    fixture = VALUES / "sampling.py"
    report = await analyse_file(fixture)
    assert (report.status, report.message, report.failure_kind) == ("ok", "", "")
    (note,) = [note for note in report.notes if "gbls ran it again computing every value" in note]
    assert "the program failed at sampling.py:27: RuntimeError: invalid multinomial distribution" in note
    (head,) = report.functions
    assert head.analysed and not head.elided  # the answer is the second run's, every value computed
    test_engine.assert_agrees_with_torch(report, fixture)
    test_recompiles.assert_agrees_with_torch(report, fixture)
    assert head.compilations == 2


async def test_exact_values_compute_every_graph(analyse_file: Analyse) -> None:
    fixture = VALUES / "loss_loop.py"
    report = await analyse_file(fixture, settings=Settings(values="exact"))
    (model,) = report.functions
    assert model.analysed and not model.elided
    test_recompiles.assert_agrees_with_torch(report, fixture)
