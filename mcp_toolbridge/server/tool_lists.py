"""What each caller's tools/list shows: the tools' wire forms (built once per catalog), what
is always listed (``--expose``: every tool, or with a large catalog the built-ins and pinned
tools alone, the rest found and loaded through tool_search), what tool_search loaded per
2025-era scope (deferred loading), and the serialized pages, kept per caller view and served
again.

A 2026-07-28 request and a sessionless one see the list of the catalog and the options
alone; a 2025-era connection with a scope sees that list and what tool_search loaded there,
and is told its list changed when that grows."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.host import Caller, FoundTools
from mcp_toolbridge.names import PROXY_TOOL
from mcp_toolbridge.server.host import PROCESS_SCOPE, caller_of, is_modern, scope_of
from mcp_toolbridge.server.listing import Opening, decode_cursor, encode_cursor
from mcp_toolbridge.server.wire import Published

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Bridge

log = logging.getLogger("mcp_toolbridge")

Expose = Literal["auto", "search", "all"]
SEARCH_THRESHOLD = 64
"""--expose auto lists everything up to this many manifest tools, and switches to search."""
SEARCH_TOOL = "tool_search"


def always_listed(catalog: Catalog, requested: Expose) -> tuple[Expose, list[str]]:
    """The exposure ``requested`` comes to for ``catalog`` ("search" or "all"), and the names
    always listed under it, in catalog order. Reads names only: a restored catalog's records
    stay unread."""
    manifest_tools = catalog.manifest_names()
    builtins = catalog.builtin_names()
    expose = requested
    if expose == "auto":
        searchable = SEARCH_TOOL in catalog
        expose = "search" if searchable and len(manifest_tools) > SEARCH_THRESHOLD else "all"
    if expose == "search" and SEARCH_TOOL not in catalog:
        raise ValueError("--expose search needs the tool_search built-in in the catalog")
    if expose == "search":
        locked = set(builtins)
        pinned = [n for n in catalog.pinned_names() if n not in locked]
        return expose, [*builtins, *pinned]
    # everything is listed: the proxy is not needed, unless pinned
    proxy = catalog.get(PROXY_TOOL)
    unneeded = proxy is not None and not proxy.spec.pinned
    return expose, [*(n for n in builtins if not (unneeded and n == PROXY_TOOL)), *manifest_tools]


def found_directly(expose: Expose, catalog: Catalog, *, modern: bool, scope: str | None) -> bool:
    """Whether a caller calls what tool_search finds directly: when every tool is listed, or
    on a 2025-era connection whose list the hits join (``scope`` not None); else through the
    proxy (a 2026-07-28 list never changes as a side effect, and a sessionless one has no
    set)."""
    if expose == "all" or PROXY_TOOL not in catalog:
        return True
    return not modern and scope is not None


PAGE_SIZE = 200
ListKey = tuple[bool, str | None, str | None, Hashable]
"""(modern, cursor, scope, caller view): one serialized page."""


class ToolLists:
    """The listing state of a ToolbridgeServer (see the module doc). ``bridge()`` is the
    server's bridge now (an :class:`Opening` until it is open); ``on_first_list`` is called
    once, when the first tools/list has been answered."""

    def __init__(
        self,
        bridge: Callable[[], Bridge | Opening],
        expose: Expose,
        on_first_list: Callable[[], None] | None = None,
    ) -> None:
        self._bridge = bridge
        self._requested: Expose = expose
        self._on_first_list = on_first_list
        self._loaded: dict[str, list[str]] = {}
        """Tools loaded by tool_search, per visibility scope (see server.host.scope_of)."""
        self._pages: dict[ListKey, HandlerResult] = {}
        self.publish()

    def publish(self) -> None:
        """Build the wire form of every tool of the bridge's catalog once, and what is
        always listed; keep only the loaded tools the catalog still has."""
        catalog = self._bridge().catalog
        self._published = Published(catalog)
        self.expose, self._always = always_listed(catalog, self._requested)
        self._loaded = {
            scope: [n for n in names if n in catalog and n not in self._always]
            for scope, names in self._loaded.items()
        }
        self._pages.clear()

    def digest(self) -> str:
        """What a 2026-07-28 client's tools/list holds now, digested (replicas compare it)."""
        wire = [self._published.tool(n, modern=True).model_dump(mode="json") for n in self._always]
        return hashlib.sha256(json.dumps(wire, sort_keys=True).encode()).hexdigest()

    def visible_names(
        self, scope: str | None = PROCESS_SCOPE, *, modern: bool = False
    ) -> list[str]:
        """What tools/list shows in ``scope``: what is always listed, in catalog order, then
        (on a 2025-era connection with a scope) what tool_search loaded there."""
        if modern or scope is None:
            return list(self._always)
        return [*self._always, *self._loaded.get(scope, [])]

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        """The tools/list handler: one page of what the caller may call."""
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
        bridge = self._bridge()
        if bridge.caller_view(caller) is None:
            return names
        catalog = bridge.catalog
        return [n for n in names if (e := catalog.get(n)) and bridge.callable_by(e.spec, caller)]

    async def cached(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: serve repeated tools/list pages from the already serialized result
        (one per caller view: callers whose rules differ may see different lists)."""
        if ctx.method != "tools/list":
            return await call_next(ctx)
        cursor = (ctx.params or {}).get("cursor")
        modern = is_modern(ctx)
        scope = None if modern else scope_of(ctx)  # one list for every 2026-07-28 request
        view = self._bridge().caller_view(caller_of(ctx))
        key = (modern, cursor if isinstance(cursor, str) else None, scope, view)
        cached = self._pages.get(key)
        if cached is None:
            cached = await call_next(ctx)
            self._pages[key] = cached
        if self._on_first_list is not None:
            first, self._on_first_list = self._on_first_list, None
            first()
        return cached

    def found_tools(self, ctx: ServerRequestContext[Any]) -> FoundTools:
        """How this caller calls what tool_search finds (see found_directly)."""
        catalog, modern = self._bridge().catalog, is_modern(ctx)
        if self.expose == "all" or PROXY_TOOL not in catalog:
            return "direct"
        direct = found_directly(self.expose, catalog, modern=modern, scope=scope_of(ctx))
        return "loaded" if direct else "proxy"

    async def load(self, names: list[str], ctx: ServerRequestContext[Any]) -> list[str]:
        """Add tools to the visible set of the caller, a 2025-era connection, and tell that
        connection its list changed. A 2026-07-28 or sessionless request has no set to add
        to: its list depends on the catalog and the options alone, and its found tools are
        called through the proxy. Returns the names added."""
        scope = scope_of(ctx)
        if scope is None or is_modern(ctx):
            return []
        shown = set(self.visible_names(scope))
        catalog = self._bridge().catalog
        new = [n for n in names if n not in shown and n in catalog]
        if not new:
            return []
        self._loaded.setdefault(scope, []).extend(new)
        self._forget_pages(scope)
        try:
            await ctx.session.send_tool_list_changed()
        except Exception:  # a closed connection: nobody to tell
            log.debug("could not notify a closed session", exc_info=True)
        return new

    def forget(self, scope: str) -> None:
        """A stateful HTTP session closed: drop its visible set and its pages."""
        self._loaded.pop(scope, None)
        self._forget_pages(scope)

    def _forget_pages(self, scope: str | None) -> None:
        for key in [k for k in self._pages if k[2] == scope]:
            del self._pages[key]
