"""The MCP adapter: the only module (with server_wire.py) that imports mcp.

It publishes the catalog through the SDK's low-level Server, serves both protocol eras,
paginates tools/list and caches its serialized pages, keeps the session's visible set for
deferred loading (tool_search), and maps every tools/call through Bridge.call.
"""

from __future__ import annotations

import base64
import binascii
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge import __version__
from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.context import CallContext, InputPending
from mcp_toolbridge.errors import UnknownToolError
from mcp_toolbridge.model import Format
from mcp_toolbridge.server_host import McpHost
from mcp_toolbridge.server_wire import to_result, to_tool

log = logging.getLogger("mcp_toolbridge")

Expose = Literal["auto", "search", "all"]
SEARCH_THRESHOLD = 64
"""--expose auto lists everything up to this many manifest tools, and switches to search."""
PAGE_SIZE = 200
SEARCH_TOOL = "tool_search"


class _Server(Server[Any]):
    """The SDK server, announcing tools.listChanged to legacy clients too."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith("o:"):
            raise ValueError(cursor)
        offset = int(text[2:])
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor") from exc
    if offset < 0:
        raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor")
    return offset


def _is_modern(ctx: ServerRequestContext[Any]) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


@dataclass
class _Published:
    """The wire form of each tool, built once per era."""

    modern: dict[str, types.Tool]
    legacy: dict[str, types.Tool]


class ToolbridgeServer:
    """Holds the bridge, the published tools and the visible set of this connection."""

    def __init__(self, bridge: Bridge, *, expose: Expose = "auto") -> None:
        self.session_id = uuid.uuid4().hex
        self._requested_expose: Expose = expose
        self._loaded: list[str] = []
        self._list_cache: dict[tuple[bool, str | None], HandlerResult] = {}
        self._bus = InMemorySubscriptionBus()
        self._legacy_sessions: dict[int, Any] = {}
        """A ServerSession per open 2025 connection, by id of the connection."""
        self._publish(bridge)
        self.server = _Server(
            "mcp-toolbridge",
            version=__version__,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self._bus),
            get_tool_input_schema=self._input_schema,
        )
        self.server.middleware.append(self._remember_sessions)
        self.server.middleware.append(self._cache_tools_list)
        # Seal the requestState of 2026 multi-round-trip calls (confirmation, question):
        # an answer counts only together with state this server minted for that call.
        self.server.middleware.append(
            RequestStateBoundary(
                RequestStateSecurity.ephemeral(), default_audience="mcp-toolbridge"
            )
        )

    def _publish(self, bridge: Bridge) -> None:
        """Build the wire form of every tool once, and what is always listed."""
        self.bridge = bridge
        specs = bridge.catalog.specs()
        self._published = _Published(
            modern={s.name: to_tool(s, modern=True) for s in specs},
            legacy={s.name: to_tool(s, modern=False) for s in specs},
        )
        manifest_tools = [s.name for s in specs if s.source.format is not Format.BUILTIN]
        builtins = [s.name for s in specs if s.source.format is Format.BUILTIN]
        expose = self._requested_expose
        if expose == "auto":
            expose = "search" if len(manifest_tools) > SEARCH_THRESHOLD else "all"
        if expose == "search" and SEARCH_TOOL not in bridge.catalog:
            raise ValueError("--expose search needs the tool_search built-in in the catalog")
        self.expose: Expose = expose
        self._always = builtins if expose == "search" else [*builtins, *manifest_tools]
        self._loaded = [n for n in self._loaded if n in bridge.catalog and n not in self._always]
        self._list_cache.clear()

    async def swap(self, bridge: Bridge) -> None:
        """Serve a reloaded catalog from now on and tell every client its list changed."""
        self._publish(bridge)
        await self.notify_tools_changed()

    async def notify_tools_changed(self, ctx: ServerRequestContext[Any] | None = None) -> None:
        """list_changed on 2026 listen streams and to every 2025 connection seen so far."""
        await self._bus.publish(ToolsListChanged())
        sessions = list(self._legacy_sessions.values())
        if ctx is not None and not _is_modern(ctx) and ctx.session not in sessions:
            sessions.append(ctx.session)
        for session in sessions:
            try:
                await session.send_tool_list_changed()
            except Exception:  # a closed connection must not stop the others being told
                log.debug("could not notify a closed session", exc_info=True)

    async def _remember_sessions(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Keep a session of each 2025 connection, to notify it of changes outside a request.

        The SDK has no public handle for a connection; its ServerSession objects are made per
        request, so one is kept per connection (the private ``_connection``) and dropped
        when that connection closes."""
        connection = getattr(ctx.session, "_connection", None)
        if not _is_modern(ctx) and connection is not None:
            key = id(connection)
            if key not in self._legacy_sessions:
                connection.exit_stack.callback(self._legacy_sessions.pop, key, None)
            self._legacy_sessions[key] = ctx.session
        return await call_next(ctx)

    # -- listing -----------------------------------------------------------------------------

    def visible_names(self) -> list[str]:
        return [*self._always, *self._loaded]

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        entry = self.bridge.catalog.get(name)
        return entry.spec.input_schema if entry else None

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        published = self._published.modern if _is_modern(ctx) else self._published.legacy
        names = self.visible_names()
        start = _decode_cursor(params.cursor) if params and params.cursor else 0
        page = names[start : start + PAGE_SIZE]
        following = start + PAGE_SIZE
        next_cursor = _encode_cursor(following) if following < len(names) else None
        return types.ListToolsResult(tools=[published[n] for n in page], next_cursor=next_cursor)

    async def _cache_tools_list(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Serve repeated tools/list pages from the already serialized result."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        key = (_is_modern(ctx), cursor if isinstance(cursor, str) else None)
        cached = self._list_cache.get(key)
        if cached is None:
            cached = await call_next(ctx)
            self._list_cache[key] = cached
        return cached

    async def load(self, names: list[str], ctx: ServerRequestContext[Any] | None) -> list[str]:
        """Add tools to the visible set; announce the change in both eras. Returns the new."""
        shown = set(self.visible_names())
        new = [n for n in names if n not in shown and n in self.bridge.catalog]
        if not new:
            return []
        self._loaded.extend(new)
        self._list_cache.clear()
        await self.notify_tools_changed(ctx)
        return new

    # -- calling -----------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        modern = _is_modern(ctx)
        try:
            entry = self.bridge.entry(params.name)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {exc.tool}") from exc

        async def progress(current: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(current, total, message)

        host = McpHost(ctx, params)
        call_ctx = CallContext(session_id=self._session_id(ctx), progress=progress, host=host)
        try:
            outcome = await self.bridge.call(params.name, params.arguments, call_ctx)
        except InputPending as pending:
            return host.input_required(pending)
        except Exception:  # the top-level handler: nothing may leak a traceback to the client
            log.exception("internal error while calling %s", params.name)
            return types.CallToolResult(
                content=[
                    types.TextContent(
                        type="text",
                        text='{"error": "internal error in mcp-toolbridge; see the server log"}',
                    )
                ],
                is_error=True,
            )
        if outcome.ok and params.name == SEARCH_TOOL and isinstance(outcome.value, dict):
            found = [t.get("name") for t in outcome.value.get("tools", [])]
            await self.load([n for n in found if isinstance(n, str)], ctx)
        return to_result(outcome, entry.spec, modern=modern)

    def _session_id(self, ctx: ServerRequestContext[Any]) -> str:
        return self.session_id if ctx.request is None else f"{self.session_id}:{id(ctx.session)}"

    async def run_stdio(self) -> None:
        """Serve this connection over the process's stdin and stdout until EOF."""
        async with stdio_server() as (read_stream, write_stream):
            await self.server.run(
                read_stream, write_stream, self.server.create_initialization_options()
            )
