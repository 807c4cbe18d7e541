"""The resource limits of one analysis, set in its child before any user code runs."""

from __future__ import annotations

import os
import resource

from ..shared import processes
from ..shared.protocol import Settings

FILE_SIZE_LIMIT = 1 << 30
OPEN_FILES = 1024


def cpu_seconds(settings: Settings) -> int:
    return int(settings.timeout * 2) + 10


def apply(settings: Settings) -> None:
    # Relative to what the warm parent already has: the limit is what the analysis may add. It limits
    # the memory the analysis writes (its heap and private mappings), not the address space it maps:
    # CUDA reserves far more than any limit, and the outputs of graphs whose values are elided are
    # shared mappings the system fills only where they are written (``analysis.elision``).
    memory = settings.memory_mb * 1024 * 1024
    lower(resource.RLIMIT_DATA, processes.data_size() + memory)
    cpu = cpu_seconds(settings)
    lower(resource.RLIMIT_CPU, cpu, cpu + 5)  # SIGXCPU at the soft limit, SIGKILL at the hard one
    lower(resource.RLIMIT_CORE, 0)
    lower(resource.RLIMIT_FSIZE, FILE_SIZE_LIMIT)
    lower(resource.RLIMIT_NOFILE, OPEN_FILES)
    if os.getuid() != 0:  # the kernel does not apply RLIMIT_NPROC to root; the parent counts instead
        uid = os.getuid()
        mine = sum(1 for name in os.listdir("/proc") if name.isdigit() and processes.owner(name) == uid)
        lower(resource.RLIMIT_NPROC, mine + settings.max_processes)


def lower(kind: int, soft: int, hard: int | None = None) -> None:
    """Set a limit, never above the one already in force (raising it would be refused)."""
    current_soft, current_hard = resource.getrlimit(kind)

    def capped(value: int, cap: int) -> int:
        return value if cap == resource.RLIM_INFINITY else min(value, cap)

    new_hard = capped(soft if hard is None else hard, current_hard)
    resource.setrlimit(kind, (capped(capped(soft, current_soft), new_hard), new_hard))
