"""gbls benchmark input: 1 compiled function (written by bench/generate.py)."""

# revision 0 (the benchmark edits this comment)
import torch


@torch.compile
def f0_print(x):
    y = x.sin() * 1.5
    print("f0_print", y.shape)
    return y.cos().sum()


torch.manual_seed(0)
f0_print(torch.randn(8))
