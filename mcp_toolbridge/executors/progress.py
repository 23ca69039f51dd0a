"""Progress of a running call: how long it has run, how much output it has produced, and what
the tool itself reports.

When the client asked for progress (the request's progress callback is set: MCP sends it only
for a request that carried a progressToken), a call that is still running after
``FIRST_BEAT_S`` gets one ``notifications/progress`` every ``BEAT_S`` (at most two a second):
``progress`` is the seconds elapsed (so it increases with each notification), ``total`` is
unknown, and the message says the time and the output bytes so far. Manifest process tools,
HTTP tools and bash use it, each counting its own output (:meth:`Heartbeat.count`).

A tool that reports progress itself (a manifest exec tool's progress channel, see
:mod:`~mcp_toolbridge.executors.progress_channel`) takes over: from its first report on, no
more heartbeats are sent, and a tool whose manifest says it reports progress gets none at all
(``beats=False``), so its own scale never competes with the seconds. Both go out through one
sender, so the values never go backwards (MCP requires each notification's ``progress`` to be
larger than the last): a report at or below the last value sent or queued is skipped.
Reports are sent at a bounded rate (``REPORT_BURST`` at once, then ``REPORTS_PER_S`` a
second); reports that come too soon wait (at most ``REPORT_BURST`` of them; past that a newer
one replaces the newest waiting one), so the latest is never lost: what is still waiting when
the call ends is sent before its result.

:func:`run_beside` runs such companions (the heartbeat, a tool's log lines, the progress
channel) next to the work of a call.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

import anyio
import anyio.lowlevel

from mcp_toolbridge.executors.cuts import Pending, sent
from mcp_toolbridge.host import ProgressFn, RedactCut

log = logging.getLogger("mcp_toolbridge")

FIRST_BEAT_S = 1.0
BEAT_S = 0.5
REPORTS_PER_S = 10.0
REPORT_BURST = 10
FLUSH_LIMIT_S = 2.0
"""How long a companion may still send what is pending once the work has ended."""

T = TypeVar("T")


class Companion(Protocol):
    """Something that runs beside a call's work (see :func:`run_beside`)."""

    async def serve(self) -> None:
        """Run until :meth:`stop`, then send what is still pending (within
        ``FLUSH_LIMIT_S``) and return."""
        ...

    def stop(self) -> None:
        """The work has ended (or failed)."""
        ...


async def run_beside(work: Callable[[], Awaitable[T]], *companions: Companion) -> T:
    """``work()``, with ``companions`` serving beside it; when it ends they are stopped one
    after the other, in order (one that feeds the others, like the progress channel, comes
    first), and what they still have to send is sent before this returns. An exception of
    ``work`` is raised as it is (not in an ExceptionGroup), after the companions have
    finished."""
    if not companions:  # nothing beside it: no task group
        return await work()
    failure: Exception | None = None
    finished = [anyio.Event() for _ in companions]
    async with anyio.create_task_group() as tg:
        for companion, done in zip(companions, finished, strict=True):
            tg.start_soon(_serve, companion, done)
        try:
            value = await work()
        except Exception as exc:
            failure = exc
        finally:
            for companion, done in zip(companions, finished, strict=True):
                companion.stop()
                await done.wait()
    if failure is not None:
        raise failure
    return value


async def _serve(companion: Companion, done: anyio.Event) -> None:
    try:
        await companion.serve()
    finally:
        done.set()


class Rate:
    """A token bucket: ``burst`` at once, then ``per_s`` a second."""

    def __init__(self, per_s: float, burst: int) -> None:
        self._per_s = per_s
        self._burst = float(burst)
        self._tokens = float(burst)
        self._at = anyio.current_time()

    def _refill(self) -> None:
        now = anyio.current_time()
        self._tokens = min(self._burst, self._tokens + (now - self._at) * self._per_s)
        self._at = now

    def take(self) -> bool:
        self._refill()
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def wait_s(self) -> float:
        """Seconds until a token is there."""
        self._refill()
        return max(0.0, (1.0 - self._tokens) / self._per_s)


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} bytes"
    if count < 1024 * 1024:
        return f"{count / 1024:.1f} KB"
    return f"{count / (1024 * 1024):.1f} MB"


