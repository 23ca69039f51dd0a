"""How long the event loop is kept from running: a ticker task that sleeps a few milliseconds
at a time and records how late each wake-up is (a blocked loop wakes everyone late).

Late by our own doing, not the machine's: on a loaded machine the OS alone can keep a runnable
thread off every CPU for tens of milliseconds. Linux counts that wait for each thread
(``/proc/thread-self/schedstat``, its second field: nanoseconds spent runnable on a run queue),
and :func:`own_clock` is the wall clock minus it. A loop the process itself blocks still counts
in full: computing on the loop's thread is time on a CPU, and a blocking system call or a wait
for the GIL is time asleep; only waiting for a CPU while ready to run is left out. Where the
count cannot be read (not Linux) :func:`own_clock` is the wall clock."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.lowlevel

TICK_S = 0.005
_SCHEDSTAT = "/proc/thread-self/schedstat"


def queued_s() -> float:
    """Seconds the calling thread has spent ready to run but waiting for a CPU (0.0 where
    the kernel does not say)."""
    try:
        with open(_SCHEDSTAT, encoding="ascii") as handle:
            return int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def own_clock() -> float:
    """``time.perf_counter()`` less :func:`queued_s`: differences of two readings (in one
    thread) are the time that passed less the time the OS kept this thread from a CPU."""
    return time.perf_counter() - queued_s()


@dataclass
class Lag:
    worst_s: float = 0.0
    """The longest a wake-up came after it was due, on :func:`own_clock`."""
    ticks: int = 0


@asynccontextmanager
async def loop_lag(tick_s: float = TICK_S) -> AsyncIterator[Lag]:
    """Measure the loop's lag while the body runs (the ticker stops when it ends)."""
    lag = Lag()

    async def tick() -> None:
        while True:
            due = own_clock() + tick_s
            await anyio.sleep(tick_s)
            lag.worst_s = max(lag.worst_s, own_clock() - due)
            lag.ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await anyio.lowlevel.checkpoint()  # let the ticker take its first turn
        yield lag
        group.cancel_scope.cancel()
