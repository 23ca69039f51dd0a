"""The web locked tools: web_fetch (pinned GETs, SSRF address policy, HTML to Markdown) and
web_search (providers)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.builtins.web.fetch_spec import SPEC as WEB_FETCH_SPEC
from mcp_toolbridge.builtins.web.search_spec import build_spec as build_web_search_spec
from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.web.fetch import HostCheck, WebFetchTool, redirect_check
    from mcp_toolbridge.builtins.web.providers import (
        SearchProvider,
        WebSearchConfig,
        load_web_search_config,
        providers_from_config,
    )
    from mcp_toolbridge.builtins.web.search import WebSearchTool

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.builtins.web.fetch": (
            "HostCheck",
            "WebFetchTool",
            "redirect_check",
        ),
        "mcp_toolbridge.builtins.web.providers": (
            "SearchProvider",
            "WebSearchConfig",
            "load_web_search_config",
            "providers_from_config",
        ),
        "mcp_toolbridge.builtins.web.search": ("WebSearchTool",),
    },
)

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
