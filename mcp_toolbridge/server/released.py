"""What a stateful HTTP session keeps of a request once it is answered, and of an answer once
it is sent: nothing (but what its event store keeps to resume, bounded: resume.py).

A session lives until its client ends it or its idle timeout (30 minutes by default), and
three things in it used to hold its last request or answer for all that time: the request's
body (the Starlette ``Request``, its cached ``_body``), the parsed message (its params, often
larger than the body), and the last answer. About twice the body per session: 4 MiB bodies
in the 10,000 sessions the SDK admits would hold some 80 GB (docs/security.md, "The HTTP
edge"); a tool's answer, up to ``--max-output`` and more.

- The SDK's receive loop (``JSONRPCDispatcher.run``: ``async for item in read_stream``)
  keeps its loop variable, the last ``SessionMessage`` (the parsed request, and metadata
  holding the ``Request``), while it awaits the next message. :class:`ReleasingReads` wraps
  the session's read stream: when the loop asks for the next message the one it handed out
  before is emptied, its request and metadata dropped. By then the dispatcher has taken what
  it needs (the handler's task holds the request until it is answered, then lets it go).
  :class:`ReleasingTransport` is the SDK's transport, serving its sessions through it.
- The transport's router (``message_router`` in ``StreamableHTTPServerTransport.connect``:
  ``async for session_message in write_stream_reader``) keeps the last message the session
  sent, often the answer to its last request (a tool's result: up to ``--max-output``),
  while it awaits the next one. :class:`ReleasingWrites` wraps the stream the session writes
  to: after each answer it passes the router :data:`PASSING`, a message holding nothing,
  which the router routes to no stream and the session's event store does not keep
  (resume.py, shared_events.py). It costs an answer one more turn of the router (about 30 us
  in-process). It is related to :data:`PASSING_STREAM`, which names no request: the router
  would deliver it to a request of that id in flight, or to a resumed stream of one, so the
  name is drawn at random as the server starts and shown nowhere (it was the fixed
  ``toolbridge/passing``: a request of that id got a ``toolbridge/passing`` notification on
  its stream after every other answer of its session).
- The server's own handle on each 2025 connection (to tell it ``list_changed`` and log
  messages outside a request) was the ServerSession of its latest request, which holds that
  request's dispatch context, and so its metadata. ``host.standing_session`` makes one on
  the connection's own channel instead, holding no request.
"""

from __future__ import annotations

import contextvars
import secrets
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCResponse

Read = SessionMessage | Exception

RELEASED = JSONRPCNotification(jsonrpc="2.0", method="toolbridge/released")
"""What an emptied SessionMessage holds instead of its request (nothing reads it again)."""
PASSING_STREAM = f"toolbridge/passing/{secrets.token_hex(16)}"
PASSING = SessionMessage(
    JSONRPCNotification(jsonrpc="2.0", method="toolbridge/passing"),
    metadata=ServerMessageMetadata(related_request_id=PASSING_STREAM),
)
"""What the transport's router is given after each answer, to hold instead of it."""


class _ClosedOnExit:
    """A stream that ``async with`` closes, as the SDK's stream protocols ask."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        await self.aclose()
        return None


class ReleasingReads(_ClosedOnExit):
    """A session's read stream (the SDK's ``ReadStream``), which empties each message it
    handed out once the next one is asked for, and forgets the sender's context with it."""

    def __init__(self, inner: ReadStream[Read]) -> None:
        self._inner = inner
        self._handed: SessionMessage | None = None
        self.last_context: contextvars.Context | None = None
        """The sender's context of the message handed out last (what the SDK's
        ``ContextReceiveStream`` offers; the dispatcher runs the message's handler in it)."""

    def _release(self) -> None:
        handed, self._handed = self._handed, None
        self.last_context = None
        if handed is not None:
            handed.message = RELEASED
            handed.metadata = None

    async def receive(self) -> Read:
        self._release()
        item = await self._inner.receive()
        self.last_context = getattr(self._inner, "last_context", None)
        if self.last_context is not None:
            self._inner.last_context = None  # type: ignore[attr-defined]
        if isinstance(item, SessionMessage):
            self._handed = item
        return item

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> Read:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            self._release()
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._release()
        await self._inner.aclose()


class ReleasingWrites(_ClosedOnExit):
    """A session's write stream (the SDK's ``WriteStream``), which passes :data:`PASSING`
    after each answer (a response or an error to a request)."""

    def __init__(self, inner: WriteStream[SessionMessage]) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage, /) -> None:
        await self._inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            await self._inner.send(PASSING)  # once the router is done with the answer

    async def aclose(self) -> None:
        await self._inner.aclose()


class ReleasingTransport(StreamableHTTPServerTransport):
    """The SDK's streamable HTTP transport of a stateful session, whose messages are read
    through :class:`ReleasingReads` and written through :class:`ReleasingWrites`. It adds
    no state: http_sessions.py makes the SDK's
    transport one of these as the session is admitted."""

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncGenerator[tuple[ReadStream[Read], WriteStream[SessionMessage]], None]:
        async with super().connect() as (read_stream, write_stream):
            yield ReleasingReads(read_stream), ReleasingWrites(write_stream)
