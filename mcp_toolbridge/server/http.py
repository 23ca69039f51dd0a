"""Streamable HTTP (``serve --http HOST:PORT``): the SDK's app for a ToolbridgeServer, run
by uvicorn, behind an optional bearer token or an OAuth authorization server.

- Binds 127.0.0.1 unless told otherwise; any other address needs a credential: the static
  token (``--token`` or ``TOOLBRIDGE_TOKEN``), checked with a constant-time comparison, or
  an authorization server (``--auth-issuer``: an OAuth resource server, see auth.py); a
  request without it gets 401 before it reaches MCP.
- Host and Origin headers are checked against an allow-list (the SDK's
  TransportSecuritySettings) so a web page cannot reach the server through DNS rebinding:
  loopback names always, the bound address, and every ``--allow-host`` name.
- Stateful by default (one Mcp-Session-Id per client, SSE responses: progress and 2025-era
  elicitation work); ``--stateless`` makes every request independent.
- A request without a session (``--stateless``, or any 2026-era request) ends with its
  connection: a client that disconnects mid-call cancels it, and the call's process group is
  killed. In a session a disconnect is not a cancellation (the MCP transport spec): the call
  runs on until its deadline, the client's ``notifications/cancelled``, the session's DELETE,
  or the session's idle expiry (``--session-idle-timeout``), whichever comes first, and a
  2025-11-25 client resumes its stream with ``Last-Event-ID`` (resume.py).
- Request bodies are capped at 4 MiB (the SDK's limit: 413 before anything is parsed), and
  a request must arrive in time: its headers within 10 s, its body within 60 s more, or the
  connection is closed (deadlines.py: slow clients cannot hold connections for ever). Once
  it has arrived, an identified caller holds at most 64 streams open at once, everyone
  together at most half the process's file descriptors (streams.py).
- ``/healthz`` (the process answers) and ``/readyz`` (it should get traffic: not stopping,
  and with shared state, Redis answers) for load balancers, without credentials.
- With shared state (``--state redis://…``, replicas.py) session ids name the replica, their
  events live in Redis, and a resumed stream of another replica's session is served here
  (shared_events.py).

One ToolbridgeServer serves every HTTP session; see toolbridge_server.py for what is kept per
session.
"""

from __future__ import annotations

import dataclasses
import hmac
import logging
import signal
import socket
from collections.abc import Callable
from types import FrameType

import anyio
import uvicorn
from anyio.abc import TaskStatus
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount, Route

from mcp_toolbridge.edge import ASGIApp, Receive, Scope, Send, send_json_reply
from mcp_toolbridge.host import CALLER_KEY
from mcp_toolbridge.server.auth import ResourceServer
from mcp_toolbridge.server.console_login import IssuerLogin
from mcp_toolbridge.server.deadlines import quiet_disconnects, timed_protocol
from mcp_toolbridge.server.health import HEALTH_PATHS, Draining, health_routes
from mcp_toolbridge.server.host import caller_in
from mcp_toolbridge.server.http_options import (
    TOKEN_ENV,
    ExplainedHost,
    HttpOptions,
    check_binding,
    connect_url,
    listen,
    security_settings,
)
from mcp_toolbridge.server.http_sessions import PrimedStreams, ResumableSessions, SharedSessions
from mcp_toolbridge.server.shared_events import RemoteResume
from mcp_toolbridge.server.streams import StreamShares
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer

log = logging.getLogger("mcp_toolbridge")

CONSOLE_PATH = "/console"
CONSOLE_SIGN_IN = CONSOLE_PATH + "/sign-in"
SIGNAL_POLL_S = 0.1
ENDING_S = 10.0
"""After serving, how long calls the shutdown cancelled may take to end (their process
groups killed, their audit lines written) before the server's state is closed."""
STREAMS_END_S = 1.0
"""On SIGTERM, after the drain: how long the sessions' GET streams may take to end (their
responses completed: a client resumes them elsewhere) before uvicorn stops."""

