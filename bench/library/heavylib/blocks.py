"""gbls benchmark input: a library in HeavyBall's shape (written by bench/generate.py).

50 building blocks, each compiled by a decorator on its first call with dynamic=False (every new
shape recompiles) and run as it is inside compiled code; tests/test_blocks.py runs them in
50 tests."""

import functools

import torch

dynamic = False


def decorator(func, fullgraph=True):
    compiled = None

    @functools.wraps(func)
    def _fn(*args, **kwargs):
        if torch.compiler.is_compiling():
            return func(*args, **kwargs)
        nonlocal compiled
        if compiled is None:
            compiled = torch.compile(fullgraph=fullgraph, dynamic=dynamic)(func)
        return compiled(*args, **kwargs)

    return _fn


def decorator_no_fullgraph(func):
    return decorator(func, fullgraph=False)


no_compile_qr = torch.compiler.disable(torch.linalg.qr)


@decorator
def compiled_einsum(expr, *args):
    return torch.einsum(expr, *args)


def orthogonal_(x):
    if x.dim() == 2 and x.shape[0] == x.shape[1]:
        return no_compile_qr(x).Q
    return x / x.norm()


def copy_(target, source):
    target.copy_(source)


@decorator
def block0(xs, beta):
    for x in xs:
        x.mul_(beta).add_(0)
    return xs


@decorator
def block1(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 1


@decorator_no_fullgraph
def block2(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 2)
    return y.sum()


@decorator_no_fullgraph
def block3(x):
    y = x.sin() + 3
    print("block3")
    copy_(x, y)
    return x


@decorator
def block4(x):
    if x.dim() == 1:
        return
    x.mul_(4)


@decorator
def block5(xs, beta):
    for x in xs:
        x.mul_(beta).add_(5)
    return xs


@decorator
def block6(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 6


@decorator_no_fullgraph
def block7(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 7)
    return y.sum()


@decorator_no_fullgraph
def block8(x):
    y = x.sin() + 8
    print("block8")
    copy_(x, y)
    return x


@decorator
def block9(x):
    if x.dim() == 1:
        return
    x.mul_(9)


@decorator
def block10(xs, beta):
    for x in xs:
        x.mul_(beta).add_(10)
    return xs


@decorator
def block11(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 11


@decorator_no_fullgraph
def block12(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 12)
    return y.sum()


@decorator_no_fullgraph
def block13(x):
    y = x.sin() + 13
    print("block13")
    copy_(x, y)
    return x


@decorator
def block14(x):
    if x.dim() == 1:
        return
    x.mul_(14)


@decorator
def block15(xs, beta):
    for x in xs:
        x.mul_(beta).add_(15)
    return xs


@decorator
def block16(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 16


@decorator_no_fullgraph
def block17(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 17)
    return y.sum()


@decorator_no_fullgraph
def block18(x):
    y = x.sin() + 18
    print("block18")
    copy_(x, y)
    return x


@decorator
def block19(x):
    if x.dim() == 1:
        return
    x.mul_(19)


@decorator
def block20(xs, beta):
    for x in xs:
        x.mul_(beta).add_(20)
    return xs


@decorator
def block21(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 21


@decorator_no_fullgraph
def block22(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 22)
    return y.sum()


@decorator_no_fullgraph
def block23(x):
    y = x.sin() + 23
    print("block23")
    copy_(x, y)
    return x


@decorator
def block24(x):
    if x.dim() == 1:
        return
    x.mul_(24)


@decorator
def block25(xs, beta):
    for x in xs:
        x.mul_(beta).add_(25)
    return xs


@decorator
def block26(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 26


@decorator_no_fullgraph
def block27(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 27)
    return y.sum()


@decorator_no_fullgraph
def block28(x):
    y = x.sin() + 28
    print("block28")
    copy_(x, y)
    return x


@decorator
def block29(x):
    if x.dim() == 1:
        return
    x.mul_(29)


@decorator
def block30(xs, beta):
    for x in xs:
        x.mul_(beta).add_(30)
    return xs


@decorator
def block31(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 31


@decorator_no_fullgraph
def block32(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 32)
    return y.sum()


@decorator_no_fullgraph
def block33(x):
    y = x.sin() + 33
    print("block33")
    copy_(x, y)
    return x


@decorator
def block34(x):
    if x.dim() == 1:
        return
    x.mul_(34)


@decorator
def block35(xs, beta):
    for x in xs:
        x.mul_(beta).add_(35)
    return xs


@decorator
def block36(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 36


@decorator_no_fullgraph
def block37(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 37)
    return y.sum()


@decorator_no_fullgraph
def block38(x):
    y = x.sin() + 38
    print("block38")
    copy_(x, y)
    return x


@decorator
def block39(x):
    if x.dim() == 1:
        return
    x.mul_(39)


@decorator
def block40(xs, beta):
    for x in xs:
        x.mul_(beta).add_(40)
    return xs


@decorator
def block41(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 41


@decorator_no_fullgraph
def block42(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 42)
    return y.sum()


@decorator_no_fullgraph
def block43(x):
    y = x.sin() + 43
    print("block43")
    copy_(x, y)
    return x


@decorator
def block44(x):
    if x.dim() == 1:
        return
    x.mul_(44)


@decorator
def block45(xs, beta):
    for x in xs:
        x.mul_(beta).add_(45)
    return xs


@decorator
def block46(x):
    flat = x.reshape(x.shape[0], -1)
    return compiled_einsum("ij,kj->ik", flat, flat) * 46


@decorator_no_fullgraph
def block47(x):
    y = orthogonal_(x.reshape(x.shape[0], -1) + 47)
    return y.sum()


@decorator_no_fullgraph
def block48(x):
    y = x.sin() + 48
    print("block48")
    copy_(x, y)
    return x


@decorator
def block49(x):
    if x.dim() == 1:
        return
    x.mul_(49)