Report = tuple[float, float | None, str | None]


class Heartbeat:
    """Counts a call's output and reports progress (see the module doc)."""

    def __init__(
        self,
        progress: ProgressFn | None,
        *,
        first_s: float = FIRST_BEAT_S,
        every_s: float = BEAT_S,
        per_s: float = REPORTS_PER_S,
        burst: int = REPORT_BURST,
        beats: bool = True,
        redact_cut: RedactCut | None = None,
    ) -> None:
        """``beats``: send heartbeats until the tool's first report (False: the tool says it
        reports progress itself); ``redact_cut``: the call's, for a message cut as it is sent
        (:func:`~.tool_log.pending`)."""
        self._progress = progress
        self._redact_cut = redact_cut
        self._beats = beats
        self._first_s = first_s
        self._every_s = every_s
        self._started = anyio.current_time()
        self._rate = Rate(per_s, burst)
        self._own = False
        self._high: float | None = None
        """The highest value sent or waiting: nothing at or below it is sent."""
        self._pending: deque[tuple[float, float | None, Pending | None]] = deque()
        self._burst = burst
        self._wake = anyio.Event()
        self._stopping = False
        self.bytes = 0
        """Output bytes so far (stdout and stderr, or the response body)."""

    def count(self, size: int) -> None:
        self.bytes += size

    def report(
        self, current: float, total: float | None, message: str | None, *, more: int | None = None
    ) -> None:
        """The tool's own report; never blocks. Skipped when nobody listens or when it is not
        above the last value. ``more`` not None: ``message`` is to be cut as it is sent
        (:func:`~.cuts.pending`)."""
        if self._progress is None or (self._high is not None and current <= self._high):
            return
        self._own = True
        self._high = current
        if len(self._pending) >= self._burst:
            self._pending.pop()
        self._pending.append((current, total, (message, more) if message is not None else None))
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()

    async def run(self, work: Callable[[], Awaitable[T]]) -> T:
        """``work()``, with heartbeats beside it while it runs."""
        if self._progress is None:
            return await work()
        return await run_beside(work, self)

    async def serve(self) -> None:
        progress = self._progress
        if progress is None:
            return
        next_beat = self._started + self._first_s
        while not self._stopping:
            now = anyio.current_time()
            if self._pending and self._rate.take():
                if not await self._send_own(progress):
                    return
                continue
            beating = self._beats and not self._own
            if beating and now >= next_beat:
                if not await self._beat(progress, now):
                    return
                next_beat = now + self._every_s
                await anyio.lowlevel.checkpoint()  # a skipped beat sent nothing: yield anyway
                continue
            waits = [next_beat - now] if beating else []
            if self._pending:
                waits.append(self._rate.wait_s())
            with anyio.move_on_after(min(waits) if waits else float("inf")):
                await self._wake.wait()
            self._wake = anyio.Event()
        with anyio.move_on_after(FLUSH_LIMIT_S):  # the work has ended: what waits is due now
            while self._pending:
                if not await self._send_own(progress):
                    return

    async def _beat(self, progress: ProgressFn, now: float) -> bool:
        elapsed = round(now - self._started, 1)
        if self._high is not None and elapsed <= self._high:
            return True
        self._high = elapsed
        message = f"running for {elapsed:.1f} s; {_size(self.bytes)} of output so far"
        return await self._send(progress, (elapsed, None, message))

    async def _send_own(self, progress: ProgressFn) -> bool:
        """Send the tool's next report waiting, its message cut as it waited to be."""
        current, total, message = self._pending.popleft()
        shown = await sent(message, self._redact_cut) if message is not None else None
        return await self._send(progress, (current, total, shown))

    async def _send(self, progress: ProgressFn, report: Report) -> bool:
        """Send one notification; False when the client is gone (stop sending)."""
        try:
            await progress(*report)
        except Exception:  # a client gone away must not fail the call
            log.debug("could not send a progress notification", exc_info=True)
            self._progress = None
            return False
        return True
