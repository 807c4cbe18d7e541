"""The library's tests: 50 of them, each running five blocks on one shape."""

import pytest
import torch
from heavylib import blocks


@pytest.mark.parametrize("shape", [(4,), (4, 4), (8, 4), (4, 8), (8, 8)], ids=str)
@pytest.mark.parametrize("group", range(10))
def test_a_group_of_blocks(group, shape):
    x = torch.randn(shape)
    first = 5 * group
    getattr(blocks, f"block{first}")([x.clone()], 0.9)
    for i in range(first + 1, first + 5):
        getattr(blocks, f"block{i}")(x.clone())
