"""The kernel's knobs, kept out of every sandbox's reach: which of /proc's kernel interfaces a
sandbox shows read-only or hides, decided once per process from what this kernel has and what
a sandboxed process could open (``HostView.kernel``, placed by ``bwrap.py`` after ``/proc``),
and ``/sys``, which no sandbox shows unless a grant of ``/`` does (then read-only).

A sandbox runs as the server's user, without capabilities: for a server run as root that is uid
0, the owner of these files, and the kernel checks only the owner on most of them.
"""

from __future__ import annotations

import itertools
import os
import stat

PROC_READ_ONLY = (
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/fs",
    "/proc/acpi",
    "/proc/asound",
    "/proc/scsi",
)
"""Kernel interfaces under /proc that a sandbox shows read-only (those this kernel has): what
container runtimes make read-only or mask. Without this a sandboxed process running as root (a
server run as root) opens ``/proc/sys/kernel/core_pattern`` or ``/proc/sys/vm/drop_caches`` and
writes them for the whole machine: the kernel checks only the file's owner there, no
capability. (bubblewrap itself makes ``/proc/irq`` and ``/proc/bus`` read-only where they are
writable; ``tests/sandbox/test_kernel.py`` sweeps all of /proc to hold it to that.)"""
PROC_HIDDEN = (
    "/proc/interrupts",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/sched_debug",
    "/proc/timer_list",
    "/proc/timer_stats",
)
"""Kernel files under /proc that a sandbox hides (a file that cannot be opened), as container
runtimes mask them: the host's interrupts, memory, timers, keys and other processes.
Only those a sandboxed process could open are hidden, and of ``PROC_READ_ONLY`` (but
``/proc/sys`` and ``/proc/sysrq-trigger``, always) only the folders holding a file it could
write: judged once (``HostView``) by each file's mode for this user and its groups without
capabilities, as the sandbox runs. Each mount costs bubblewrap about 0.1 ms a launch."""
SYS = "/sys"
_WALK_FOLDERS = 256


def kernel_mounts() -> tuple[tuple[str, ...], ...]:
    """The bubblewrap mounts (after ``--proc /proc``) that put the knobs out of reach here."""
    kernel = [("--ro-bind-try", p, p) for p in PROC_READ_ONLY if _writable_within(p)]
    kernel += [("--ro-bind", "/dev/null", p) for p in PROC_HIDDEN if _openable(p)]
    return tuple(kernel)


def kernel_path(path: str) -> bool:
    """Whether ``path`` is in /proc or /sys (a root there is never writable)."""
    return any(path == top or path.startswith(top + "/") for top in ("/proc", SYS))


def _openable(path: str) -> bool:
    """Whether a sandboxed process could open ``path``, for reading or writing."""
    return _permitted(path, stat.S_IROTH | stat.S_IWOTH)


def _writable_within(path: str) -> bool:
    """Whether a sandboxed process could write ``path`` or a file in it. ``/proc/sys`` (the
    sandbox's own namespaces' settings are there, writable) and ``/proc/sysrq-trigger`` always
    count, where they exist."""
    if path in ("/proc/sys", "/proc/sysrq-trigger"):
        return os.path.lexists(path)
    if not os.path.isdir(path):
        return _permitted(path, stat.S_IWOTH)
    for folder, _, files in itertools.islice(os.walk(path), _WALK_FOLDERS):
        if any(_permitted(os.path.join(folder, f), stat.S_IWOTH) for f in files):
            return True
    return False


def _permitted(path: str, bits: int) -> bool:
    """Whether the file's mode grants any of ``bits`` (given as the "other" bits) to a sandboxed
    process: this process's user and groups, without capabilities (a root server's tools are
    uid 0 without them: the owner's bits, not CAP_DAC_OVERRIDE, decide)."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    if info.st_uid == os.geteuid():
        bits <<= 6
    elif info.st_gid == os.getegid() or info.st_gid in os.getgroups():
        bits <<= 3
    return bool(info.st_mode & bits)
