"""The catalog of a server: unique MCP names over every loaded tool, lookup, lazily compiled
validators, pinned tools, and the search index behind tool_search (its builder and its text
analysis).

May import: the vocabulary only."""

from mcp_toolbridge.catalog.catalog import Catalog, CatalogEntry, named_as_written
from mcp_toolbridge.catalog.index import RANKING_CONFIG, SearchIndex
from mcp_toolbridge.catalog.pins import Pin, pin_tools

__all__ = [
    "RANKING_CONFIG",
    "Catalog",
    "CatalogEntry",
    "Pin",
    "SearchIndex",
    "named_as_written",
    "pin_tools",
]
