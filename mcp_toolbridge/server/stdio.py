"""The stdio transport: newline-delimited JSON-RPC on the process's stdin and stdout.

It keeps the contract of the SDK's ``mcp.server.stdio.stdio_server`` (mcp 2.3): it yields a
read stream of ``SessionMessage | Exception`` and a write stream of ``SessionMessage``; a frame
is decoded as UTF-8 with replacement; a frame that fails validation still reaches the server as
an ``Exception`` item; while serving, fd 0 reads /dev/null and fd 1 writes to stderr, so
handlers and child processes can neither steal the client's frames nor corrupt the wire.

What it adds, because JSON-RPC 2.0 asks for an answer where the SDK stays silent:

- A frame that is not JSON gets -32700 (Parse error) with id null.
- A frame that is JSON but not a valid message gets -32600 (Invalid Request), carrying the
  frame's id when it has a ``method`` and a string or integer ``id``, else id null. So does a
  frame with a ``method`` and an ``id`` that is neither (``1.5``, ``true``, ``null``), which
  the SDK takes for a notification and ignores. A frame
  shaped like a response (``result`` or ``error``, no ``method``) is never answered: answering
  a response could start two peers trading errors.
- A frame longer than ``MAX_FRAME_BYTES`` is read to its newline and thrown away, never held
  whole; it gets -32600, with its id if its first 64 KiB show a ``method`` and an ``id``.

Blank lines are skipped without an answer. Frames end at ``\\n`` only (a ``\\r`` before it is
whitespace).

When stdin ends, the server is not told at once: every request already read still gets its
real answer, for up to ``EOF_GRACE_S`` seconds (a client that writes a burst and closes its
end is owed those answers). Meanwhile a request the server sends the client (a confirmation,
the roots) is answered at once with "Connection closed", since nothing can answer it any
more (a confirmation so cut off denies its call: the client could not ask). Then the read
stream ends, and calls still running are cancelled.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import BinaryIO, Literal

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent, ToolsListChanged
from mcp.shared.message import SessionMessage

from mcp_toolbridge.cache import Handoff, forget, take
from mcp_toolbridge.cache import Recorder as Recorder  # the server's run_stdio names it
from mcp_toolbridge.server.exchange import Exchange
from mcp_toolbridge.server.misread import reply_to_misread
from mcp_toolbridge.server.pipes import ReadLine, WriteAll, line_reader, writer

log = logging.getLogger("mcp_toolbridge")

MAX_FRAME_BYTES = 64 << 20
"""The longest frame (one line, without its newline) that is parsed: 64 MiB."""
_CHUNK_BYTES = 1 << 20
"""How much one blocking read may return; a frame is assembled from such chunks."""
_HEAD_BYTES = 64 << 10
"""How much of an oversized frame is kept to look for its id."""
EOF_GRACE_S = 10.0
"""After stdin ends, how long requests already read may run to send their answers."""

ReadItem = SessionMessage | Exception
Streams = tuple[MemoryObjectReceiveStream[ReadItem], MemoryObjectSendStream[SessionMessage]]


class FrameTooLargeError(ValueError):
    """The read stream's item for a frame longer than the limit (the SDK's place for a frame
    that could not be read as a message)."""


@asynccontextmanager
async def stdio_transport(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_frame_bytes: int = MAX_FRAME_BYTES,
    grace_s: float = EOF_GRACE_S,
    on_eof: Callable[[], None] | None = None,
    recorder: Recorder | None = None,
    bus: object = None,
) -> AsyncIterator[Streams]:
    """Serve the process's stdin and stdout (or the given binary streams, which are used as
    they are) until stdin ends and the requests read are answered (at most ``grace_s``
    later); yields ``(read_stream, write_stream)`` for ``Server.run``. ``on_eof`` is called
    when stdin ends, before the drain (calls still in flight after it are then ended by the
    shutdown). ``recorder`` keeps the session's opening (cache/opening.py); what a warm
    start's front answered before this process served (cache/front.py) is taken over: the
    bytes it read ahead come first, the messages it answered are given to the server again
    and the server's answers to them are not written (they were), only compared. ``bus``:
    the server's listen streams' bus; a :class:`StaleList` is told when a 2026 list the
    front sent differs from the server's."""
    restores: list[Callable[[], None]] = []
    handoff = take() if stdin is None else None
    try:
        if stdin is None:
            stdin = _claim(0, sys.stdin.buffer, "rb", _stdin_diversion, restores)
        if stdout is None:
            sys.stdout.flush()
            stdout = _claim(1, sys.stdout.buffer, "wb", _stdout_diversion, restores)
        if handoff is not None:
            readline = line_reader(stdin, restores, handoff.pending, handoff.ended)
        else:
            readline = line_reader(stdin, restores)
        write = writer(stdout, restores)
        seen = _Seen(recorder, handoff, bus if isinstance(bus, StaleList) else None)
        to_server, from_client = anyio.create_memory_object_stream[ReadItem](0)
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        async with anyio.create_task_group() as tg:
            exchange = Exchange(to_server, tg.start_soon, grace_s)
            tg.start_soon(
                _read_frames,
                readline,
                to_server,
                to_client.clone(),
                max_frame_bytes,
                exchange,
                seen,
                on_eof,
            )
            tg.start_soon(_write_frames, write, from_server, exchange, seen)
            yield from_client, to_client
    finally:
        if recorder is not None:
            recorder.save()  # what was answered of the opening (a client gone after its list)
        with suppress(OSError, ValueError):
            sys.stdout.flush()  # what a handler printed while serving goes to stderr, not the wire
        for restore in reversed(restores):
            restore()


