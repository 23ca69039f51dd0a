"""The progress channel of a manifest exec tool: a pipe apart from stdout (the result) and
stderr (log lines), whose file descriptor the tool finds in ``TOOLBRIDGE_PROGRESS_FD``.

The tool writes JSON lines to it, each one of:

- ``{"progress": 50, "total": 100, "message": "halfway"}``: ``total`` and ``message`` are
  optional; passed on as ``notifications/progress`` when the client sent a progressToken
  (never going backwards, at a bounded rate: :class:`~.progress.Heartbeat`);
- ``{"log": "text", "level": "warning"}``: a log line at that level (``debug``, ``info``,
  ``notice``, ``warning`` or ``error``; default ``info``), sent like a stderr line
  (:class:`~.tool_log.ToolLog`).

A shell writes ``>"/dev/fd/$TOOLBRIDGE_PROGRESS_FD"``: the number is often above 9, which a
POSIX ``sh`` cannot name in a ``>&N`` redirection. Anything else (not JSON, not an object,
wrong types, a line over ``MAX_LINE_BYTES``) is ignored and counted, never an error. Messages
get the call's secrets redacted and are cut like log lines. A tool that never writes to the
descriptor is unaffected; the descriptor is there for every call of every exec tool, whether
or not the client listens (when nothing written there could reach the client during the call,
no progress token and no log level wanted, it is /dev/null: what is written vanishes, as
it would have unread, and no task reads it).

The pipe is read while the tool runs. Once the process is gone, our copy of the write end is
closed, so the rest is read to its end (for at most ``DRAIN_GRACE_S``, should a process that
left the process group still hold it: the process runner gives its pipes the same grace).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import anyio

from mcp_toolbridge.executors.cuts import pending
from mcp_toolbridge.executors.progress import Heartbeat
from mcp_toolbridge.executors.tool_log import ToolLog
from mcp_toolbridge.host import LogLevel, RedactCut

PROGRESS_FD_ENV = "TOOLBRIDGE_PROGRESS_FD"
MAX_LINE_BYTES = 64 * 1024
LINE_LEVELS: tuple[LogLevel, ...] = ("debug", "info", "notice", "warning", "error")
_READ_SIZE = 64 * 1024
DRAIN_GRACE_S = 0.2


def _number(value: object) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


class ProgressChannel:
    """The pipe of one call (see the module doc)."""

    def __init__(
        self,
        beat: Heartbeat,
        voice: ToolLog,
        redact: Callable[[str], str],
        *,
        listened: bool = True,
        redact_cut: RedactCut | None = None,
    ) -> None:
        """``listened`` False: nothing the tool writes here could reach anyone during this
        call (no progress token, no log level wanted, both fixed when the call starts), so
        the descriptor is /dev/null (writes vanish, never block) and :meth:`serve` returns
        at once: no pipe to read, no task reading it."""
        self._beat = beat
        self._voice = voice
        self._redact = redact
        self._redact_cut = redact_cut
        if listened:
            self._read, self._write = os.pipe()  # neither is inherited, but for pass_fds
            os.set_blocking(self._read, False)
        else:
            self._read, self._write = -1, _dev_null()
        self._pending = b""
        self._overlong = False
        self._scope: anyio.CancelScope | None = None
        self._stopped_at: float | None = None

    @property
    def fd(self) -> int:
        """The descriptor to pass to the child (``pass_fds``)."""
        return self._write

    @property
    def env(self) -> dict[str, str]:
        return {PROGRESS_FD_ENV: str(self._write)}

    def stop(self) -> None:
        """The process is gone: close our write end, so reading meets the end."""
        self._close_write()
        self._stopped_at = anyio.current_time()
        if self._scope is not None:
            self._scope.deadline = self._stopped_at + DRAIN_GRACE_S

    def close(self) -> None:
        self._close_write()
        if self._read >= 0:
            os.close(self._read)
            self._read = -1

    def _close_write(self) -> None:
        if self._write >= 0:
            if self._read >= 0:  # else the server's one /dev/null: kept for the next call
                os.close(self._write)
            self._write = -1

    async def serve(self) -> None:
        if self._read < 0:
            return
        with anyio.CancelScope() as self._scope:
            if self._stopped_at is not None:
                self._scope.deadline = self._stopped_at + DRAIN_GRACE_S
            while True:
                await anyio.wait_readable(self._read)
                try:
                    chunk = os.read(self._read, _READ_SIZE)
                except BlockingIOError:
                    continue
                if not chunk:
                    break
                self._feed(chunk)
        if self._pending and not self._overlong:
            self._line(self._pending)
        self._pending = b""

    def _feed(self, chunk: bytes) -> None:
        buf = self._pending + chunk if self._pending else chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            if self._overlong:  # the end of a line already counted
                self._overlong = False
            else:
                self._line(buf[start:end])
            start = end + 1
        self._pending = buf[start:]
        if len(self._pending) > MAX_LINE_BYTES:
            if not self._overlong:
                self._voice.malformed += 1
                self._overlong = True
            self._pending = b""

    def _line(self, raw: bytes) -> None:
        if len(raw) > MAX_LINE_BYTES:
            self._voice.malformed += 1
            return
        if not raw.strip():
            return
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if not (isinstance(event, dict) and self._dispatch(event)):
            self._voice.malformed += 1

    def _dispatch(self, event: dict[str, object]) -> bool:
        """Act on one understood line; False when it is not understood."""
        message = event.get("message")
        if "progress" in event:
            current = _number(event["progress"])
            total = _number(event.get("total"))
            if current is None or (event.get("total") is not None and total is None):
                return False
            if message is not None and not isinstance(message, str):
                return False
            if message is None:
                self._beat.report(current, total, None)
                return True
            shown, more = pending(self._redact(message), self._redact_cut)
            self._beat.report(current, total, shown, more=more)
            return True
        text = event.get("log")
        given = event.get("level", "info")
        level = next((known for known in LINE_LEVELS if known == given), None)
        if not isinstance(text, str) or level is None:
            return False
        self._voice.line(level, text)
        return True


_null: list[int] = []


def _dev_null() -> int:
    """The server's one descriptor of /dev/null for writing (close-on-exec, passed to each
    unheard call's command at its own number): opened once, not once a call."""
    if not _null:
        _null.append(os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC))
    return _null[0]
