"""The MCP adapter's server: ToolbridgeServer on the SDK's low-level Server.

It publishes the catalog through the SDK's low-level Server, serves both protocol eras, and
maps every tools/call through Bridge.call. What each caller's tools/list shows (its pages,
cached, and the session's visible set for deferred loading: tool_search) is in
tool_lists.py; MCP logging (levels, messages of calls and of the server) in host.py.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError

from mcp_toolbridge.errors import ErrorCode, UnknownToolError
from mcp_toolbridge.host import (
    CallContext,
    Connected,
    InputPending,
    LogLevel,
    SharedHost,
)
from mcp_toolbridge.server.connections import ConnectionLog
from mcp_toolbridge.server.host import (
    PROCESS_SCOPE,
    ClientLog,
    McpHost,
    asks_progress,
    caller_of,
    is_modern,
    scope_of,
    standing_session,
)
from mcp_toolbridge.server.listing import (
    Opening,
    SdkServer,
    runs,
)
from mcp_toolbridge.server.outputs import (
    Outputs,
    SidecarDir,
    credential_owner,
    session_owner,
)
from mcp_toolbridge.server.replicas import CallsRunning, Replica, SharedBus, call_lease
from mcp_toolbridge.server.roots import RootsChanged, RootsFollower
from mcp_toolbridge.server.stdio import EOF_GRACE_S, Recorder, StaleList, stdio_transport
from mcp_toolbridge.server.tool_lists import SEARCH_TOOL, Expose, ToolLists
from mcp_toolbridge.server.wire import to_result

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Bridge

log = logging.getLogger("mcp_toolbridge")

INTERNAL_ERROR = "internal error in mcp-toolbridge; see the server log"
ENDED_AT_DRAIN = (
    "the server shut down during the call: it was still running at the drain deadline "
    "(--drain-timeout) and was ended; what it did may be partial. Call it again if it "
    "should still run"
)


class SessionEnd(Protocol):
    """Called when a client session ends, to drop its state (see app.Runtime.end_session).
    ``keep_files``: a sessionless HTTP call ended; its output files must outlive it."""

    def __call__(self, session_id: str, *, keep_files: bool = False) -> None: ...


class ToolbridgeServer:
    """Holds the bridge, the tool lists (tool_lists.py) and each session's state."""

    def __init__(
        self,
        bridge: Bridge | Opening,
        *,
        expose: Expose = "auto",
        on_session_end: SessionEnd | None = None,
        roots: RootsChanged | None = None,
        sidecar_dir: SidecarDir | None = None,
        notices: Sequence[str] = (),
        on_first_list: Callable[[], None] | None = None,
        console: SharedHost | None = None,
        replica: Replica | None = None,
    ) -> None:
        """``bridge``: the bridge calls go through, or an :class:`Opening` to list with
        until :meth:`opened` gives it (a call waits for it meanwhile).
        ``console``: where a person answers the confirmations and questions a headless
        client cannot ask (``serve --console``), each call through its caller's view; None:
        they are refused.
        ``roots``: follow the client's MCP roots (stdio and in-memory connections), calling
        it with them on every change; None leaves the workspace as it is.
        ``sidecar_dir(session_id)``: the session's sidecar folder (Sessions.sidecar_dir);
        without it truncated results carry no resource link. ``notices``: warnings each
        2025-era client gets once after it connects (tools that are not served).
        ``on_first_list``: called once, when the first tools/list has been answered (a server
        does its deferred start-up work then, after what a client waits for).
        ``replica``: this server is one replica of a service sharing state in Redis
        (replicas.py): request state sealed with the shared keys, listen streams fed by the
        shared bus, each call leased, truncated outputs kept in Redis."""
        self.session_id = uuid.uuid4().hex
        self.service = "service" if replica is not None else self.session_id
        """Where anonymous sessionless calls' budgets and limits are summed: this server, or
        with replicas, the whole service."""
        self.replica = replica
        self.draining = False
        """Stopping: /readyz says so (the HTTP service drains calls on SIGTERM)."""
        self.calls = CallsRunning()
        self._http_sessions: dict[str, str] = {}
        """An opaque session id per Mcp-Session-Id: the header value is never logged."""
        self._on_session_end = on_session_end
        self._bus: InMemorySubscriptionBus | SharedBus = StaleList()
        if replica is not None:
            self._bus = replica.bus
            replica.bus.digest = self.listing_digest
            replica.on_lost = self.bridge_lost
        self._legacy_sessions: dict[int, Any] = {}
        """A ServerSession per open 2025 connection (holding no request), by id of the
        connection."""
        shared = replica.shared if replica is not None else None
        self._outputs = Outputs(sidecar_dir, expired=self._output_expired, shared=shared)
        self._client_log = ClientLog(notices)
        self._console = console
        self._connections = (
            ConnectionLog(self._audit_session)
            if replica is None
            else ConnectionLog(self._audit_session, replica.name)
        )
        self.bridge = bridge
        self._lists = ToolLists(lambda: self.bridge, expose, on_first_list)
        self._listens = ListenHandler(self._bus)
        self.server = SdkServer(
            "mcp-toolbridge",
            on_list_tools=self._lists.list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listens,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            get_tool_input_schema=self._input_schema,
        )
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._client_log.set_level
        )
        self.server.middleware.append(self._remember_sessions)
        self.server.middleware.append(self._connections)
        self.server.middleware.append(self._lists.cached)
        self._roots = RootsFollower(roots) if roots is not None else None
        if self._roots is not None:
            self._roots.install(self.server)
        # Seal the requestState of 2026 multi-round-trip calls (confirmation, question):
        # an answer counts only together with state this server minted for that call.
        # With replicas, the keys are shared: a retry landing on another replica is opened.
        security = RequestStateSecurity.ephemeral() if replica is None else replica.security()
        self.server.middleware.append(
            RequestStateBoundary(security, default_audience="mcp-toolbridge")
        )

    @property
    def expose(self) -> Expose:
        """What tools/list shows (the requested exposure, ``auto`` resolved)."""
        return self._lists.expose

    def opened(self, bridge: Bridge) -> None:
        """The bridge an :class:`Opening` stood for is open (the same catalog): calls go on."""
        opening, self.bridge = self.bridge, bridge
        if isinstance(opening, Opening):
            opening.open(bridge)

    async def _open_bridge(self) -> Bridge:
        bridge = self.bridge
        return await bridge.bridge() if isinstance(bridge, Opening) else bridge

    async def swap(self, bridge: Bridge) -> None:
        """Serve a reloaded catalog from now on and tell every client its list changed (with
        replicas: when it did change, and the other replicas too)."""
        before = self.listing_digest() if self.replica is not None else None
        self.bridge = bridge
        self._lists.publish()
        if before is None or before != self.listing_digest():
            await self.notify_tools_changed()

    def listing_digest(self) -> str:
        """What a 2026-07-28 client's tools/list holds now, digested (replicas compare it)."""
        return self._lists.digest()

    async def notify_tools_changed(self, ctx: ServerRequestContext[Any] | None = None) -> None:
        """list_changed on 2026 listen streams and to every 2025 connection seen so far."""
        await self._bus.publish(ToolsListChanged())
        sessions = list(self._legacy_sessions.values())
        connection = getattr(ctx.session, "_connection", None) if ctx is not None else None
        if ctx is not None and not is_modern(ctx) and id(connection) not in self._legacy_sessions:
            sessions.append(ctx.session)
        for session in sessions:
            try:
                await session.send_tool_list_changed()
            except Exception:  # a closed connection must not stop the others being told
                log.debug("could not notify a closed session", exc_info=True)

    async def announce(self, level: LogLevel, text: str) -> None:
        """One of the server's own events (a reload) to every 2025 connection seen so far, at
        the level its client set; 2026 clients get no log outside their own requests."""
        await self._client_log.tell(list(self._legacy_sessions.values()), level, text)

    async def _remember_sessions(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Keep a session of each 2025 connection, to notify it of changes outside a request.

        The SDK has no public handle for a connection (the private ``_connection`` of a
        request's ServerSession), and a request's ServerSession holds that request; so one
        that holds none is made per connection (host.standing_session) and dropped when the
        connection closes."""
        connection = getattr(ctx.session, "_connection", None)
        if not is_modern(ctx) and connection is not None:
            key = id(connection)
            if key not in self._legacy_sessions:
                connection.exit_stack.callback(self._legacy_sessions.pop, key, None)
                scope = scope_of(ctx)
                if scope:  # a stateful HTTP session: forget its state when it closes
                    connection.exit_stack.callback(self._end_http_session, scope)
                self._legacy_sessions[key] = standing_session(connection)
            if scope_of(ctx) is not None:  # a sessionless request is a connection of its own
                await self._client_log.greet(ctx)
        return await call_next(ctx)

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        entry = self.bridge.catalog.get(name)
        return entry.spec.input_schema if entry else None

    def _end_http_session(self, scope: str) -> None:
        """A stateful HTTP session closed: drop its visible set and its session state."""
        self._lists.forget(scope)
        self._outputs.end_session(scope)
        opaque = self._http_sessions.pop(scope, None)
        if opaque is not None and self._on_session_end is not None:
            self._on_session_end(f"{self.session_id}:{opaque}")

    # -- calling -----------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        modern = is_modern(ctx)
        try:
            entry = self.bridge.entry(params.name)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {exc.tool}") from exc
        if self._roots is not None and scope_of(ctx) == PROCESS_SCOPE:
            target = runs(self.bridge.catalog, params, entry.spec)
            ask = await self._roots.before_call(ctx, params, target)
            if ask is not None:
                return ask

        async def progress(current: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(current, total, message)

        host = McpHost(ctx, params)
        caller = caller_of(ctx)
        session_id = self._session_id(ctx)
        scope = scope_of(ctx)
        call_ctx = CallContext(
            session_id=session_id,
            progress=progress if asks_progress(ctx, params) else None,
            host=host,
            found_tools=self._lists.found_tools(ctx),
            budget_session=self.service if scope is None else None,  # summed server-wide
            log=self._client_log.for_call(ctx),
            caller=caller,
            console=self._console.for_caller(caller) if self._console is not None else None,
        )
        link = None
        cut = self.calls.began()
        try:
            with cut:  # cancelled at the drain deadline: the call ends, the request answers
                async with call_lease(self.replica, call_ctx, params.name) as lease:
                    call_ctx = replace(call_ctx, lease=lease)
                    bridge = await self._open_bridge()
                    outcome = await bridge.call(params.name, params.arguments, call_ctx)
            if cut.cancelled_caught:
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text=ENDED_AT_DRAIN)],
                    is_error=True,
                    meta={"toolbridge/code": ErrorCode.EXEC_CANCELLED.value},
                )
            link = await self._outputs.link(
                outcome.output_path,
                tool=params.name,
                session_id=session_id,
                owner=session_owner(scope) if scope is not None else credential_owner(ctx),
                sessionless=scope is None,
                protocol_version=ctx.protocol_version,
            )
        except InputPending as pending:
            return host.input_required(pending)
        except Exception:  # the top-level handler: nothing may leak a traceback to the client
            log.exception("internal error while calling %s", params.name)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=INTERNAL_ERROR)],
                is_error=True,
                meta={"toolbridge/code": ErrorCode.SERVER_INTERNAL.value},
            )
        finally:
            self.calls.ended(cut)
            if scope is None and self._on_session_end is not None:  # a call without a session
                self._on_session_end(session_id, keep_files=link is not None)
        if outcome.ok and params.name == SEARCH_TOOL and isinstance(outcome.value, dict):
            found = [t.get("name") for t in outcome.value.get("tools", [])]
            await self._lists.load([n for n in found if isinstance(n, str)], ctx)
        return to_result(outcome, entry.spec, modern=modern, link=link)

    async def bridge_lost(self, record: dict[str, Any]) -> None:
        """A call of a dead replica (claimed by this one): its audit line."""
        await (await self._open_bridge()).lost(record)

    def _output_expired(self, session_id: str) -> None:
        """The link of a call without a session expired: its files go now."""
        if self._on_session_end is not None:
            self._on_session_end(session_id)

    # -- resources: the whole output of truncated results (outputs.py) ---------------------

    def _callers(self, ctx: ServerRequestContext[Any, Any]) -> tuple[str, ...]:
        scope = scope_of(ctx)
        credential = credential_owner(ctx)
        return (credential,) if scope is None else (session_owner(scope), credential)

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return self._outputs.listed(self._callers(ctx))

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        bridge = await self._open_bridge()
        return await self._outputs.read(params.uri, self._callers(ctx), bridge.read_back)

    def _session_id(self, ctx: ServerRequestContext[Any]) -> str:
        """The session of audit lines and "always" grants: the process's on stdio, one per
        stateful HTTP session, and a fresh one per sessionless HTTP call (nothing carries over
        between such calls, so an "always" answer counts once)."""
        scope = scope_of(ctx)
        if scope == PROCESS_SCOPE:
            return self.session_id
        if scope is None:
            return f"{self.session_id}:call-{uuid.uuid4().hex[:16]}"
        opaque = self._http_sessions.setdefault(scope, f"http-{uuid.uuid4().hex[:16]}")
        return f"{self.session_id}:{opaque}"

    def _audit_session(self, ctx: ServerRequestContext[Any]) -> tuple[str, str | None]:
        scope = scope_of(ctx)
        return ("" if scope is None else self._session_id(ctx)), scope

    def connected(self) -> list[Connected]:
        """Who is connected now (the console's sessions page)."""
        return self._connections.rows()

    def end_listens(self) -> None:
        """End every ``subscriptions/listen`` stream with its final result (the SDK's graceful
        close: the client knows it was ended on purpose)."""
        self._listens.close()

    def stopping(self) -> None:
        """The server is going away: calls cancelled from now on are audited as ended by the
        shutdown (the bridge of a later reload shares this)."""
        self.bridge.stopping()

    async def run_stdio(
        self, recorder: Recorder | None = None, *, grace_s: float | None = None
    ) -> None:
        """Serve this connection over the process's stdin and stdout until EOF (``recorder``
        keeps its opening; ``grace_s``: how long the requests read may still answer after it,
        None for ``EOF_GRACE_S``). A client gone away (a broken pipe) ends the session the
        same way."""
        try:
            grace = EOF_GRACE_S if grace_s is None else grace_s
            streams = stdio_transport(
                on_eof=self.stopping, recorder=recorder, bus=self._bus, grace_s=grace
            )
            async with streams as (read_stream, write_stream):
                await self.server.run(
                    read_stream, write_stream, self.server.create_initialization_options()
                )
        except* BrokenPipeError:
            log.info("the client closed its end of stdout; the session is over")