async def _read_frames(
    readline: ReadLine,
    to_server: MemoryObjectSendStream[ReadItem],
    to_client: MemoryObjectSendStream[SessionMessage],
    limit: int,
    exchange: Exchange,
    seen: _Seen,
    on_eof: Callable[[], None] | None = None,
) -> None:
    parts: list[bytes] = []
    size = 0
    head: bytes | None = None  # the frame's start, once it is known to be too long
    try:
        async with to_server, to_client:
            for text in seen.replays():  # what the front answered, to the server first
                await _pass_on(text, to_server, to_client, exchange, seen)
            while True:
                chunk = await readline(_CHUNK_BYTES)
                ended = chunk.endswith(b"\n")
                if head is None:
                    parts.append(chunk)
                    size += len(chunk)
                    if size - int(ended) > limit:
                        head = parts[0][:_HEAD_BYTES]
                        parts.clear()
                if not ended and chunk:
                    continue
                if head is not None:
                    log.warning("dropped a stdin frame longer than %d bytes", limit)
                    reply = reply_to_oversized(head, limit)
                    if reply is not None:
                        await to_client.send(SessionMessage(reply))
                    await to_server.send(FrameTooLargeError(f"frame longer than {limit} bytes"))
                elif size:
                    text = b"".join(parts).decode("utf-8", errors="replace")
                    parts.clear()
                    await _pass_on(text, to_server, to_client, exchange, seen)
                parts.clear()
                size, head = 0, None
                if not chunk:
                    if seen.recorder is not None:
                        seen.recorder.close()  # a client that lists and leaves kills us soon
                    if on_eof is not None:
                        on_eof()
                    await exchange.drain()
                    return
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        log.debug("the server stopped reading; stdin is no longer read")


async def _pass_on(
    text: str,
    to_server: MemoryObjectSendStream[ReadItem],
    to_client: MemoryObjectSendStream[SessionMessage],
    exchange: Exchange,
    seen: _Seen,
) -> None:
    """One frame: a message to the server, or an answer to the client and the SDK's
    ``Exception`` item to the server."""
    if text.isspace():
        return
    if seen.recorder is not None:
        seen.recorder.read(text)
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except Exception as exc:  # the SDK's transport catches the same
        reply = reply_to_invalid(text)
        if reply is not None:
            await to_client.send(SessionMessage(reply))
        await to_server.send(exc)
        return
    if isinstance(message, types.JSONRPCNotification) and '"id"' in text:
        reply = reply_to_misread(text)
        if reply is not None:  # a request with an id the SDK dropped: not a notification
            await to_client.send(SessionMessage(reply))
            await to_server.send(ValueError(reply.error.message))
            return
    if seen.stale is not None and getattr(message, "method", None) == "tools/list":
        seen.stale.stale = False  # listed again: what it gets now is the server's own
    exchange.read(message)
    await to_server.send(SessionMessage(message))


async def _write_frames(
    write: WriteAll,
    from_server: MemoryObjectReceiveStream[SessionMessage],
    exchange: Exchange,
    seen: _Seen,
) -> None:
    async with from_server:
        async for item in from_server:
            line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            if seen.recorder is not None:
                seen.recorder.written(line)
            if not seen.answered_before(item.message, line):
                await write(line.encode())
            elif seen.list_changed:  # the list sent is not the one served: say so (2025)
                seen.list_changed = False
                await write(LIST_CHANGED)
            elif seen.stale is not None and seen.stale.stale:  # 2026: on its listen streams
                await seen.stale.publish(ToolsListChanged())
            exchange.written(item.message)


LIST_CHANGED = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
MODERN_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


