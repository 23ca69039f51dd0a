"""The catalog of a server: unique MCP names over every loaded tool, lookup, lazily compiled
validators, and the search index behind tool_search (its builder, its text analysis, and its
cache keyed on the ranking configuration).

May import: the vocabulary only."""

from mcp_toolbridge.catalog.catalog import Catalog, CatalogEntry, named_as_written
from mcp_toolbridge.catalog.index import SearchIndex
from mcp_toolbridge.catalog.index_cache import (
    RANKING_VERSION,
    DeferredIndex,
    index_key,
    is_stored,
    load_index,
    ranking,
    store_index,
)

__all__ = [
    "RANKING_VERSION",
    "Catalog",
    "CatalogEntry",
    "DeferredIndex",
    "SearchIndex",
    "index_key",
    "is_stored",
    "load_index",
    "named_as_written",
    "ranking",
    "store_index",
]
