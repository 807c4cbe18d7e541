"""A small model with the graph breaks people hit most. Try: gbls check examples/demo.py"""

import torch
import torch.nn as nn


def log_stats(x):
    print("normalizing", x.shape)  # a print two calls deep breaks the caller's graph
    return x


def normalize(x):
    x = x - x.mean()
    return log_stats(x) / (x.std() + 1e-5)


@torch.compile
def preprocess(x):
    y = x.sin()
    z = normalize(y)
    return z.cos()


@torch.compile
def gate(x):
    if x.sum() > 0:  # data-dependent branch
        x = x + 1
    scale = x.abs().max().item()  # a Python scalar out of a tensor
    return x / scale


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > 0)  # output shape depends on the data
        return logits, keep


@torch.compile
def fused(x, y):  # no break: one graph
    return torch.relu(x * y + 1).sum(dim=0)


head = torch.compile(Head())
preprocess(torch.randn(8))
gate(torch.randn(8))
head(torch.randn(2, 16))
fused(torch.randn(4, 4), torch.randn(4, 4))
