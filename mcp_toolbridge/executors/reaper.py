"""Waiting for a sandbox to end: its PID namespace, followed from outside.

``bwrap`` is the direct child, but the command runs as PID 2 of the sandbox's own PID
namespace under bwrap's init (PID 1 there). When the command exits, bwrap exits at once and
its init is killed (``--die-with-parent``); the kernel then kills every process left in the
namespace (``setsid`` and double-forked ones included) and only reports the init as exited once
they are all gone. So the call waits for the init: bwrap writes its PID to ``--info-fd`` when
the sandbox starts, a pidfd is opened on it right away (the init cannot be reaped and its PID
reused before bwrap exits), and the call ends when that pidfd says the init has exited.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal

import anyio

INFO_LIMIT = 64 * 1024


async def follow_sandbox(info_fd: int) -> int | None:
    """A pidfd on the sandbox's init, from bwrap's ``--info-fd`` (read to its end: bwrap
    closes it once the sandbox is set up, or exits); None when there is nothing to follow."""
    os.set_blocking(info_fd, False)
    data = b""
    while len(data) < INFO_LIMIT:
        await anyio.wait_readable(info_fd)
        try:
            chunk = os.read(info_fd, 4096)
        except BlockingIOError:
            continue
        if not chunk:
            break
        data += chunk
    try:
        pid = json.loads(data)["child-pid"]
    except (ValueError, KeyError, TypeError):
        return None  # bwrap failed before the sandbox started: its exit status says why
    if not isinstance(pid, int) or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # already gone
        return None


async def wait_ended(pidfd: int, limit_s: float) -> None:
    """Return once the sandbox's init has exited (every process of the sandbox is gone), or
    after ``limit_s`` seconds (a process stuck in the kernel)."""
    with anyio.move_on_after(limit_s):
        await anyio.wait_readable(pidfd)


def end_now(bwrap: int, limit_s: float) -> None:
    """End the sandbox ``bwrap`` (a running bubblewrap's PID) runs, and return once every
    process in it is gone (or after ``limit_s``): SIGKILL to bwrap's group and to the
    sandbox's init, found as bwrap's child, whose exit the kernel reports only once the rest
    of its PID namespace is gone. Blocking, for a reload that must not serve its new tools
    while such a call can still write (sandbox/guard.py, ``Running``)."""
    init = _pidfd(_init_of(bwrap))
    try:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(bwrap, signal.SIGKILL)
        if init is None:  # no init yet, or gone already: bwrap's own end, then
            init = _pidfd(bwrap)
        else:
            with contextlib.suppress(ProcessLookupError, OSError):
                signal.pidfd_send_signal(init, signal.SIGKILL)
        if init is not None:
            select.select([init], [], [], limit_s)
    finally:
        if init is not None:
            os.close(init)


def _init_of(bwrap: int) -> int | None:
    """The PID of bwrap's child (the sandbox's init), if it has one now."""
    try:
        with open(f"/proc/{bwrap}/task/{bwrap}/children", encoding="ascii") as file:
            found = file.read().split()
    except OSError:
        return None
    return int(found[0]) if found else None


def _pidfd(pid: int | None) -> int | None:
    if pid is None:
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:
        return None
