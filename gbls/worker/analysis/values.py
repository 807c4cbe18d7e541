"""Values described without running the program's code: what a compiled function was called with."""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch

SHORT_DTYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "bool": "bool",
}
SCALARS = (bool, int, float, complex, type(None))
MAX_ITEMS = 4  # shown of a container; the rest is counted


def describe_value(value: Any, depth: int = 0) -> str:
    """A short, safe description: tensors by dtype and shape, plain values as written, containers of
    those item by item, and anything else by its type's name alone. It runs inside the program's own
    call, so it never calls the program's code (no ``repr``, ``len`` or iteration of its objects)."""
    kind = type(value)
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).replace("torch.", "")
        return f"{SHORT_DTYPES.get(dtype, dtype)}[{', '.join(str(size) for size in value.shape)}]"
    if kind in SCALARS:
        return repr(value)
    if kind is str:
        return repr(value) if len(value) <= 24 else repr(value[:21]) + "..."
    if kind in (tuple, list, dict) and depth < 2:
        items = list(value.items()) if kind is dict else list(enumerate(value))
        shown = [
            (f"{key!r}: " if kind is dict and type(key) is str else "") + describe_value(item, depth + 1)
            for key, item in items[:MAX_ITEMS]
        ]
        if len(items) > MAX_ITEMS:
            shown.append(f"… {len(items) - MAX_ITEMS} more")
        brackets = "()" if kind is tuple else "[]" if kind is list else "{}"
        trailing = "," if kind is tuple and len(items) == 1 else ""
        return brackets[0] + ", ".join(shown) + trailing + brackets[1]
    return kind.__name__


def describe_arguments(frame: Any, own: types.CodeType | None, bound: bool = False) -> str:
    """Each argument of the call entering ``frame``, by name: ``input_ids: i64[2, 8], labels: None``.

    ``own``: the code the user wrote, when a decorator's ``wrapper(*args, **kwargs)`` is entered
    first; its parameter names name the positional arguments. ``bound``: the wrapper holds the
    object ``own`` is a method of, which is not among the positional arguments.
    """
    try:
        described = _arguments(frame, own, bound)
        return ", ".join(f"{name}: {describe_value(value)}" for name, value in described)
    except Exception:  # a tensor subclass that raises on .shape, say: say nothing rather than break
        return ""


def _arguments(frame: Any, own: types.CodeType | None, bound: bool) -> list[tuple[str, Any]]:
    code = frame.f_code
    f_locals = frame.f_locals
    count = code.co_argcount + code.co_kwonlyargcount
    names = list(code.co_varnames[:count])
    varargs = varkw = None
    index = count
    if code.co_flags & inspect.CO_VARARGS:
        varargs = code.co_varnames[index]
        index += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varkw = code.co_varnames[index]
    found = [(name, f_locals[name]) for name in names if name in f_locals]
    positional = f_locals.get(varargs, ()) if varargs else ()
    if type(positional) is tuple and positional:
        # ``wrapper(*args)`` entered first: the positions are the user's own parameters (``self``
        # first, for a bound method), after those the wrapper names itself.
        wanted = list(own.co_varnames[: own.co_argcount]) if own is not None and own is not code else []
        wanted = wanted[code.co_argcount + int(bound) :]
        for number, value in enumerate(positional):
            found.append((wanted[number] if number < len(wanted) else f"{varargs}[{number}]", value))
    keywords = f_locals.get(varkw, {}) if varkw else {}
    if type(keywords) is dict:
        found += [(str(name), value) for name, value in keywords.items()]
    return [(name, value) for name, value in found if name != "self"]
