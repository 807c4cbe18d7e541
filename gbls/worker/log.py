"""The worker's decisions, for whoever debugs gbls: ``GBLS_WORKER_LOG=1`` writes them to stderr.

Each line names the process (the warm parent, or an analysis's child) that decided. Not the
``logging`` module: the analysed program configures that one (its root handlers would print
gbls's records as the program's own output), and every logger that exists is visible to it.
In an analysis's child, stderr is the program's captured output: the log keeps its own copy of
the warm parent's stderr, taken before any child was forked.
"""

from __future__ import annotations

import os

# The real ones, taken before any user code runs: the analysed code may replace them.
_write = os.write
_getpid = os.getpid
_fd = os.dup(2) if os.environ.get("GBLS_WORKER_LOG", "") not in ("", "0") else None


def enabled() -> bool:
    return _fd is not None


def log(message: str) -> None:
    if _fd is None:
        return
    data = f"gbls worker [{_getpid()}]: {message}\n".encode("utf-8", "replace")
    try:
        while data:
            data = data[_write(_fd, data) :]
    except OSError:  # the reader went away: the log is for debugging, never a reason to fail
        pass