class _Seen:
    """The session's opening: kept by the recorder, and what a front answered before."""

    def __init__(
        self, recorder: Recorder | None, handoff: Handoff | None, stale: StaleList | None = None
    ) -> None:
        self.recorder = recorder
        self.stale = stale
        self._handoff = handoff
        replayed = handoff.replayed if handoff is not None else []
        self._sent = {i: r for _, i, r in replayed if i}
        self._lines = {i: line for line, i, _ in replayed if i}
        self.list_changed = False
        """A tools/list of a 2025 session was answered otherwise now (a manifest changed
        between the front's check and the load): the client is told to list again."""

    def replays(self) -> list[str]:
        return [line for line, _, _ in self._handoff.replayed] if self._handoff else []

    def answered_before(self, message: types.JSONRPCMessage, line: str) -> bool:
        """Whether ``message`` answers a request the front answered (then it is not written:
        when it differs from what was sent, the opening is forgotten, as wrong)."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        if not isinstance(message.id, str) or message.id not in self._sent:
            return False
        sent = self._sent.pop(message.id)
        try:
            same = sent is not None and json.loads(line).get("result") == json.loads(sent)
        except ValueError:
            same = False
        if not same and self._handoff is not None:
            log.warning("the start-up cache's opening was answered otherwise now; forgotten")
            forget(self._handoff.folder, self._handoff.name)
            request = json.loads(self._lines[message.id])
            meta = (request.get("params") or {}).get("_meta") or {}
            legacy = MODERN_VERSION_KEY not in meta
            self.list_changed = request.get("method") == "tools/list" and legacy
            if request.get("method") == "tools/list" and not legacy and self.stale is not None:
                self.stale.stale = True
        return True


class StaleList(InMemorySubscriptionBus):
    """The listen streams' bus of a stdio server whose front may answer a 2026 client's
    list. A 2026-07-28 client hears of a change only on a listen stream, and one it opens
    after the server found the front's list differed from its own would hear nothing: until
    the client lists again, every stream that opens is given ``tools/list_changed`` first
    (buffered before its acknowledgement, which still comes first), so it lists again."""

    def __init__(self) -> None:
        super().__init__()
        self.stale = False
        """The client holds a list the server would not answer (till its next tools/list)."""

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        if self.stale:
            listener(ToolsListChanged())
        return unsubscribe


def reply_to_invalid(text: str) -> types.JSONRPCError | None:
    """The answer to a frame the SDK could not validate; None for a malformed response."""
    try:
        frame = json.loads(text)
    except (ValueError, RecursionError):
        return _error(None, types.PARSE_ERROR, "Parse error: the frame is not JSON")
    if not isinstance(frame, dict):
        return _error(None, types.INVALID_REQUEST, "Invalid Request: a message is a JSON object")
    if "method" not in frame and ("result" in frame or "error" in frame):
        return None
    request_id = _usable_id(frame.get("id")) if "method" in frame else None
    return _error(request_id, types.INVALID_REQUEST, f"Invalid Request: {_why_invalid(frame)}")


def reply_to_oversized(head: bytes, limit: int) -> types.JSONRPCError | None:
    """The answer to a frame longer than ``limit``, from what its start shows."""
    keys, found = _leading_members(head.decode("utf-8", errors="replace"))
    if "method" not in keys and ("result" in keys or "error" in keys):
        return None
    request_id = _usable_id(found) if "method" in keys else None
    message = f"Invalid Request: the frame is longer than {limit} bytes"
    return _error(request_id, types.INVALID_REQUEST, message)


def _why_invalid(frame: dict[str, object]) -> str:
    if frame.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if "method" not in frame:
        return "neither a request, a notification nor a response"
    if not isinstance(frame["method"], str):
        return "method must be a string"
    if "id" in frame and _usable_id(frame["id"]) is None:
        return "id must be a string or an integer"
    params = frame.get("params")
    if params is not None and not isinstance(params, dict):
        return "params must be an object"
    return "not a valid JSON-RPC 2.0 message"


def _leading_members(text: str) -> tuple[set[str], object]:
    """The keys of the top-level object that can be read from the start of a frame, and the
    value of its ``id`` if that was among them."""
    decoder = json.JSONDecoder()
    keys: set[str] = set()
    found: object = None
    i = _skip_space(text, 0)
    if not text.startswith("{", i):
        return keys, None
    i += 1
    with suppress(ValueError, RecursionError):
        while True:
            key, i = decoder.raw_decode(text, _skip_space(text, i))
            if not isinstance(key, str):
                break
            keys.add(key)
            i = _skip_space(text, i)
            if not text.startswith(":", i):
                break
            value, i = decoder.raw_decode(text, _skip_space(text, i + 1))
            if key == "id":
                found = value
            i = _skip_space(text, i)
            if not text.startswith(",", i):
                break
            i += 1
    return keys, found


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _usable_id(value: object) -> int | str | None:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    return None


def _error(request_id: int | str | None, code: int, message: str) -> types.JSONRPCError:
    error = types.ErrorData(code=code, message=message)
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _claim(
    fd: int,
    buffer: BinaryIO,
    mode: Literal["rb", "wb"],
    diversion: Callable[[], int],
    restores: list[Callable[[], None]],
) -> BinaryIO:
    """Serve fd's wire from a private duplicate while fd itself points at ``diversion()``;
    adds the undo to ``restores``. Falls back to ``buffer`` in place when it is not backed by
    fd or a descriptor cannot be moved."""
    try:
        if buffer.fileno() != fd:
            return buffer
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    except (AttributeError, OSError, ValueError):
        return buffer
    try:
        diverted = diversion()
        try:
            os.dup2(diverted, fd)
        finally:
            os.close(diverted)
    except OSError:
        os.close(private)
        return buffer

    def restore() -> None:
        with suppress(OSError):
            os.dup2(private, fd)

    restores.append(restore)
    # Never closed: a worker thread may still be blocked reading it after the transport ends.
    return os.fdopen(private, mode, closefd=False)


def _stdin_diversion() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stdout_diversion() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)
