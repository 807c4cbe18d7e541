"""The process table as the warm worker sees it: who descends from whom, and how to end them.

Linux only: processes are read from ``/proc``, and ``prctl`` and ``unshare`` come from libc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
from typing import Dict, List, Set

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def prctl(option: int, value: int) -> None:
    _libc.prctl(option, value, 0, 0, 0)


def unshare_network() -> bool:
    """Take the network away from this process where the kernel lets us (without bwrap)."""
    return any(_libc.unshare(flags) == 0 for flags in (CLONE_NEWNET, CLONE_NEWUSER | CLONE_NEWNET))


def owner(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def vm_size() -> int:
    """This process's mapped address space, in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def children_by_parent() -> Dict[int, List[int]]:
    """The live (not zombie) processes we can see, by parent pid."""
    children: Dict[int, List[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def subtree(children_of: Dict[int, List[int]], root: int) -> List[int]:
    """``root`` and all its live descendants."""
    found: List[int] = []
    seen: Set[int] = set()
    todo = [root]
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        found.append(pid)
        todo.extend(children_of.get(pid, []))
    return found


def send(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except OSError:
        pass


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
