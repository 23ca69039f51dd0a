"""The catalog of a server: unique MCP names over every loaded tool, lookup, lazily compiled
validators, and the search index behind tool_search (its builder and its text analysis).

May import: the vocabulary only."""

from mcp_toolbridge.catalog.catalog import Catalog, CatalogEntry, named_as_written
from mcp_toolbridge.catalog.index import RANKING_CONFIG, SearchIndex

__all__ = ["RANKING_CONFIG", "Catalog", "CatalogEntry", "SearchIndex", "named_as_written"]
