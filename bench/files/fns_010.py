"""gbls benchmark input: 10 compiled functions (written by bench/generate.py)."""

# revision 0 (the benchmark edits this comment)
import torch


@torch.compile
def f0_print(x):
    y = x.sin() * 1.5
    print("f0_print", y.shape)
    return y.cos().sum()


@torch.compile
def f1_clean(x, w):
    h = torch.relu(x @ w + 1)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f2_item(x):
    scale = x.abs().max().item()
    return x / (scale + 2)


@torch.compile
def f3_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * 3
    return x.relu()


@torch.compile
def f4_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * 4


@torch.compile
def f5_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - 5).tanh()


def f6_h5(x):
    print("deep in f6", x.shape)
    return x + 5


def f6_h4(x):
    return f6_h5(x * 2) - 4


def f6_h3(x):
    return f6_h4(x * 2) - 3


def f6_h2(x):
    return f6_h3(x * 2) - 2


def f6_h1(x):
    return f6_h2(x * 2) - 1


@torch.compile
def f6_chain(x):
    return f6_h1(x.sin()).sum()


class Head7(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 1 * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head7 = torch.compile(Head7())


@torch.compile
def f8_clean(x, w):
    h = torch.relu(x @ w + 8)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f9_print(x):
    y = x.sin() * 10.5
    print("f9_print", y.shape)
    return y.cos().sum()


torch.manual_seed(0)
f0_print(torch.randn(8))
f1_clean(torch.randn(4, 8), torch.randn(8, 8))
f2_item(torch.randn(8))
f3_branch(torch.randn(8))
f4_nonzero(torch.randn(8))
f5_explicit(torch.randn(8))
f6_chain(torch.randn(8))
head7(torch.randn(2, 16))
f8_clean(torch.randn(4, 8), torch.randn(8, 8))
f9_print(torch.randn(8))
