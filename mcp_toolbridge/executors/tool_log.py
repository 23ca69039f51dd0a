"""A running tool's own voice: the lines it writes to stderr, sent to the client as they are
written (MCP ``notifications/message``, level ``info``, logger = the tool's MCP name).

Only when the client listens (:class:`~mcp_toolbridge.host.CallLog`): nothing is queued, cut
or counted for a client that asked for no log at that level. Each line has every secret value
of the call replaced by ``[redacted:<id>]`` (as in the result), then is cut to
``MAX_LINE_CHARS``; blank lines are skipped. With the secret scan on (the call's
``redact_cut``), a line cut is redacted with up to ``CUT_MARGIN_CHARS`` of what follows the
cut before it is cut (in a worker thread, as the line is sent), so a token the cut would split
is still recognised. At most ``LINE_BURST`` lines at once, then
``LINES_PER_S`` a second, are sent per call: lines over that (or over the small queue a slow
client fills) are counted, and the count is sent once when the call ends, as are the lines of
the progress channel that were not understood. The lines never reach the audit log, and the
result keeps stderr as it always did.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

import anyio

from mcp_toolbridge.executors.cuts import Pending, pending, sent
from mcp_toolbridge.executors.progress import FLUSH_LIMIT_S, Rate
from mcp_toolbridge.host import CallLog, LogLevel, RedactCut

log = logging.getLogger("mcp_toolbridge")

LINES_PER_S = 20.0
LINE_BURST = 100
QUEUE_LINES = LINE_BURST
"""Lines waiting for a slow client (cut: at most ~200 KB); more are counted as not sent, so
the child never waits."""
CHANNEL_ENV_HINT = "TOOLBRIDGE_PROGRESS_FD"


def _same(text: str) -> str:
    return text


class ToolLog:
    """The log lines of one running call (see the module doc)."""

    def __init__(
        self,
        sink: CallLog | None,
        logger: str,
        redact: Callable[[str], str] = _same,
        *,
        redact_cut: RedactCut | None = None,
        per_s: float = LINES_PER_S,
        burst: int = LINE_BURST,
    ) -> None:
        self._sink = sink
        self._logger = logger
        self._redact = redact
        self._redact_cut = redact_cut
        self._rate = Rate(per_s, burst)
        self._queue: deque[tuple[LogLevel, Pending]] = deque()
        self._wake = anyio.Event()
        self._scope: anyio.CancelScope | None = None
        self._stopped_at: float | None = None
        self.dropped = 0
        """Lines not sent: over the rate, or while the queue was full."""
        self.malformed = 0
        """Lines of the progress channel that were not understood (ignored)."""

    def wants(self, level: LogLevel) -> bool:
        """Whether a line at ``level`` would reach the client now."""
        return self._sink is not None and self._sink.wants(level)

    def line(self, level: LogLevel, text: str) -> None:
        """Queue one line for the client; never blocks."""
        if not self.wants(level) or not text.strip():
            return
        if not self._rate.take():
            self.dropped += 1
            return
        if len(self._queue) >= QUEUE_LINES or self._stopped_at is not None:
            self.dropped += 1
            return
        line = pending(self._redact(text.rstrip("\r\n")), self._redact_cut)
        self._queue.append((level, line))
        self._wake.set()

    async def stderr_line(self, raw: bytes) -> bool:
        """The ``on_stderr_line`` hook of the process runner: the line is sent at ``info``
        and stays in the stderr tail (False: not consumed)."""
        self.line("info", raw.decode("utf-8", "replace"))
        return False

    def stop(self) -> None:
        self._wake.set()
        self._stopped_at = anyio.current_time()
        if self._scope is not None:
            self._scope.deadline = self._stopped_at + FLUSH_LIMIT_S

    async def serve(self) -> None:
        with anyio.CancelScope() as self._scope:
            if self._stopped_at is not None:
                self._scope.deadline = self._stopped_at + FLUSH_LIMIT_S
            while True:
                while self._queue:
                    level, line = self._queue.popleft()
                    await self._send(level, await sent(line, self._redact_cut))
                if self._stopped_at is not None:
                    break
                await self._wake.wait()
                self._wake = anyio.Event()
            if self.dropped:
                await self._send(
                    "warning",
                    f"{self.dropped} more log line(s) of this call were not sent (more than "
                    f"{LINES_PER_S:g} a second); the result keeps the end of stderr",
                )
            if self.malformed:
                await self._send(
                    "warning",
                    f"{self.malformed} line(s) on the progress channel ({CHANNEL_ENV_HINT}) "
                    'were ignored: each line must be a JSON object like {"progress": 1, '
                    '"total": 10, "message": "..."} or {"log": "text", "level": "info"}',
                )

    async def _send(self, level: LogLevel, text: str) -> None:
        if self._sink is not None and self._sink.wants(level):
            await self._sink.send(level, text, logger=self._logger)
