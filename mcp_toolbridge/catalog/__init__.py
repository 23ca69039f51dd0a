"""The catalog of a server: unique MCP names over every loaded tool, lookup, lazily compiled
validators, pinned tools, and the search index behind tool_search (its builder, its text
analysis, and its cache keyed on the ranking configuration).

May import: the vocabulary only."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.catalog.catalog import Catalog, CatalogEntry, named_as_written
    from mcp_toolbridge.catalog.explaining import Explained, explain
    from mcp_toolbridge.catalog.index import SearchIndex
    from mcp_toolbridge.catalog.index_cache import (
        DeferredIndex,
        index_key,
        is_stored,
        load_index,
        ranking,
        store_index,
        vector_store,
    )
    from mcp_toolbridge.catalog.pins import Pin, pin_tools
    from mcp_toolbridge.catalog.ranking_config import RANKING_CONFIG
    from mcp_toolbridge.catalog.semantic_model import semantic_status

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.catalog.catalog": (
            "Catalog",
            "CatalogEntry",
            "named_as_written",
        ),
        "mcp_toolbridge.catalog.explaining": ("Explained", "explain"),
        "mcp_toolbridge.catalog.index": ("SearchIndex",),
        "mcp_toolbridge.catalog.index_cache": (
            "DeferredIndex",
            "index_key",
            "is_stored",
            "load_index",
            "ranking",
            "store_index",
            "vector_store",
        ),
        "mcp_toolbridge.catalog.pins": (
            "Pin",
            "pin_tools",
        ),
        "mcp_toolbridge.catalog.ranking_config": ("RANKING_CONFIG",),
        "mcp_toolbridge.catalog.semantic_model": ("semantic_status",),
    },
)

__all__ = [
    "RANKING_CONFIG",
    "Catalog",
    "CatalogEntry",
    "DeferredIndex",
    "Explained",
    "Pin",
    "SearchIndex",
    "explain",
    "index_key",
    "is_stored",
    "load_index",
    "named_as_written",
    "pin_tools",
    "ranking",
    "semantic_status",
    "store_index",
    "vector_store",
]
