"""What /proc says about processes: who still runs with a marker, and how much memory a
process holds. Linux only, like the process-group guarantees these checks prove."""

from __future__ import annotations

import os
from collections.abc import Iterable

import anyio

from mcp_toolbridge.sandbox.warm import ZYGOTE_INSIDE


def _stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state first), None once the
    process is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _state(pid: str) -> str | None:
    fields = _stat(pid)
    return fields[0] if fields else None


def alive_with(marker: str, *, exclude: Iterable[int] = (), warm: bool = False) -> list[int]:
    """Live processes (zombies skipped: PID 1 here never reaps) whose command line holds
    ``marker``, other than ``exclude``. A server's warm sandboxes (bubblewrap around the
    zygote, waiting for the next call: sandbox/warm.py) are its own, not a call's leftovers:
    they count only with ``warm`` (after the server has exited, they must be gone too)."""
    skip = {str(pid) for pid in exclude} | {str(os.getpid())}
    needle = marker.encode()
    pool = ZYGOTE_INSIDE.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or entry in skip:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        if pool in cmdline and not warm:
            continue
        if needle in cmdline and _state(entry) not in (None, "Z", "X"):
            found.append(int(entry))
    return found


async def wait_gone(
    marker: str, within_s: float, *, exclude: Iterable[int] = (), warm: bool = False
) -> None:
    """Return once no live process carries ``marker`` (warm sandboxes: as ``alive_with``
    says); fail after ``within_s`` seconds."""
    excluded = tuple(exclude)
    with anyio.fail_after(within_s):
        # Polling /proc: no event tells one process that an unrelated one has exited.
        while alive_with(marker, exclude=excluded, warm=warm):  # noqa: ASYNC110
            await anyio.sleep(0.02)


async def keeps_warm_sandbox(server: int, within_s: float = 10.0) -> bool:
    """Whether ``server`` has a warm sandbox (bubblewrap around a zygote, its child). One is
    made beside the calls, which never wait for it: after the second call that needs it, or
    after a call that left it unusable, it may still be starting on a busy machine."""
    with anyio.move_on_after(within_s):
        # Polling /proc: no event tells this process that an unrelated one has started.
        while not any(  # noqa: ASYNC110
            parent_of(p) == server for p in alive_with(ZYGOTE_INSIDE, warm=True)
        ):
            await anyio.sleep(0.02)
        return True
    return False


def is_running(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    return _state(str(pid)) not in (None, "Z", "X")


def memory_kib(pid: int) -> dict[str, int]:
    """``VmRSS`` (resident now) and ``VmHWM`` (peak resident) of ``pid`` in KiB."""
    found: dict[str, int] = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
        for line in handle:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(rest.split()[0])
    return found


def parent_of(pid: int) -> int | None:
    """The parent of ``pid`` (as seen from here), None once it is gone."""
    fields = _stat(pid)
    return int(fields[1]) if fields else None


def process_group(pid: int) -> int | None:
    """The process group of ``pid`` (as seen from here), None once it is gone."""
    fields = _stat(pid)
    return int(fields[2]) if fields else None


def group_members(pgid: int) -> list[int]:
    """Live processes (zombies skipped) in process group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        fields = _stat(entry) if entry.isdigit() else None
        if fields and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            found.append(int(entry))
    return found
