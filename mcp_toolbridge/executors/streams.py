"""Draining a child's pipes without blocking it: bounded sinks and stderr line splitting."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import anyio

MAX_STDERR_LINE_BYTES = 64 * 1024
"""Longer stderr lines are not offered to ``on_stderr_line``; they stay plain stderr text."""
READ_SIZE = 256 * 1024

OutputFn = Callable[[int], None]
"""Told the size of each chunk of output read (stdout or stderr)."""

StderrLineFn = Callable[[bytes], Awaitable[bool]]
"""Called with each complete stderr line (newline stripped); True means the line was consumed
and is kept out of ``stderr_tail``."""


class Sink:
    """Counts everything, keeps the head (stdout) or the tail (stderr) up to ``limit``."""

    __slots__ = ("data", "dropped", "keep_tail", "limit", "on_output", "total")

    def __init__(self, limit: int, *, keep_tail: bool, on_output: OutputFn | None = None) -> None:
        self.data = bytearray()
        self.limit = limit
        self.keep_tail = keep_tail
        self.total = 0
        self.dropped = False
        self.on_output = on_output

    def counted(self, size: int) -> None:
        self.total += size
        if self.on_output is not None:
            self.on_output(size)

    def take(self, chunk: bytes) -> None:
        """Count a chunk read from the pipe, and keep it if there is still a use for it."""
        self.counted(len(chunk))
        if self.keep_tail or not self.dropped:
            self.keep(chunk)

    def keep(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) <= room:
            self.data += chunk
        elif self.keep_tail:
            self.data += chunk[-self.limit :]
            del self.data[: len(self.data) - self.limit]
            self.dropped = True
        else:
            self.data += chunk[: max(room, 0)]
            self.dropped = True


async def drain(fd: int, sink: Sink, lines: LineSplitter | None = None) -> None:
    """Read ``fd`` (non-blocking) to its end into ``sink``, through ``lines`` when stderr lines
    are watched.

    After each wait it reads twice: the chunk the wait announced, then, without waiting, what
    came next. A tool that writes its answer and exits has usually closed its end by then, so
    the pipe's end costs no second wait (under uvloop a wait is about 12 µs and 8 system calls,
    a read that finds nothing one). Never more than two reads a wait: a flood still yields to
    the loop, and to the call's deadline, at every other chunk."""
    try:
        ended = False
        while not ended:
            await anyio.wait_readable(fd)
            for _ in range(2):
                try:
                    chunk = os.read(fd, READ_SIZE)
                except BlockingIOError:
                    break
                if not chunk:
                    ended = True
                    break
                if lines is None:
                    sink.take(chunk)
                else:
                    sink.counted(len(chunk))
                    await lines.feed(chunk)
        if lines is not None:
            await lines.finish()
    finally:
        if lines is not None and lines.pending:  # stopped mid-line (the deadline): keep it
            sink.keep(lines.pending)
            lines.pending = b""


class LineSplitter:
    """Feeds complete stderr lines to the callback; unconsumed bytes go to the tail."""

    def __init__(self, sink: Sink, on_line: StderrLineFn, max_output_bytes: int) -> None:
        self.sink = sink
        self.on_line = on_line
        self.max_output_bytes = max_output_bytes
        self.pending = b""
        self.overlong = False

    async def feed(self, chunk: bytes) -> None:
        if self.sink.total > self.max_output_bytes:  # a flood: stop parsing, keep the tail
            self.sink.keep(self.pending + chunk)
            self.pending = b""
            return
        buf = self.pending + chunk if self.pending else chunk
        start = 0
        while (end := buf.find(b"\n", start)) >= 0:
            await self._line(buf[start : end + 1])
            start = end + 1
        self.pending = buf[start:]
        if len(self.pending) > MAX_STDERR_LINE_BYTES:
            self.sink.keep(self.pending)
            self.pending = b""
            self.overlong = True

    async def finish(self) -> None:
        if self.pending:
            await self._line(self.pending)
            self.pending = b""

    async def _line(self, line: bytes) -> None:
        if self.overlong:
            self.overlong = False
        elif len(line) <= MAX_STDERR_LINE_BYTES and await self.on_line(line.rstrip(b"\r\n")):
            return
        self.sink.keep(line)
