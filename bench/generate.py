"""Write the benchmark's input files: 1, 10 and 50 compiled functions with a realistic mix of breaks.

Deterministic: the same sizes always give the same text, so the committed files under
``bench/files`` are what this writes (``python bench/generate.py`` rewrites them).

Function ``i`` has kind ``KINDS[i % len(KINDS)]``; every file of 10 or more functions has each
kind. Every compiled function is called once at module level with small real tensors, so that
``python file.py``, ``torch._dynamo.explain`` and gbls all run the same calls.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

FILES = Path(__file__).parent / "files"
SIZES = (1, 10, 50)
KINDS = ("print", "clean", "item", "branch", "nonzero", "graph_break", "chain", "module", "clean", "print")
CHAIN_DEPTH = 5


def _print(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_print(x):
    y = x.sin() * {i + 1}.5
    print("f{i}_print", y.shape)
    return y.cos().sum()
"""
    return code, f"f{i}_print(torch.randn(8))"


def _clean(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_clean(x, w):
    h = torch.relu(x @ w + {i})
    return h.softmax(dim=-1).sum(dim=0)
"""
    return code, f"f{i}_clean(torch.randn(4, 8), torch.randn(8, 8))"


def _item(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_item(x):
    scale = x.abs().max().item()
    return x / (scale + {i})
"""
    return code, f"f{i}_item(torch.randn(8))"


def _branch(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_branch(x):
    if x.sum() > 0:  # data-dependent branch
        x = x * {i}
    return x.relu()
"""
    return code, f"f{i}_branch(torch.randn(8))"


def _nonzero(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_nonzero(x):
    keep = torch.nonzero(x > 0)
    return keep.float().mean() + x.sum() * {i}
"""
    return code, f"f{i}_nonzero(torch.randn(8))"


def _graph_break(i: int) -> tuple[str, str]:
    code = f"""
@torch.compile
def f{i}_explicit(x):
    y = x.exp()
    torch._dynamo.graph_break()
    return (y - {i}).tanh()
"""
    return code, f"f{i}_explicit(torch.randn(8))"


def _chain(i: int) -> tuple[str, str]:
    """A compiled function whose print is CHAIN_DEPTH helpers deep."""
    last = CHAIN_DEPTH
    helpers = [
        f"""
def f{i}_h{last}(x):
    print("deep in f{i}", x.shape)
    return x + {last}
"""
    ]
    for depth in range(last - 1, 0, -1):
        helpers.append(
            f"""
def f{i}_h{depth}(x):
    return f{i}_h{depth + 1}(x * 2) - {depth}
"""
        )
    code = (
        "\n\n\n".join(h.strip() for h in helpers)
        + f"""


@torch.compile
def f{i}_chain(x):
    return f{i}_h1(x.sin()).sum()
"""
    )
    return code, f"f{i}_chain(torch.randn(8))"


def _module(i: int) -> tuple[str, str]:
    code = f"""
class Head{i}(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 8)

    def forward(self, x):
        logits = self.proj(x)
        keep = torch.nonzero(logits > {i % 3} * 0.1)  # output shape depends on the data
        return logits.relu(), keep


head{i} = torch.compile(Head{i}())
"""
    return code, f"head{i}(torch.randn(2, 16))"


TEMPLATES: dict[str, Callable[[int], tuple[str, str]]] = {
    "print": _print,
    "clean": _clean,
    "item": _item,
    "branch": _branch,
    "nonzero": _nonzero,
    "graph_break": _graph_break,
    "chain": _chain,
    "module": _module,
}


def source(count: int) -> str:
    plural = "s" * (count != 1)
    header = f'''"""gbls benchmark input: {count} compiled function{plural} (written by bench/generate.py)."""

# revision 0 (the benchmark edits this comment)
import torch
'''
    blocks, calls = [header.strip()], []
    for i in range(count):
        body, call = TEMPLATES[KINDS[i % len(KINDS)]](i)
        blocks.append(body.strip())
        calls.append(call)
    blocks.append("torch.manual_seed(0)\n" + "\n".join(calls))
    return "\n\n\n".join(blocks) + "\n"


def path_for(count: int) -> Path:
    return FILES / f"fns_{count:03d}.py"


def write(sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """Write the files that differ from what is on disk; return every file's path."""
    FILES.mkdir(exist_ok=True)
    paths = []
    for count in sizes:
        path = path_for(count)
        text = source(count)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in write():
        print(written.relative_to(Path.cwd()) if written.is_relative_to(Path.cwd()) else written)
    sys.exit(0)
