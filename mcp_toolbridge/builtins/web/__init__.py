"""The web locked tools: web_fetch (pinned GETs, SSRF address policy, HTML to Markdown) and
web_search (providers)."""

from mcp_toolbridge.builtins.web.fetch import SPEC as WEB_FETCH_SPEC
from mcp_toolbridge.builtins.web.fetch import HostCheck, WebFetchTool, redirect_check
from mcp_toolbridge.builtins.web.providers import (
    SearchProvider,
    WebSearchConfig,
    load_web_search_config,
    providers_from_config,
)
from mcp_toolbridge.builtins.web.search import WebSearchTool
from mcp_toolbridge.builtins.web.search import build_spec as build_web_search_spec

__all__ = [
    "WEB_FETCH_SPEC",
    "HostCheck",
    "SearchProvider",
    "WebFetchTool",
    "WebSearchConfig",
    "WebSearchTool",
    "build_web_search_spec",
    "load_web_search_config",
    "providers_from_config",
    "redirect_check",
]
