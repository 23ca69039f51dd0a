"""Forgetting owners in the background: code that learns of a session's end where it cannot
wait (a connection's close callback) hands the owner over at once, and a task forgets it in
the State, in order, as long as the context is open."""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from mcp_toolbridge.state.port import State, StateUnavailable

log = logging.getLogger("mcp_toolbridge")


@asynccontextmanager
async def forgetting(state: State) -> AsyncIterator[Callable[[str], None]]:
    """A function that schedules ``state.forget(owner)`` without waiting; what is still
    scheduled when the context closes is dropped with the process's state."""
    send, receive = anyio.create_memory_object_stream[str](math.inf)
    async with anyio.create_task_group() as group, send:
        group.start_soon(_forget, state, receive)
        try:
            yield send.send_nowait
        finally:
            group.cancel_scope.cancel()


async def _forget(state: State, owners: MemoryObjectReceiveStream[str]) -> None:
    async with owners:
        async for owner in owners:
            try:
                await state.forget(owner)
            except StateUnavailable as exc:  # a shared store away: its keys expire by themselves
                log.warning("an ended session's state is left to expire: %s", exc.reason)
