"""Reading lines from and writing to the stdio pipes on the event loop, without worker threads.

A worker thread per read and per write costs about 0.25 ms of a round trip (measured with
benchmarks/roundtrip.py). When stdin or stdout is a pipe or a socket, the transport switches its
private descriptor to non-blocking mode and waits for readiness on the event loop instead; any
other kind of file (a regular file, an in-memory stream in tests) keeps the blocking read or
write in a worker thread. Blocking mode is restored when serving ends.

A terminal as stdin (``serve`` typed at a shell) is waited for on the event loop too, and read
in the blocking mode it shares with the shell once it is readable: read in a worker thread, a
stop (Ctrl-C, SIGTERM) waited for the next line typed, since the thread cannot be abandoned.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import BinaryIO

import anyio

ReadLine = Callable[[int], Awaitable[bytes]]
"""readline(limit): up to ``limit`` bytes ending at a newline; b"" at end of input."""
WriteAll = Callable[[bytes], Awaitable[None]]


def _pollable_fd(stream: BinaryIO) -> int | None:
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError):
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None


def _non_blocking(fd: int, restores: list[Callable[[], None]]) -> None:
    os.set_blocking(fd, False)

    def restore() -> None:
        with suppress(OSError):
            os.set_blocking(fd, True)

    restores.append(restore)


class _PipeLines:
    """Lines from a non-blocking pipe, read in chunks and kept in a buffer."""

    def __init__(self, fd: int, pending: bytes = b"", ended: bool = False) -> None:
        self._fd = fd
        self._buffer = bytearray(pending)
        self._ended = ended

    async def readline(self, limit: int) -> bytes:
        while True:
            end = self._buffer.find(b"\n", 0, limit)
            if end >= 0 or len(self._buffer) >= limit or (self._ended and self._buffer):
                take = end + 1 if end >= 0 else min(limit, len(self._buffer))
                line = bytes(self._buffer[:take])
                del self._buffer[:take]
                return line
            if self._ended:
                return b""
            chunk = await self._chunk()
            if not chunk:
                self._ended = True
            self._buffer += chunk

    async def _chunk(self) -> bytes:
        while True:
            try:
                return os.read(self._fd, 1 << 16)
            except BlockingIOError:
                await anyio.wait_readable(self._fd)


class _TerminalLines(_PipeLines):
    """Lines from a terminal, left in blocking mode (the shell shares it): a read waits until
    the terminal is readable, and then returns what was typed at once."""

    async def _chunk(self) -> bytes:
        await anyio.wait_readable(self._fd)
        return os.read(self._fd, 1 << 16)


def _terminal_fd(stream: BinaryIO) -> int | None:
    try:
        fd = stream.fileno()
        return fd if os.isatty(fd) else None
    except (AttributeError, OSError, ValueError):
        return None


def line_reader(
    stream: BinaryIO, restores: list[Callable[[], None]], pending: bytes = b"", ended: bool = False
) -> ReadLine:
    """``readline`` for ``stream``: on the event loop for a pipe or a terminal, in a thread
    otherwise; ``pending`` (bytes read from a pipe before, up to its end when ``ended``) comes
    first."""
    fd = _pollable_fd(stream)
    if fd is None:
        assert not pending and not ended, "only a pipe is read ahead (cache/front.py)"
        if (terminal := _terminal_fd(stream)) is not None:
            return _TerminalLines(terminal).readline

        async def in_thread(limit: int) -> bytes:
            line: bytes = await anyio.to_thread.run_sync(stream.readline, limit)
            return line

        return in_thread
    _non_blocking(fd, restores)
    return _PipeLines(fd, pending, ended).readline


def writer(stream: BinaryIO, restores: list[Callable[[], None]]) -> WriteAll:
    """Write all of a frame to ``stream``: on the event loop for a pipe, in a thread
    otherwise. A closed reader raises BrokenPipeError, as a blocking write would."""
    fd = _pollable_fd(stream)
    if fd is None:

        def blocking(data: bytes) -> None:
            stream.write(data)
            stream.flush()

        async def in_thread(data: bytes) -> None:
            await anyio.to_thread.run_sync(blocking, data)

        return in_thread
    _non_blocking(fd, restores)

    async def on_loop(data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                await anyio.wait_writable(fd)
                continue
            view = view[written:]

    return on_loop