ConsoleMount = Callable[[int, IssuerLogin | None], tuple[ASGIApp, ASGIApp | None]]
"""(the bound port, the console's OAuth client at the authorization server that guards the
endpoint, if one does) -> the web console's pages and its sign-in (``serve --http
--console``: ``Console.mounted``)."""


class BearerToken:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>`` (but those
    to the web console, which a browser opens with a one-time URL: its ``/sign-in``, which
    gives one, needs the token too)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        console = path == CONSOLE_PATH or path.startswith(CONSOLE_PATH + "/")
        console = console and path != CONSOLE_SIGN_IN
        public = path in HEALTH_PATHS
        if scope["type"] != "http" or console or public or self._authorized(scope):
            await self._app(scope, receive, send)
            return
        error = (
            "missing or wrong bearer token: send 'Authorization: Bearer <token>' with the "
            f"token the server was started with (--token or {TOKEN_ENV})"
        )
        challenge = (b"www-authenticate", b'Bearer realm="mcp-toolbridge"')
        await send_json_reply(send, 401, {"error": error}, headers=[challenge])

    def _authorized(self, scope: Scope) -> bool:
        given = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, token = given[0].partition(b" ")  # the scheme's name is case-insensitive
        return scheme.lower() == b"bearer" and hmac.compare_digest(token, self._token)


def _with_caller(app: ASGIApp) -> ASGIApp:
    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        scope[CALLER_KEY] = caller_in(scope)
        await app(scope, receive, send)

    return wrapped


def build_app(
    server: ToolbridgeServer,
    options: HttpOptions,
    guard: ResourceServer | None = None,
    console: ConsoleMount | None = None,
) -> tuple[ASGIApp, PrimedStreams]:
    """The SDK's streamable HTTP app (as ``Server.streamable_http_app`` builds it), with a
    session manager that makes stateful sessions resumable (resume.py), behind the static
    token or, with ``guard``, an OAuth resource server; with ``console``, the web console at
    ``/console`` (its sign-in behind the same token check as the MCP endpoint). And its GET
    streams, which the shutdown ends first."""
    replica = server.replica
    sessions = ResumableSessions(
        server.server,
        stateless=options.stateless,
        security_settings=security_settings(options),
        session_idle_timeout=options.session_idle_timeout_s,
        shared=SharedSessions(replica.shared, replica.name) if replica is not None else None,
    )
    endpoint: ASGIApp = ExplainedHost(sessions.endpoint(), options)
    if replica is not None:
        endpoint = RemoteResume(endpoint, replica.shared, sessions, replica.name)
    endpoint = StreamShares(endpoint)
    routes: list[BaseRoute] = [
        Route(options.path, endpoint=guard.protect(endpoint) if guard else endpoint)
    ]
    routes += health_routes(server)
    routes += guard.routes() if guard else []
    if console is not None:
        pages, sign_in = console(options.port, IssuerLogin(guard) if guard else None)
        if guard is not None and sign_in is not None:
            protected = guard.protect(_with_caller(sign_in))
            routes.append(Route(CONSOLE_SIGN_IN, endpoint=protected))
        elif options.token and sign_in is not None:  # behind BearerToken, below
            routes.append(Route(CONSOLE_SIGN_IN, endpoint=sign_in))
        routes.append(Mount(CONSOLE_PATH, app=pages))
    middleware = guard.middleware() if guard else []
    app: ASGIApp = Starlette(
        routes=routes, middleware=middleware, lifespan=lambda _app: sessions.run()
    )
    primed = PrimedStreams(app, sessions, server.end_listens)
    app = Draining(primed, server, options.path)
    return (BearerToken(app, options.token) if options.token else app), primed


