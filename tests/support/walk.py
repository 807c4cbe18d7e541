"""The gbls server, recording the walk of a save: ``python -m tests.support.walk OUT``.

From the ``didSave`` handler's call to the end of the publication of the analysis it started
(``Publishing.finished``), each call of a server module's function (``gbls/lsp``, ``gbls/runtime``)
that is handed the saved document — its URI, its analysis's key, its snapshot, the analysis to run,
the finished analysis — is written to OUT as JSON, in order: ``[[module, function, caller's module], ...]``
(the caller's file where it is not gbls's). A coroutine's resumption is no call: only its first
start counts.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from types import FrameType
from typing import Any

import gbls
from gbls.lsp.events import Finished
from gbls.lsp.server import serve
from gbls.lsp.snapshot import Snapshot
from gbls.runtime.session import Analysis, DocumentKey

PACKAGE = os.path.dirname(gbls.__file__)
RESUMABLE = inspect.CO_COROUTINE | inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR
SERVER = tuple(os.path.join(PACKAGE, part) + os.sep for part in ("lsp", "runtime"))


def module(filename: str) -> str:
    """``lsp/analyses`` for a file of gbls; "" for any other."""
    if not filename.startswith(PACKAGE + os.sep):
        return ""
    return os.path.relpath(filename, PACKAGE).removesuffix(".py")


def hands(frame: FrameType, uri: str) -> bool:
    """Whether the call of ``frame`` is handed the document ``uri``, in any of its forms."""
    code = frame.f_code
    for name in code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]:
        value = frame.f_locals.get(name)
        if isinstance(value, Finished | Analysis):
            value = value.key
        if isinstance(value, Snapshot):
            value = value.uri
        if isinstance(value, DocumentKey):
            value = value.name
        if isinstance(value, str) and value == uri:
            return True
    return False


def main(out: str) -> None:
    walk: list[list[str]] = []
    started: set[int] = set()  # coroutines and generators already begun
    alive: list[FrameType] = []  # kept, so that no frame's id is reused while recording
    recording = False
    saved = ""

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal recording, saved
        code = frame.f_code
        if event == "call" and code.co_name == "did_save" and module(code.co_filename) == "lsp/server":
            recording, saved = True, frame.f_locals["params"].text_document.uri
            walk.clear()
        if not recording:
            return
        if event == "return" and code.co_name == "finished" and module(code.co_filename) == "lsp/publishing":
            recording = False
            with open(out, "w") as file:
                json.dump(walk, file)
            return
        if event != "call" or not code.co_filename.startswith(SERVER):
            return
        if code.co_flags & RESUMABLE:  # its first start only
            if id(frame) in started:
                return
            started.add(id(frame))
            alive.append(frame)
        if hands(frame, saved) or code.co_name == "did_save":
            caller = frame.f_back.f_code.co_filename if frame.f_back is not None else ""
            name = getattr(code, "co_qualname", code.co_name)
            walk.append([module(code.co_filename), name, module(caller) or caller])

    sys.setprofile(profile)
    serve()


if __name__ == "__main__":
    main(sys.argv[1])
