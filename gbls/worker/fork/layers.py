"""A throwaway write layer for a run: the program writes where it would, and nothing reaches the disk.

Each folder the run may write in (the workspace, its working directory, the home folder for
``~/.cache``) is covered by an overlay in the analysis's own mount namespace: reads see the real
files, writes land in an upper layer in RAM, and the layer is gone when the analysis ends. The
layers' tmpfs is detached from every path once the overlays hold it, so the program sees no trace
of it. Needs CAP_SYS_ADMIN (and, as root under bwrap, CAP_DAC_OVERRIDE) in the namespace; the
caller drops every capability before the program runs.
"""

from __future__ import annotations

import os

from ..shared import processes

LAYER_BYTES = 1 << 30


def folders_to_cover(folders: list[str], scratch: str) -> list[str]:
    """The existing folders among ``folders``, without those inside another (one overlay covers both),
    and without any that holds the scratch directory (where the layers are made: writable already)."""
    real = sorted({os.path.realpath(folder) for folder in folders if folder and os.path.isdir(folder)})
    kept: list[str] = []
    for folder in real:
        if _inside(os.path.realpath(scratch), folder):
            continue
        if not any(_inside(folder, other) for other in kept):
            kept.append(folder)
    return kept


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def cover(folders: list[str], scratch: str) -> str:
    """Overlay each of ``folders`` with a layer of its own; "" on success, else what failed."""
    base = os.path.join(scratch, ".layers")
    os.makedirs(base, exist_ok=True)
    if not processes.mount_tmpfs(base, LAYER_BYTES):
        return f"no tmpfs for the layers ({processes.last_error()})"
    try:
        for number, folder in enumerate(folders):
            upper, work = os.path.join(base, str(number), "upper"), os.path.join(base, str(number), "work")
            os.makedirs(upper)
            os.makedirs(work)
            if not processes.mount_overlay(folder, upper, work):
                return f"no overlay on {folder} ({processes.last_error()})"
    finally:
        # The overlays keep their layers; no path leads to them any more.
        processes.detach(base)
        os.rmdir(base)
    return ""
