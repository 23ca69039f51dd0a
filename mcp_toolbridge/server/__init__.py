"""The MCP adapter, the only package that imports ``mcp``: the low-level Server with its
handlers for both protocol eras, the wire mapping of specs and outcomes, the host adapter
(elicitation, sampling, progress), stdio and streamable HTTP transports, and the OAuth
resource server in front of HTTP (auth.py, tokens.py: who calls).

May import: the vocabulary, catalog, bridge. Not runtime, cli."""

import importlib
from typing import TYPE_CHECKING

from mcp_toolbridge.server.replicas import KEYS_ENV, Replica, replica_name, state_keys
from mcp_toolbridge.server.toolbridge_server import SEARCH_THRESHOLD, ToolbridgeServer
from mcp_toolbridge.server.wire import to_tool

if TYPE_CHECKING:
    from mcp_toolbridge.server.console_login import IssuerLogin
    from mcp_toolbridge.server.http import (
        SESSION_IDLE_TIMEOUT_S,
        TOKEN_ENV,
        ConsoleMount,
        HttpOptions,
        HttpService,
        check_binding,
        parse_address,
    )
    from mcp_toolbridge.server.tokens import AuthOptions

_ON_USE = {
    **dict.fromkeys(
        (
            "SESSION_IDLE_TIMEOUT_S",
            "TOKEN_ENV",
            "ConsoleMount",
            "HttpOptions",
            "HttpService",
            "check_binding",
            "parse_address",
        ),
        "mcp_toolbridge.server.http",
    ),
    "IssuerLogin": "mcp_toolbridge.server.console_login",
    "AuthOptions": "mcp_toolbridge.server.tokens",
}
"""Names imported on first use: the HTTP service, its OAuth resource server and the console's
sign-in, which a stdio server never needs (their modules are a part of its start-up)."""


def __getattr__(name: str) -> object:
    module = _ON_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "KEYS_ENV",
    "SEARCH_THRESHOLD",
    "SESSION_IDLE_TIMEOUT_S",
    "TOKEN_ENV",
    "AuthOptions",
    "ConsoleMount",
    "HttpOptions",
    "HttpService",
    "IssuerLogin",
    "Replica",
    "ToolbridgeServer",
    "check_binding",
    "parse_address",
    "replica_name",
    "state_keys",
    "to_tool",
]
