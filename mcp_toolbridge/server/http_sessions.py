"""The SDK's streamable HTTP session manager, with an event store per session (resumable
streams: resume.py in memory, shared_events.py in Redis), and the priming of GET streams.

With shared state every session id names the replica that made it (``REPLICA.<32 hex>``),
so a load balancer can route a session's requests to it without cookies (docs/deploy.md).

The SDK admits 10,000 sessions at once; an identified caller (OAuth) may hold at most
:data:`MAX_SESSIONS_PER_CALLER` of them, so one person or agent cannot take every place and
lock everyone else out until their sessions expire (the static token, or no credential, is
one caller for everyone: the SDK's limit alone holds there).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.streamable_http import GET_STREAM_KEY, StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, is_version_at_least

from mcp_toolbridge.edge import ASGIApp, Scope
from mcp_toolbridge.server.misread import MisreadIds
from mcp_toolbridge.server.released import ReleasingTransport
from mcp_toolbridge.server.resume import (
    RESUMABLE_SINCE,
    RETRY_MS,
    SessionEvents,
    parse_event_id,
)
from mcp_toolbridge.server.shared_events import SharedEvents, credential_digest
from mcp_toolbridge.state import SharedStore

log = logging.getLogger("mcp_toolbridge")

MAX_SESSIONS_PER_CALLER = 256
"""Open sessions one identified caller may hold; another ``initialize`` of theirs gets 503
until one of them ends (DELETE, or its idle timeout)."""
LISTEN = "subscriptions/listen"
"""The ``Mcp-Method`` of a 2026-07-28 listen stream's POST."""
MAX_LISTEN_BODY = 64 << 10
"""The largest body of a listen stream's POST. The stream holds its request for as long as it
stays open (it is never answered while the client listens), and a listen request names a few
subscriptions: past this it is refused (413), where any other request may take the SDK's
4 MiB."""
SHARED_TTL_S = 1800.0
"""How long a shared session's keys outlive its last event without an idle timeout."""


@dataclass(frozen=True, slots=True)
class SharedSessions:
    """Where sessions keep their events when replicas share state, and this replica's name."""

    store: SharedStore
    replica: str


class ResumableSessions(StreamableHTTPSessionManager):
    """The SDK's session manager, giving each stateful session its own event store.

    The SDK hands one event store to every session; its streams are named by request ids,
    which clients number from 1 in each session, so one shared store would replay another
    session's messages. ``_admit_session`` (where the SDK makes a session's transport) and
    ``_discard_session`` (where it forgets one, however it ended) are the only hooks; should
    a later SDK rename them, sessions simply stop being resumable (the resume tests fail).
    Each session's transport is a :class:`~mcp_toolbridge.server.released.ReleasingTransport`
    (the SDK's, reading through a stream that keeps no request once it is answered)."""

    def __init__(
        self,
        app: Any,
        *,
        stateless: bool,
        security_settings: TransportSecuritySettings,
        session_idle_timeout: float,
        shared: SharedSessions | None = None,
    ) -> None:
        """``shared``: keep sessions' events in Redis, under ids that name this replica."""
        super().__init__(
            app,
            stateless=stateless,
            security_settings=security_settings,
            retry_interval=RETRY_MS,
            session_idle_timeout=session_idle_timeout,
        )
        self._stores: dict[str, SessionEvents | SharedEvents] = {}
        self._shared = shared

    def events_of(self, session_id: str) -> SessionEvents | SharedEvents | None:
        return self._stores.get(session_id)

    def endpoint(self) -> ASGIApp:
        """The MCP endpoint these sessions serve (the SDK's app), where a request whose id the
        SDK cannot take is refused rather than accepted as a notification (misread.py)."""
        return MisreadIds(StreamableHTTPASGIApp(self))

    def holds(self, session_id: str) -> bool:
        """Whether this process serves the session."""
        return session_id in self._server_instances

    def _admit_session(
        self, requestor: AuthorizationContext | None
    ) -> StreamableHTTPServerTransport | None:
        if requestor is not None:
            held = sum(1 for owner in self._session_owners.values() if owner == requestor)
            if held >= MAX_SESSIONS_PER_CALLER:
                log.warning(
                    "HTTP: refused a new session of %s: it holds %d open sessions already "
                    "(end some with DELETE, or let them expire)",
                    requestor.get("subject") or requestor.get("client_id") or "a caller",
                    held,
                )
                return None
        transport = super()._admit_session(requestor)
        if transport is None or transport.mcp_session_id is None:
            return transport
        transport.__class__ = ReleasingTransport  # keeps no request once answered
        session_id = transport.mcp_session_id
        store: SessionEvents | SharedEvents
        if self._shared is None:
            store = SessionEvents()
        else:  # an id that names this replica, for the load balancer to route on
            named = f"{self._shared.replica}.{uuid.uuid4().hex}"
            self._server_instances[named] = self._server_instances.pop(session_id)
            if session_id in self._session_owners:
                self._session_owners[named] = self._session_owners.pop(session_id)
            transport.mcp_session_id = session_id = named
            store = SharedEvents(
                self._shared.store,
                session_id,
                replica=self._shared.replica,
                credential=credential_digest(requestor),
                ttl_s=self.session_idle_timeout or SHARED_TTL_S,
            )
        transport._event_store = store
        self._stores[session_id] = store
        return transport

    async def _discard_session(
        self, session_id: str, transport: StreamableHTTPServerTransport
    ) -> None:
        store = self._stores.pop(session_id, None)
        if isinstance(store, SharedEvents):
            await store.close()
        elif store is not None:
            store.close()
        await super()._discard_session(session_id, transport)

    def close_get_streams(self) -> None:
        """End every session's GET stream (the SDK's ``close_standalone_sse_stream``): its
        response completes, and its client may resume it with ``Last-Event-ID``."""
        for transport in list(self._server_instances.values()):
            transport.close_standalone_sse_stream()


