"""The process table as the warm worker sees it, and what one analysis's process is allowed.

Linux only: processes are read from ``/proc``; ``prctl``, ``unshare``, ``mount`` and ``capset``
come from libc.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import signal
import socket
import struct

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MNT_DETACH = 2
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
IFREQ = "16sH22x"  # struct ifreq: the interface's name, then its flags (40 bytes on 64-bit Linux)
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def prctl(option: int, value: int) -> int:
    result: int = _libc.prctl(option, value, 0, 0, 0)
    return result


def unshare(flags: int) -> bool:
    return bool(_libc.unshare(flags) == 0)


def map_own_ids(uid: int, gid: int) -> None:
    """In a new user namespace, be who we were outside (instead of the overflow uid 65534)."""
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        except OSError:
            pass


def loopback_up() -> bool:
    """Bring up ``lo`` in this network namespace, where a new one has it down: 127.0.0.1 and ::1 are
    reachable (local distributed code, a gloo store), nothing outside is. Needs CAP_NET_ADMIN in it."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as handle:
            asked = struct.pack(IFREQ, b"lo", 0)
            flags = struct.unpack(IFREQ, fcntl.ioctl(handle, SIOCGIFFLAGS, asked))[1]
            fcntl.ioctl(handle, SIOCSIFFLAGS, struct.pack(IFREQ, b"lo", flags | IFF_UP))
    except OSError:
        return False
    return True


def mount_tmpfs(path: str, size: int) -> bool:
    options = f"size={size},mode=1777".encode()
    return bool(_libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0)


def mount_overlay(folder: str, upper: str, work: str) -> bool:
    """``folder`` read through, written to ``upper`` (``work``: overlayfs's own, on the same file system)."""
    options = f"lowerdir={folder},upperdir={upper},workdir={work}".encode()
    return bool(_libc.mount(b"overlay", folder.encode(), b"overlay", 0, options) == 0)


def detach(point: str) -> bool:
    """Unmount ``point`` from every path now; what still uses the file system keeps it."""
    return bool(_libc.umount2(point.encode(), MNT_DETACH) == 0)


def last_error() -> str:
    return os.strerror(ctypes.get_errno())


def mounts_under(folder: str) -> list[str]:
    """Mount points below ``folder`` (bwrap's views of workspace folders under /tmp), parents first."""
    points = []
    with open("/proc/self/mountinfo") as mountinfo:
        for line in mountinfo:
            point = line.split()[4].replace("\\040", " ")
            if point.startswith(folder.rstrip("/") + "/"):
                points.append(point)
    return sorted(set(points), key=len)


def bind(source: str, target: str) -> bool:
    return bool(_libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None) == 0)


def bind_read_only(source: str, target: str) -> bool:
    if not bind(source, target):
        return False
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY
    return bool(_libc.mount(b"none", target.encode(), None, flags, None) == 0)


def private_mounts() -> bool:
    """Mounts made from now on are this process's (and its children's) alone."""
    return bool(_libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> bool:
    """Give up every capability for good: none held, and with no_new_privs none regained by exec."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)  # bwrap sets it already; then the bounding set cannot matter
    for capability in range(64):
        prctl(PR_CAPBSET_DROP, capability)  # refused without CAP_SETPCAP: no_new_privs covers it
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    data = (_CapData * 2)()
    _libc.capset(ctypes.byref(_CapHeader(LINUX_CAPABILITY_VERSION_3, 0)), data)
    return capabilities() == (0, 0)


def capabilities() -> tuple[int, int]:
    """This process's (effective, permitted) capability masks."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("CapEff", "CapPrm"):
                found[name] = int(value.strip(), 16)
    return found.get("CapEff", 0), found.get("CapPrm", 0)


def owner(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def data_size() -> int:
    """This process's data (``VmData``: its data segment and private writable mappings), in bytes:
    what ``RLIMIT_DATA`` counts."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


def children_by_parent() -> dict[int, list[int]]:
    """The live (not zombie) processes we can see, by parent pid."""
    children: dict[int, list[int]] = {}
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


def subtree(children_of: dict[int, list[int]], root: int) -> list[int]:
    """``root`` and all its live descendants."""
    found: list[int] = []
    seen: set[int] = set()
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
