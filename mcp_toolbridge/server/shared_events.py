"""Resumable streams in Redis (``serve --state redis://…``): a 2025-11-25 client whose
connection dropped resumes through any replica.

:class:`SharedEvents` is a session's event store (the SDK's ``EventStore``) kept in Redis
(state/shared.py): the replica running the session stores every message its streams send;
any replica replays what followed a ``Last-Event-ID`` and follows the stream there until its
final message, as the call's own replica produces it (``XREAD BLOCK``). Bounded per stream
(:data:`~mcp_toolbridge.server.resume.MAX_EVENTS` events, trimmed oldest first) and per
message (:data:`~mcp_toolbridge.server.resume.MAX_BYTES`: a larger one is sent but not kept,
and a resume that needs it gets error -32000); every key expires with the session's idle time.

:class:`RemoteResume` is the ASGI middleware that serves such a ``GET`` on a replica that does
not hold the session: it checks that the session exists in Redis and that the request
carries the credential that opened it, then streams the replay. Any other request for a
session this replica does not hold gets the ``404`` the SDK would give, with words that say
why (its replica stopped or restarted, or it ended) and what to do (a new session). When
the session's replica died, the survivor that claimed its calls stored an error as their
final message (replicas.py), so the client gets that error instead of waiting.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any, Protocol

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    EventCallback,
    EventMessage,
    EventStore,
)
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from mcp_toolbridge.edge import Scope, send_json_reply
from mcp_toolbridge.server.released import PASSING
from mcp_toolbridge.server.resume import (
    FOLLOW_IDLE_S,
    MAX_BYTES,
    MAX_EVENTS,
    RETRY_MS,
    event_token,
    lost_result,
    parse_event_id,
    request_id_of,
)
from mcp_toolbridge.state import SharedStore, StateUnavailable, StreamEvent

log = logging.getLogger("mcp_toolbridge")

BLOCK_S = 1.0
"""One blocking read's wait (under the link's 2 s command deadline); a follow repeats it
until the stream's end or its idle limit."""


def credential_digest(requestor: Any) -> str:
    """Who opened a session: the auth identity of its token (OAuth), digested; what a resume
    elsewhere must present again (the SDK's own check: with the static token, or none,
    every client has the same)."""
    text = json.dumps(["auth", requestor], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _message(event: StreamEvent, stream_id: str) -> EventMessage:
    assert event.data is not None
    message = jsonrpc_message_adapter.validate_json(event.data, by_name=False)
    return EventMessage(message, f"{event.seq}-{event_token(stream_id)}")


async def replay(
    shared: SharedStore,
    session_id: str,
    last_event_id: str,
    send: EventCallback,
    *,
    follow_get: bool,
    closed: Callable[[], bool] = lambda: False,
) -> str | None:
    """Send what followed ``last_event_id`` in the session's stream, then follow it to its
    final message (a request's stream; the GET stream too when ``follow_get``). Returns the
    GET stream's id when the caller follows it from there (the SDK on the session's own
    replica), else None."""
    parsed = parse_event_id(last_event_id)
    if parsed is None:
        return None
    seq, stream_id = parsed
    start = await shared.start_of(session_id, stream_id)
    if start is None or seq < start:
        if stream_id != GET_STREAM_KEY and not closed():
            await send(lost_result(stream_id))
        return None
    if stream_id == GET_STREAM_KEY and not follow_get:
        for event in await shared.events_after(session_id, stream_id, seq):
            if event.data is not None:
                await send(_message(event, stream_id))
        return stream_id
    sent = seq
    idle = anyio.current_time() + FOLLOW_IDLE_S
    events = await shared.events_after(session_id, stream_id, seq)
    while not closed():
        for event in events:
            sent = event.seq
            if event.dropped:
                await send(lost_result(stream_id))
                return None
            if event.data is not None:
                await send(_message(event, stream_id))
            if event.final:
                return None
        if events:
            idle = anyio.current_time() + FOLLOW_IDLE_S
        left = idle - anyio.current_time()
        if left <= 0:
            return None
        events = await shared.wait_after(session_id, stream_id, sent, min(BLOCK_S, left))
    return None


LOST_CALL = -32001
"""The error ending the stream of a call whose replica stopped before it finished."""


async def end_lost_streams(shared: SharedStore, session_id: str, replica: str) -> None:
    """End every unfinished request stream of a dead replica's session with an error: a
    client resuming one gets the error, not a wait."""
    try:
        streams = await shared.unfinished(session_id)
    except StateUnavailable as exc:
        log.warning("a lost session's clients were not told: %s", exc.reason)
        return
    for stream in streams:
        if stream != GET_STREAM_KEY:
            await end_lost_stream(shared, session_id, request_id_of(stream), replica)


async def end_lost_stream(
    shared: SharedStore, session_id: str, request_id: Any, replica: str
) -> None:
    """End a lost call's stream with an error (the call's replica died): a client resuming
    it gets the error, not a wait."""
    text = (
        f"the server replica running this call ({replica}) stopped before the call finished "
        "(it was killed or lost); the call may have done part of its work. Check its effects "
        "before calling it again; this session is gone too: start a new one"
    )
    error = JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=LOST_CALL, message=text)
    )
    data = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    try:
        await shared.append(
            session_id,
            str(request_id),
            data,
            final=True,
            keep=True,
            max_events=MAX_EVENTS,
            ttl_s=FOLLOW_IDLE_S,
        )
    except StateUnavailable as exc:
        log.warning("a lost call's client was not told: %s", exc.reason)


