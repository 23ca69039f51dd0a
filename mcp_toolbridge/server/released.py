"""What a stateful HTTP session keeps of a request once it is answered: nothing.

A session lives until its client ends it or its idle timeout (30 minutes by default), and
two things in it used to hold the last request it had read for all that time: the request's
body (the Starlette ``Request``, its cached ``_body``) and the parsed message (its params,
often larger than the body). About twice the body per session: 4 MiB bodies in the 10,000
sessions the SDK admits would hold some 80 GB (docs/security.md, "The HTTP edge").

- The SDK's receive loop (``JSONRPCDispatcher.run``: ``async for item in read_stream``)
  keeps its loop variable, the last ``SessionMessage`` (the parsed request, and metadata
  holding the ``Request``), while it awaits the next message. :class:`ReleasingReads` wraps
  the session's read stream: when the loop asks for the next message the one it handed out
  before is emptied, its request and metadata dropped. By then the dispatcher has taken what
  it needs (the handler's task holds the request until it is answered, then lets it go).
  :class:`ReleasingTransport` is the SDK's transport, serving its sessions through it.
- The server's own handle on each 2025 connection (to tell it ``list_changed`` and log
  messages outside a request) was the ServerSession of its latest request, which holds that
  request's dispatch context, and so its metadata. ``host.standing_session`` makes one on
  the connection's own channel instead, holding no request.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from types import TracebackType
from typing import Self

import anyio
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification

Read = SessionMessage | Exception

RELEASED = JSONRPCNotification(jsonrpc="2.0", method="toolbridge/released")
"""What an emptied SessionMessage holds instead of its request (nothing reads it again)."""


class ReleasingReads:
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


class ReleasingTransport(StreamableHTTPServerTransport):
    """The SDK's streamable HTTP transport of a stateful session, whose messages are read
    through :class:`ReleasingReads`. It adds no state: http_sessions.py makes the SDK's
    transport one of these as the session is admitted."""

    @asynccontextmanager
    async def connect(
        self,
    ) -> AsyncGenerator[tuple[ReadStream[Read], WriteStream[SessionMessage]], None]:
        async with super().connect() as (read_stream, write_stream):
            yield ReleasingReads(read_stream), write_stream
