"""The requests in flight on the stdio pipes, so that the end of stdin drops none of them.

Requests read from the client are unanswered until the server writes their response (or the
client cancels them); requests the server sent the client await the client's response. When
stdin ends, :meth:`Exchange.drain` refuses what the client can no longer answer and waits for
the server to answer what it read, for at most the grace period.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

log = logging.getLogger("mcp_toolbridge")

RequestId = int | str
Spawn = Callable[..., Any]
"""A task group's ``start_soon``."""
CLOSED = "Connection closed: the client closed its end of stdin"
OPEN_ENDED = frozenset({"subscriptions/listen"})
"""Requests answered only when the connection ends (a 2026 listen stream): never waited for."""


class Exchange:
    """The requests in flight in both directions on one stdio connection."""

    def __init__(
        self,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        spawn: Spawn,
        grace_s: float,
    ) -> None:
        self._to_server = to_server
        self._spawn = spawn
        self._grace_s = grace_s
        self._unanswered: set[RequestId] = set()
        """Requests read from the client and not answered yet."""
        self._awaiting: set[RequestId] = set()
        """Requests sent to the client and not answered yet."""
        self._ended = False
        self._drained = anyio.Event()

    def read(self, message: types.JSONRPCMessage) -> None:
        """A message from the client, before the server sees it."""
        if isinstance(message, types.JSONRPCRequest):
            if message.method not in OPEN_ENDED:
                self._unanswered.add(message.id)
        elif isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/cancelled":  # never answered (interrupt mode)
                cancelled = (message.params or {}).get("requestId")
                if isinstance(cancelled, int | str):
                    self._answered(cancelled)
        elif message.id is not None:  # the client's response to one of the server's requests
            self._awaiting.discard(message.id)

    def written(self, message: types.JSONRPCMessage) -> None:
        """A message of the server, once written to the client."""
        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            if message.id is not None:
                self._answered(message.id)
        elif isinstance(message, types.JSONRPCRequest):
            if self._ended:
                self._refuse(message.id)
            else:
                self._awaiting.add(message.id)

    async def drain(self) -> None:
        """stdin ended: refuse the server's requests (nobody can answer them now), then wait
        for the answers to every request read, at most the grace period."""
        self._ended = True
        for request_id in sorted(self._awaiting, key=str):
            self._refuse(request_id)
        self._awaiting.clear()
        if not self._unanswered:
            return
        with anyio.move_on_after(self._grace_s):
            await self._drained.wait()
        if self._unanswered:
            log.warning(
                "stdin closed: %d request(s) still unanswered after %g s are cancelled",
                len(self._unanswered),
                self._grace_s,
            )

    def _answered(self, request_id: RequestId) -> None:
        self._unanswered.discard(request_id)
        if self._ended and not self._unanswered:
            self._drained.set()

    def _refuse(self, request_id: RequestId) -> None:
        error = types.JSONRPCError(
            jsonrpc="2.0",
            id=request_id,
            error=types.ErrorData(code=types.CONNECTION_CLOSED, message=CLOSED),
        )
        self._spawn(self._deliver, SessionMessage(error))

    async def _deliver(self, item: SessionMessage) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._to_server.send(item)