class SharedEvents(EventStore):
    """One session's event store in Redis."""

    def __init__(
        self, shared: SharedStore, session_id: str, *, replica: str, credential: str, ttl_s: float
    ) -> None:
        self._shared = shared
        self._session_id = session_id
        self._replica = replica
        self._credential = credential
        self._ttl_s = ttl_s
        self._opened = False
        self._closed = False
        self._local_seq = 0

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if message is PASSING.message:  # holds nothing, goes nowhere (released.py)
            return ""
        data = (
            None
            if message is None
            else message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        )
        final = isinstance(message, JSONRPCResponse | JSONRPCError)
        try:
            if not self._opened:
                await self._shared.open_session(
                    self._session_id, self._replica, self._credential, self._ttl_s
                )
                self._opened = True
            seq = await self._shared.append(
                self._session_id,
                stream_id,
                data,
                final=final,
                keep=data is None or len(data) <= MAX_BYTES,
                max_events=MAX_EVENTS,
                ttl_s=self._ttl_s,
            )
        except StateUnavailable as exc:  # sent, not kept: this event cannot be resumed
            log.warning("an event of a session was not kept: %s", exc.reason)
            self._local_seq += 1
            return f"0{self._local_seq}-{event_token(stream_id)}"
        return f"{seq}-{event_token(stream_id)}"

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        try:
            return await replay(
                self._shared,
                self._session_id,
                last_event_id,
                send_callback,
                follow_get=False,
                closed=lambda: self._closed,
            )
        except StateUnavailable as exc:
            log.warning("a stream could not be resumed: %s", exc.reason)
            return None

    async def close(self) -> None:
        """The session ended: its keys go (resumes elsewhere then find nothing)."""
        self._closed = True
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                streams = await self._shared.streams(self._session_id)
                await self._shared.close_session(self._session_id, self._replica, streams)
            except StateUnavailable as exc:
                log.warning("a closed session's events stay until they expire: %s", exc.reason)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text
    return None


def _sse(event: EventMessage) -> bytes:
    data = event.message.model_dump_json(by_alias=True, exclude_unset=True)
    head = f"id: {event.event_id}\r\n" if event.event_id else ""
    return f"{head}event: message\r\ndata: {data}\r\n\r\n".encode()


class Held(Protocol):
    """The sessions of this replica (http_sessions.ResumableSessions)."""

    stateless: bool

    def holds(self, session_id: str) -> bool: ...


class RemoteResume:
    """ASGI middleware: a resumed GET of a session this replica does not hold, served from
    Redis; any other request for such a session answered 404 (see the module doc)."""

    def __init__(self, app: Any, shared: SharedStore, sessions: Held, replica: str) -> None:
        self._app = app
        self._shared = shared
        self._sessions = sessions
        self._replica = replica

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        session_id = _header(scope, b"mcp-session-id")
        last = _header(scope, b"last-event-id")
        if (
            scope["type"] != "http"
            or not session_id
            or self._sessions.stateless
            or self._sessions.holds(session_id)
        ):
            await self._app(scope, receive, send)
            return
        if scope.get("method") != "GET" or last is None or parse_event_id(last) is None:
            await self._not_held(session_id, send)
            return
        try:
            meta = await self._shared.session(session_id)
        except StateUnavailable:
            meta = None
        user = scope.get("user")
        requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
        credential = credential_digest(requestor)
        if meta is None or meta.get("credential") != credential:
            await self._not_held(session_id, send)
            return
        await self._stream(session_id, last, send)

    async def _not_held(self, session_id: str, send: Any) -> None:
        """The SDK's 404 for a session this replica does not hold ("Session not found"),
        saying what happened and what to do: the same words whoever asks, whether the
        session exists elsewhere or not."""
        opened = session_id.split(".", 1)[0] if "." in session_id else "another replica"
        message = (
            f"Session not found: replica {self._replica} does not hold this session. The "
            f"replica that opened it ({opened[:64]}) stopped or restarted, or the session "
            "ended (closed, or idle too long). Start a new session (initialize again); "
            "what is kept for the caller (always answers, budgets, the to-do list) is still "
            "there"
        )
        error = {"code": -32600, "message": message}
        await send_json_reply(send, 404, {"jsonrpc": "2.0", "id": None, "error": error})

    async def _stream(self, session_id: str, last: str, send: Any) -> None:
        headers = [
            (b"content-type", b"text/event-stream"),
            (b"cache-control", b"no-cache, no-transform"),
            (b"mcp-session-id", session_id.encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        priming = f"id: {last}\r\nretry: {RETRY_MS}\r\ndata: \r\n\r\n".encode()
        await send({"type": "http.response.body", "body": priming, "more_body": True})

        async def forward(event: EventMessage) -> None:
            await send({"type": "http.response.body", "body": _sse(event), "more_body": True})

        try:
            await replay(self._shared, session_id, last, forward, follow_get=True)
        except StateUnavailable as exc:
            log.warning("a stream could not be resumed: %s", exc.reason)
        except OSError:  # the client went away
            return
        await send({"type": "http.response.body", "body": b"", "more_body": False})
