"""What tools/list always shows (``--expose``): every tool, or with a large catalog the
built-ins and pinned tools alone, the rest found and loaded through tool_search."""

from __future__ import annotations

from typing import Literal

from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.names import PROXY_TOOL

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
