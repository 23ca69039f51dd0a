"""How long the event loop is kept from running: a ticker task that sleeps a few milliseconds
at a time and records how late each wake-up is (a blocked loop wakes everyone late)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import anyio.lowlevel

TICK_S = 0.005


@dataclass
class Lag:
    worst_s: float = 0.0
    """The longest a wake-up came after it was due."""
    ticks: int = 0


@asynccontextmanager
async def loop_lag(tick_s: float = TICK_S) -> AsyncIterator[Lag]:
    """Measure the loop's lag while the body runs (the ticker stops when it ends)."""
    lag = Lag()

    async def tick() -> None:
        while True:
            due = time.perf_counter() + tick_s
            await anyio.sleep(tick_s)
            lag.worst_s = max(lag.worst_s, time.perf_counter() - due)
            lag.ticks += 1

    async with anyio.create_task_group() as group:
        group.start_soon(tick)
        await anyio.lowlevel.checkpoint()  # let the ticker take its first turn
        yield lag
        group.cancel_scope.cancel()
