"""gbls benchmark input: 50 compiled functions (written by bench/generate.py)."""

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


@torch.compile
def f10_print(x):
    y = x.sin() * 11.5
    print("f10_print", y.shape)
    return y.cos().sum()


@torch.compile
def f11_clean(x, w):
    h = torch.relu(x @ w + 11)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f12_item(x):
    scale = x.abs().max().item()
    return x / (scale + 12)


@torch.compile
def f13_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * 13
    return x.relu()


@torch.compile
def f14_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * 14


@torch.compile
def f15_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - 15).tanh()


def f16_h5(x):
    print("deep in f16", x.shape)
    return x + 5


def f16_h4(x):
    return f16_h5(x * 2) - 4


def f16_h3(x):
    return f16_h4(x * 2) - 3


def f16_h2(x):
    return f16_h3(x * 2) - 2


def f16_h1(x):
    return f16_h2(x * 2) - 1


@torch.compile
def f16_chain(x):
    return f16_h1(x.sin()).sum()


class Head17(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 2 * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head17 = torch.compile(Head17())


@torch.compile
def f18_clean(x, w):
    h = torch.relu(x @ w + 18)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f19_print(x):
    y = x.sin() * 20.5
    print("f19_print", y.shape)
    return y.cos().sum()


@torch.compile
def f20_print(x):
    y = x.sin() * 21.5
    print("f20_print", y.shape)
    return y.cos().sum()


@torch.compile
def f21_clean(x, w):
    h = torch.relu(x @ w + 21)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f22_item(x):
    scale = x.abs().max().item()
    return x / (scale + 22)


@torch.compile
def f23_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * 23
    return x.relu()


@torch.compile
def f24_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * 24


@torch.compile
def f25_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - 25).tanh()


def f26_h5(x):
    print("deep in f26", x.shape)
    return x + 5


def f26_h4(x):
    return f26_h5(x * 2) - 4


def f26_h3(x):
    return f26_h4(x * 2) - 3


def f26_h2(x):
    return f26_h3(x * 2) - 2


def f26_h1(x):
    return f26_h2(x * 2) - 1


@torch.compile
def f26_chain(x):
    return f26_h1(x.sin()).sum()


class Head27(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 0 * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head27 = torch.compile(Head27())


@torch.compile
def f28_clean(x, w):
    h = torch.relu(x @ w + 28)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f29_print(x):
    y = x.sin() * 30.5
    print("f29_print", y.shape)
    return y.cos().sum()


@torch.compile
def f30_print(x):
    y = x.sin() * 31.5
    print("f30_print", y.shape)
    return y.cos().sum()


@torch.compile
def f31_clean(x, w):
    h = torch.relu(x @ w + 31)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f32_item(x):
    scale = x.abs().max().item()
    return x / (scale + 32)


@torch.compile
def f33_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * 33
    return x.relu()


@torch.compile
def f34_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * 34


@torch.compile
def f35_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - 35).tanh()


def f36_h5(x):
    print("deep in f36", x.shape)
    return x + 5


def f36_h4(x):
    return f36_h5(x * 2) - 4


def f36_h3(x):
    return f36_h4(x * 2) - 3


def f36_h2(x):
    return f36_h3(x * 2) - 2


def f36_h1(x):
    return f36_h2(x * 2) - 1


@torch.compile
def f36_chain(x):
    return f36_h1(x.sin()).sum()


class Head37(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 1 * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head37 = torch.compile(Head37())


@torch.compile
def f38_clean(x, w):
    h = torch.relu(x @ w + 38)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f39_print(x):
    y = x.sin() * 40.5
    print("f39_print", y.shape)
    return y.cos().sum()


@torch.compile
def f40_print(x):
    y = x.sin() * 41.5
    print("f40_print", y.shape)
    return y.cos().sum()


@torch.compile
def f41_clean(x, w):
    h = torch.relu(x @ w + 41)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f42_item(x):
    scale = x.abs().max().item()
    return x / (scale + 42)


@torch.compile
def f43_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * 43
    return x.relu()


@torch.compile
def f44_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * 44


@torch.compile
def f45_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - 45).tanh()


def f46_h5(x):
    print("deep in f46", x.shape)
    return x + 5


def f46_h4(x):
    return f46_h5(x * 2) - 4


def f46_h3(x):
    return f46_h4(x * 2) - 3


def f46_h2(x):
    return f46_h3(x * 2) - 2


def f46_h1(x):
    return f46_h2(x * 2) - 1


@torch.compile
def f46_chain(x):
    return f46_h1(x.sin()).sum()


class Head47(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 2 * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head47 = torch.compile(Head47())


@torch.compile
def f48_clean(x, w):
    h = torch.relu(x @ w + 48)
    return h.softmax(dim=-1).sum(dim=0)


@torch.compile
def f49_print(x):
    y = x.sin() * 50.5
    print("f49_print", y.shape)
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
f10_print(torch.randn(8))
f11_clean(torch.randn(4, 8), torch.randn(8, 8))
f12_item(torch.randn(8))
f13_branch(torch.randn(8))
f14_nonzero(torch.randn(8))
f15_explicit(torch.randn(8))
f16_chain(torch.randn(8))
head17(torch.randn(2, 16))
f18_clean(torch.randn(4, 8), torch.randn(8, 8))
f19_print(torch.randn(8))
f20_print(torch.randn(8))
f21_clean(torch.randn(4, 8), torch.randn(8, 8))
f22_item(torch.randn(8))
f23_branch(torch.randn(8))
f24_nonzero(torch.randn(8))
f25_explicit(torch.randn(8))
f26_chain(torch.randn(8))
head27(torch.randn(2, 16))
f28_clean(torch.randn(4, 8), torch.randn(8, 8))
f29_print(torch.randn(8))
f30_print(torch.randn(8))
f31_clean(torch.randn(4, 8), torch.randn(8, 8))
f32_item(torch.randn(8))
f33_branch(torch.randn(8))
f34_nonzero(torch.randn(8))
f35_explicit(torch.randn(8))
f36_chain(torch.randn(8))
head37(torch.randn(2, 16))
f38_clean(torch.randn(4, 8), torch.randn(8, 8))
f39_print(torch.randn(8))
f40_print(torch.randn(8))
f41_clean(torch.randn(4, 8), torch.randn(8, 8))
f42_item(torch.randn(8))
f43_branch(torch.randn(8))
f44_nonzero(torch.randn(8))
f45_explicit(torch.randn(8))
f46_chain(torch.randn(8))
head47(torch.randn(2, 16))
f48_clean(torch.randn(4, 8), torch.randn(8, 8))
f49_print(torch.randn(8))
