"""The web console (``serve --console``), an edge beside server/ and cli/: a person watches
the audit stream (a live timeline with a chart), the catalog (safety facts, what the policy
does per caller, sandbox profiles, budgets), tool_search's ranking with its evidence, and who
is connected, and answers the confirmations a headless client cannot ask, through the same
Host port an MCP client's elicitation uses. Over HTTP with an authorization server a person
signs in in the browser (login.py; the issuer's side is the server's). It owns no policy
logic: the gate decides, the console shows and relays answers. Server-rendered (Starlette,
Jinja2), assets in the package.

May import: the vocabulary, catalog, policy, builtins, bridge. Not mcp, server, runtime, cli."""

from mcp_toolbridge.console.desk import ConsoleHost, Desk
from mcp_toolbridge.console.feed import AuditFeed
from mcp_toolbridge.console.login import LoginClient
from mcp_toolbridge.console.service import Console, ConsoleOptions

__all__ = ["AuditFeed", "Console", "ConsoleHost", "ConsoleOptions", "Desk", "LoginClient"]