class _Uvicorn(uvicorn.Server):
    """uvicorn's server, telling ours first when it starts shutting down: the calls its
    shutdown then cancels are audited as ended by the shutdown. SIGTERM first drains
    (:meth:`HttpService._drain`); a second signal, or SIGINT, stops at once."""

    def __init__(self, config: uvicorn.Config, on_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_stop = on_stop
        self.drain_requested = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if sig == signal.SIGTERM and not self.drain_requested and not self.should_exit:
            self.drain_requested = True  # seen by the drain task; the exit is then a clean one
            return
        super().handle_exit(sig, frame)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._on_stop()
        await super().shutdown(sockets)


class HttpService:
    """The server on a listening socket; ``serve`` reports the URL once it accepts."""

    def __init__(
        self, server: ToolbridgeServer, options: HttpOptions, console: ConsoleMount | None = None
    ) -> None:
        check_binding(options)
        quiet_disconnects()
        self._server = server
        self._console = console
        self.options = options
        self._app: ASGIApp | None = None
        self._streams: PrimedStreams | None = None
        self.guard: ResourceServer | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._stopped = False
        self._socket: socket.socket | None = None

    def listen(self) -> str:
        """Bind the socket now (errors are ConfigErrors, before anything runs); the URL."""
        if self._socket is None:
            self._socket = listen(self.options)
            port = self._socket.getsockname()[1]
            self.options = dataclasses.replace(self.options, port=port)
            auth = self.options.auth
            if auth is not None:  # its canonical URL may name the port just picked
                self.guard = ResourceServer(auth, auth.resource or self.options.url)
            built = build_app(self._server, self.options, self.guard, self._console)
            self._app, self._streams = built
        return connect_url(self.options)

    async def serve(self, *, task_status: TaskStatus[str] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until :meth:`stop` (or SIGINT/SIGTERM). Started with the URL: the socket is
        listening by then, so a client may connect at once."""
        url = self.listen()
        assert self._socket is not None and self._app is not None
        if self.guard is not None:
            await self.guard.start()
        config = uvicorn.Config(
            self._app,
            http=timed_protocol(self.options.head_s, self.options.body_s),
            log_config=None,
            log_level="warning",
            timeout_graceful_shutdown=1,
        )
        self._uvicorn = _Uvicorn(config, self._server.stopping)
        self._uvicorn.should_exit = self._stopped
        async with anyio.create_task_group() as group:
            if self._server.replica is not None:
                await group.start(self._server.replica.run)
            group.start_soon(self._drain, self._uvicorn)
            task_status.started(url)
            try:
                await self._uvicorn.serve(sockets=[self._socket])
                with anyio.move_on_after(ENDING_S):  # calls it cancelled: their audit lines
                    await self._server.calls.idle()
            finally:
                self._socket.close()
                group.cancel_scope.cancel()

    async def _drain(self, server: _Uvicorn) -> None:
        """On SIGTERM: say unready (/readyz 503, new sessions and sessionless requests 503, so
        the load balancer sends them elsewhere), let the calls running finish up to the drain
        deadline, then stop serving (calls still running are ended, each with its audit
        line). The signal handler only sets a flag, looked at every 0.1 s as uvicorn looks
        at its own."""
        while not server.drain_requested:  # noqa: ASYNC110
            await anyio.sleep(SIGNAL_POLL_S)
        deadline = self.options.drain_timeout_s
        running = self._server.calls.count
        log.warning(
            "SIGTERM: draining: %d call(s) running may finish within %g s; new sessions "
            "and sessionless requests are refused (503) meanwhile",
            running,
            deadline,
        )
        self._server.draining = True
        with anyio.move_on_after(deadline):
            await self._server.calls.idle()
        left = self._server.calls.count
        if left:
            log.warning("SIGTERM: %d call(s) still running at the deadline are ended", left)
        self._server.stopping()  # what is cancelled from now on was ended by the shutdown
        if left:  # ended here, each answered with an error result before uvicorn stops
            self._server.calls.end_all()
            with anyio.move_on_after(ENDING_S):
                await self._server.calls.idle()
        if self._streams is not None:  # ended whole, before uvicorn's shutdown cuts them
            with anyio.move_on_after(STREAMS_END_S):
                await self._streams.end_streams()
        self.stop()

    def stop(self) -> None:
        self._stopped = True
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
