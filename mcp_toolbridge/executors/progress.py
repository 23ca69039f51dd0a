"""Progress of a running call: how long it has run and how much output it has produced.

When the client asked for progress (the request's progress callback is set: MCP sends it only
for a request that carried a progressToken), a call that is still running after
``FIRST_BEAT_S`` gets one ``notifications/progress`` every ``BEAT_S`` (at most two a second):
``progress`` is the seconds elapsed (so it increases with each notification), ``total`` is
unknown, and the message says the time and the output bytes so far. Manifest process tools,
HTTP tools and bash use it, each counting its own output (:meth:`Heartbeat.count`).

A tool that reports progress itself (an exec tool's ``{"progress": ...}`` stderr lines) takes
over: from its first report on, no more heartbeats are sent and its own values pass
unchanged, so they should start above the seconds already reported when they start late.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio

from mcp_toolbridge.host import ProgressFn

log = logging.getLogger("mcp_toolbridge")

FIRST_BEAT_S = 1.0
BEAT_S = 0.5

T = TypeVar("T")


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


class Heartbeat:
    """Counts a call's output and reports it with the elapsed time (see the module doc)."""

    def __init__(
        self,
        progress: ProgressFn | None,
        *,
        first_s: float = FIRST_BEAT_S,
        every_s: float = BEAT_S,
    ) -> None:
        self._progress = progress
        self._first_s = first_s
        self._every_s = every_s
        self._started = anyio.current_time()
        self._own = False
        self.bytes = 0
        """Output bytes so far (stdout and stderr, or the response body)."""

    def count(self, size: int) -> None:
        self.bytes += size

    @property
    def own(self) -> ProgressFn | None:
        """The callback for the tool's own progress reports (None: nobody listens)."""
        return self._forward if self._progress is not None else None

    async def _forward(self, current: float, total: float | None, message: str | None) -> None:
        self._own = True
        if self._progress is not None:
            await self._progress(current, total, message)

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work()``, with heartbeats beside it while it runs."""
        if self._progress is None:
            return await work()
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._beat, self._progress)
            try:
                value = await work()
            except Exception as exc:  # raised as it is, not in the task group's ExceptionGroup
                failure = exc
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        return value

    async def _beat(self, progress: ProgressFn) -> None:
        await anyio.sleep(self._first_s)
        while not self._own:
            elapsed = anyio.current_time() - self._started
            message = f"running for {elapsed:.1f} s; {_size(self.bytes)} of output so far"
            try:
                await progress(round(elapsed, 1), None, message)
            except Exception:  # a client gone away must not fail the call
                log.debug("could not send a progress notification", exc_info=True)
                return
            await anyio.sleep(self._every_s)