def _priming(event_id: str) -> bytes:
    return f"id: {event_id}\r\nretry: {RETRY_MS}\r\ndata: \r\n\r\n".encode()


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            text: str = value.decode("latin-1")
            return text
    return None


class PrimedStreams:
    """ASGI middleware: a GET stream of a resumable session starts with a priming event, as
    each POST's stream does. A new standalone stream gets a new event id; a resumed one
    repeats the id it resumes from (what follows it comes next).

    It also counts the streams that stand open until the server ends them (GET streams,
    2026-07-28 ``subscriptions/listen``), so the shutdown can end them whole first
    (:meth:`end_streams`, with ``end_listens`` ending the listen streams)."""

    def __init__(
        self, app: Any, sessions: ResumableSessions, end_listens: Callable[[], None]
    ) -> None:
        self._app = app
        self._sessions = sessions
        self._end_listens = end_listens
        self._standing = 0
        self._none_standing = anyio.Event()
        self._none_standing.set()

    async def end_streams(self) -> None:
        """End the sessions' GET streams and the listen streams, and return once each has
        been answered whole.

        uvicorn's shutdown would otherwise cut them: sse-starlette (the SDK's SSE responses)
        cancels a stream once uvicorn's ``should_exit`` is set, without its last body
        message ("ASGI callable returned without completing response"), and uvicorn
        cancels a listen stream after its graceful timeout (an error and a traceback)."""
        self._sessions.close_get_streams()
        self._end_listens()
        await self._none_standing.wait()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        method = scope.get("method")
        listen = method == "POST" and _header(scope, b"mcp-method") == LISTEN
        if method != "GET" and not listen:
            await self._app(scope, receive, send)
            return
        if self._standing == 0:
            self._none_standing = anyio.Event()
        self._standing += 1
        try:
            if method == "GET":
                await self._get(scope, receive, send)
            else:
                await RequestBodyLimitMiddleware(self._app, MAX_LISTEN_BODY)(scope, receive, send)
        finally:
            self._standing -= 1
            if self._standing == 0:
                self._none_standing.set()

    async def _get(self, scope: Scope, receive: Any, send: Any) -> None:
        version = _header(scope, b"mcp-protocol-version") or ""
        store = self._sessions.events_of(_header(scope, b"mcp-session-id") or "")
        resumable = version in HANDSHAKE_PROTOCOL_VERSIONS and is_version_at_least(
            version, RESUMABLE_SINCE
        )
        if store is None or not resumable:
            await self._app(scope, receive, send)
            return
        last = _header(scope, b"last-event-id")

        async def primed(message: Any) -> None:
            await send(message)
            if message["type"] != "http.response.start" or message.get("status") != 200:
                return
            headers = dict(message.get("headers") or ())
            if not headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                return
            if last is None:
                event_id = await store.store_event(GET_STREAM_KEY, None)
            elif parse_event_id(last) is not None:
                event_id = last
            else:
                return
            body = _priming(event_id)
            await send({"type": "http.response.body", "body": body, "more_body": True})

        await self._app(scope, receive, primed)
