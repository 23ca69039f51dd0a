"""The MCP adapter's server: ToolbridgeServer on the SDK's low-level Server.

It publishes the catalog through the SDK's low-level Server, serves both protocol eras,
paginates tools/list and caches its serialized pages, keeps the session's visible set for
deferred loading (tool_search), and maps every tools/call through Bridge.call. MCP logging
(levels, messages of calls and of the server) is in host.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
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
    Caller,
    Connected,
    FoundTools,
    InputPending,
    LogLevel,
    SharedHost,
)
from mcp_toolbridge.server.connections import ConnectionLog
from mcp_toolbridge.server.exposure import (
    SEARCH_TOOL,
    Expose,
    always_listed,
    found_directly,
)
from mcp_toolbridge.server.host import (
    PROCESS_SCOPE,
    ClientLog,
    McpHost,
    asks_progress,
    caller_of,
    is_modern,
    scope_of,
)
from mcp_toolbridge.server.listing import (
    Opening,
    SdkServer,
    decode_cursor,
    encode_cursor,
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
from mcp_toolbridge.server.wire import Published, to_result

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Bridge

log = logging.getLogger("mcp_toolbridge")

PAGE_SIZE = 200
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
    """Holds the bridge, the published tools and each session's visible set."""

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
        self._requested_expose: Expose = expose
        self._loaded: dict[str, list[str]] = {}
        """Tools loaded by tool_search, per visibility scope (see _scope)."""
        self._http_sessions: dict[str, str] = {}
        """An opaque session id per Mcp-Session-Id: the header value is never logged."""
        self._on_session_end = on_session_end
        self._list_cache: dict[tuple[bool, str | None, str | None, Hashable], HandlerResult] = {}
        self._bus: InMemorySubscriptionBus | SharedBus = StaleList()
        if replica is not None:
            self._bus = replica.bus
            replica.bus.digest = self.listing_digest
            replica.on_lost = self.bridge_lost
        self._legacy_sessions: dict[int, Any] = {}
        """A ServerSession per open 2025 connection, by id of the connection."""
        shared = replica.shared if replica is not None else None
        self._outputs = Outputs(sidecar_dir, expired=self._output_expired, shared=shared)
        self._client_log = ClientLog(notices)
        self._on_first_list = on_first_list
        self._console = console
        self._connections = (
            ConnectionLog(self._audit_session)
            if replica is None
            else ConnectionLog(self._audit_session, replica.name)
        )
        self._publish(bridge)
        self._listens = ListenHandler(self._bus)
        self.server = SdkServer(
            "mcp-toolbridge",
            on_list_tools=self._list_tools,
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
        self.server.middleware.append(self._cache_tools_list)
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

    def _publish(self, bridge: Bridge | Opening) -> None:
        """Build the wire form of every tool once, and what is always listed."""
        self.bridge = bridge
        self._published = Published(bridge.catalog)
        self.expose, self._always = always_listed(bridge.catalog, self._requested_expose)
        self._loaded = {
            scope: [n for n in names if n in bridge.catalog and n not in self._always]
            for scope, names in self._loaded.items()
        }
        self._list_cache.clear()

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
        self._publish(bridge)
        if before is None or before != self.listing_digest():
            await self.notify_tools_changed()

    def listing_digest(self) -> str:
        """What a 2026-07-28 client's tools/list holds now, digested (replicas compare it)."""
        wire = [self._published.tool(n, modern=True).model_dump(mode="json") for n in self._always]
        return hashlib.sha256(json.dumps(wire, sort_keys=True).encode()).hexdigest()

    async def notify_tools_changed(self, ctx: ServerRequestContext[Any] | None = None) -> None:
        """list_changed on 2026 listen streams and to every 2025 connection seen so far."""
        await self._bus.publish(ToolsListChanged())
        sessions = list(self._legacy_sessions.values())
        if ctx is not None and not is_modern(ctx) and ctx.session not in sessions:
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

        The SDK has no public handle for a connection; its ServerSession objects are made per
        request, so one is kept per connection (the private ``_connection``) and dropped
        when that connection closes."""
        connection = getattr(ctx.session, "_connection", None)
        if not is_modern(ctx) and connection is not None:
            key = id(connection)
            if key not in self._legacy_sessions:
                connection.exit_stack.callback(self._legacy_sessions.pop, key, None)
                scope = scope_of(ctx)
                if scope:  # a stateful HTTP session: forget its state when it closes
                    connection.exit_stack.callback(self._end_http_session, scope)
            self._legacy_sessions[key] = ctx.session
            if scope_of(ctx) is not None:  # a sessionless request is a connection of its own
                await self._client_log.greet(ctx)
        return await call_next(ctx)

    # -- listing -----------------------------------------------------------------------------

    def visible_names(
        self, scope: str | None = PROCESS_SCOPE, *, modern: bool = False
    ) -> list[str]:
        """What tools/list shows in ``scope``: what is always listed, in catalog order, then
        (on a 2025-era connection with a scope) what tool_search loaded there. A 2026-07-28
        request and a sessionless one see the list of the catalog and the options alone."""
        if modern or scope is None:
            return list(self._always)
        return [*self._always, *self._loaded.get(scope, [])]

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        entry = self.bridge.catalog.get(name)
        return entry.spec.input_schema if entry else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        modern = is_modern(ctx)
        names = self._callable(self.visible_names(scope_of(ctx), modern=modern), caller_of(ctx))
        start = decode_cursor(params.cursor) if params and params.cursor else 0
        page = names[start : start + PAGE_SIZE]
        following = start + PAGE_SIZE
        next_cursor = encode_cursor(following) if following < len(names) else None
        tools = [self._published.tool(n, modern=modern) for n in page]
        return types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    def _callable(self, names: list[str], caller: Caller) -> list[str]:
        """``names`` without the tools ``caller`` may not call (rules for some callers)."""
        if self.bridge.caller_view(caller) is None:
            return names
        catalog = self.bridge.catalog
        return [
            n for n in names if (e := catalog.get(n)) and self.bridge.callable_by(e.spec, caller)
        ]

    async def _cache_tools_list(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Serve repeated tools/list pages from the already serialized result (one per
        caller view: callers whose rules differ may see different lists)."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        modern = is_modern(ctx)
        scope = None if modern else scope_of(ctx)  # one list for every 2026-07-28 request
        view = self.bridge.caller_view(caller_of(ctx))
        key = (modern, cursor if isinstance(cursor, str) else None, scope, view)
        cached = self._list_cache.get(key)
        if cached is None:
            cached = await call_next(ctx)
            self._list_cache[key] = cached
        if self._on_first_list is not None:
            first, self._on_first_list = self._on_first_list, None
            first()
        return cached

    def _found_tools(self, ctx: ServerRequestContext[Any]) -> FoundTools:
        """How this caller calls what tool_search finds (see exposure.found_directly)."""
        catalog, modern = self.bridge.catalog, is_modern(ctx)
        direct = found_directly(self.expose, catalog, modern=modern, scope=scope_of(ctx))
        return "direct" if direct else "proxy"

    async def load(self, names: list[str], ctx: ServerRequestContext[Any]) -> list[str]:
        """Add tools to the visible set of the caller, a 2025-era connection, and tell that
        connection its list changed. A 2026-07-28 or sessionless request has no set to add
        to: its list depends on the catalog and the options alone, and its found tools are
        called through the proxy. Returns the names added."""
        scope = scope_of(ctx)
        if scope is None or is_modern(ctx):
            return []
        shown = set(self.visible_names(scope))
        new = [n for n in names if n not in shown and n in self.bridge.catalog]
        if not new:
            return []
        self._loaded.setdefault(scope, []).extend(new)
        self._forget_lists(scope)
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:  # a closed connection: nobody to tell
            log.debug("could not notify a closed session", exc_info=True)
        return new

    def _forget_lists(self, scope: str | None) -> None:
        for key in [k for k in self._list_cache if k[2] == scope]:
            del self._list_cache[key]

    def _end_http_session(self, scope: str) -> None:
        """A stateful HTTP session closed: drop its visible set and its session state."""
        self._loaded.pop(scope, None)
        self._forget_lists(scope)
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
            found_tools=self._found_tools(ctx),
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
            await self.load([n for n in found if isinstance(n, str)], ctx)
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
