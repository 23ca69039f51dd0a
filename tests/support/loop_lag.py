"""How long the event loop is kept from running: a ticker task that sleeps a few milliseconds
at a time and records how late each wake-up is (a blocked loop wakes everyone late).

Late by this process's doing, not the machine's: on a loaded machine the OS alone can keep a
runnable thread off every CPU for tens of milliseconds, and the loop's thread waits as long
for the GIL when the thread holding it is the one kept off. Linux counts those waits for each
thread (``/proc/self/task/*/schedstat``, its second field: nanoseconds spent runnable on a run
queue). :func:`held_s` is the time that passed less what every thread of the process waited so,
but never less than the CPU time the loop's thread used meanwhile: computing on the loop's
thread counts in full however busy the machine is, and so does a blocking system call (no
wait for a CPU comes with it). Where the kernel does not say (not Linux) it is the wall
clock."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.lowlevel

TICK_S = 0.005
_TASKS = "/proc/self/task"


def queued_s() -> float:
    """Seconds the threads of this process have spent ready to run but waiting for a CPU (0.0
    where the kernel does not say)."""
    total = 0
    try:
        threads = os.listdir(_TASKS)
    except OSError:
        return 0.0
    for thread in threads:
        try:
            with open(f"{_TASKS}/{thread}/schedstat", encoding="ascii") as handle:
                total += int(handle.read().split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the thread has ended (its waits no longer count)
    return total / 1e9


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment, as :func:`held_s` measures from it (taken on the loop's thread)."""

    wall: float
    queued: float
    cpu: float


def mark() -> Mark:
    return Mark(time.perf_counter(), queued_s(), time.thread_time())


def held_s(since: Mark) -> float:
    """The time since ``since`` less the process's waits for a CPU meanwhile, at least the CPU
    time this thread used (see the module docstring)."""
    now = mark()
    return max(now.wall - since.wall - (now.queued - since.queued), now.cpu - since.cpu)


@dataclass
class Lag:
    worst_s: float = 0.0
    """The longest a wake-up came after it was due, as :func:`held_s` counts."""
    ticks: int = 0


@asynccontextmanager
async def loop_lag(tick_s: float = TICK_S) -> AsyncIterator[Lag]:
    """Measure the loop's lag while the body runs (the ticker stops when it ends)."""
    lag = Lag()

    async def tick() -> None:
        while True:
            started = mark()
            await anyio.sleep(tick_s)
            lag.worst_s = max(lag.worst_s, held_s(started) - tick_s)
            lag.ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await anyio.lowlevel.checkpoint()  # let the ticker take its first turn
        yield lag
        group.cancel_scope.cancel()
