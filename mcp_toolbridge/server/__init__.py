"""The MCP adapter, the only package that imports ``mcp``: the low-level Server with its
handlers for both protocol eras, the wire mapping of specs and outcomes, the host adapter
(elicitation, sampling, progress), stdio and streamable HTTP transports, and the OAuth
resource server in front of HTTP (auth.py, auth_options.py, tokens.py: who calls).

May import: the vocabulary, catalog, bridge. Not runtime, cli."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use
from mcp_toolbridge.server.listing import Opening
from mcp_toolbridge.server.replicas import KEYS_ENV, Replica, replica_name, state_keys
from mcp_toolbridge.server.tool_lists import SEARCH_THRESHOLD
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from mcp_toolbridge.server.wire import to_tool

if TYPE_CHECKING:
    from mcp_toolbridge.server.auth_options import AuthOptions
    from mcp_toolbridge.server.console_login import IssuerLogin
    from mcp_toolbridge.server.deadlines import timed_protocol
    from mcp_toolbridge.server.http import ConsoleMount, HttpService
    from mcp_toolbridge.server.http_options import (
        SESSION_IDLE_TIMEOUT_S,
        TOKEN_ENV,
        WILDCARDS,
        HttpOptions,
        check_binding,
        parse_address,
        reach_line,
    )

__getattr__ = on_first_use(  # what a stdio server never needs (a part of its start-up)
    __name__,
    {
        "mcp_toolbridge.server.http": ("ConsoleMount", "HttpService"),
        "mcp_toolbridge.server.http_options": (
            "SESSION_IDLE_TIMEOUT_S",
            "TOKEN_ENV",
            "WILDCARDS",
            "HttpOptions",
            "check_binding",
            "parse_address",
            "reach_line",
        ),
        "mcp_toolbridge.server.console_login": ("IssuerLogin",),
        "mcp_toolbridge.server.deadlines": ("timed_protocol",),
        "mcp_toolbridge.server.auth_options": ("AuthOptions",),
    },
)


__all__ = [
    "KEYS_ENV",
    "SEARCH_THRESHOLD",
    "SESSION_IDLE_TIMEOUT_S",
    "TOKEN_ENV",
    "WILDCARDS",
    "AuthOptions",
    "ConsoleMount",
    "HttpOptions",
    "HttpService",
    "IssuerLogin",
    "Opening",
    "Replica",
    "ToolbridgeServer",
    "check_binding",
    "parse_address",
    "reach_line",
    "replica_name",
    "state_keys",
    "timed_protocol",
    "to_tool",
]
