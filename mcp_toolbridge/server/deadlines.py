"""How long a request may take to arrive: uvicorn's HTTP/1.1 protocol (h11) with a deadline
on receiving each request, so a client that opens connections and then sends nothing, or
trickles its headers or its body a byte at a time (slow loris), cannot hold them, and the
file descriptors and tasks behind them, for ever.

uvicorn bounds only the wait between two requests of a kept-alive connection
(``timeout_keep_alive``), and any byte received resets it; nothing bounds a connection that
has not sent a whole request yet, and ASGI middleware sees a request only once its head has
arrived. So the deadline is kept here, per connection, following h11's view of the client:

- **the head** (request line and headers) must be complete within ``head_s`` of the
  connection's start, or of the end of the previous response;
- **the body** within ``body_s`` of the end of its head;
- once the request has arrived (a response being written, an SSE stream open for an hour)
  nothing is timed here.

A connection past its deadline is closed (logged as a warning, with the client's address):
an application reading its body sees the client gone, as if it had disconnected.

A client gone before its body arrived (closed by the deadline, or by the client) is one line
in the log (:func:`quiet_disconnects`), not the SDK's traceback of fifteen: a client that
drops requests on purpose cannot flood the log with them.
"""

from __future__ import annotations

import logging
from typing import Any

import h11
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("mcp_toolbridge")

SDK_TRANSPORT_LOGGER = "mcp.server.streamable_http"
"""The SDK's logger that reports a POST whose body never arrived, with a traceback."""
HEAD_S = 10.0
"""How long a client may take to send a request's line and headers (a client sends them at
once; nginx allows 60 s, Go's servers as configured, typically 5 to 10)."""
BODY_S = 60.0
"""How long it may take to send the body (at most 4 MiB: 0.55 Mbit/s suffices)."""


class _Timed(H11Protocol):
    """uvicorn's h11 protocol, with the deadlines of the class made by :func:`timed_protocol`."""

    head_s = HEAD_S
    body_s = BODY_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: object = None
        self._deadline: Any = None
        """The event loop's timer of the deadline running (uvicorn's protocols are asyncio's)."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()  # the next request's head, from now

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _follow(self) -> None:
        """Arm the deadline of what the client is sending now, when that changed."""
        state = self.conn.their_state
        phase = state if state in (h11.IDLE, h11.SEND_BODY) else None
        if phase is self._phase and (phase is None or self._deadline is not None):
            return
        self._disarm()
        self._phase = phase
        if phase is None or self.transport is None or self.transport.is_closing():
            return
        within = self.head_s if phase is h11.IDLE else self.body_s
        self._deadline = self.loop.call_later(within, self._expired, within)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self, within: float) -> None:
        self._deadline = None
        if self.transport is None or self.transport.is_closing():
            return
        part = "headers" if self._phase is h11.IDLE else "body"
        address = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
        log.warning(
            "HTTP: closed the connection of %s: its request's %s did not arrive within %g s",
            address,
            part,
            within,
        )
        self.transport.close()


def timed_protocol(head_s: float = HEAD_S, body_s: float = BODY_S) -> type[H11Protocol]:
    """uvicorn's ``http`` protocol class with these deadlines (``uvicorn.Config(http=…)``)."""
    return type("TimedH11Protocol", (_Timed,), {"head_s": head_s, "body_s": body_s})


class _Disconnects(logging.Filter):
    """The SDK's report of a request whose client went away before its body arrived, as one
    line without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, ClientDisconnect):
            record.msg = "HTTP: a client went away before its request's body arrived"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def quiet_disconnects() -> None:
    """Install :class:`_Disconnects` on the SDK's transport logger (once)."""
    sdk = logging.getLogger(SDK_TRANSPORT_LOGGER)
    if not any(isinstance(f, _Disconnects) for f in sdk.filters):
        sdk.addFilter(_Disconnects())
