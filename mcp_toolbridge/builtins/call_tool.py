"""call_tool: the proxy listed beside tool_search, so that a found tool can be called in every
client.

A 2026-07-28 client's tools/list never grows as a side effect of a search, and many clients let
a model call only the tools they list. call_tool is listed from the start and runs a catalog
tool named in its arguments. It has no implementation of its own: ``Bridge.call`` unwraps a
call of it into a call of the named tool, which then runs exactly as a direct call would (its
schema validation, capabilities, rules, confirmation, timeout and audit line), so no rule of
the real tool can be bypassed through it. It reaches the manifest tools only: the locked tools
(tool_search and itself among them) are listed and called directly.

Its safety facts are the least permissive of the tools it can reach, so a client that reads
the annotations never sees it as safer than the worst tool behind it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.model import Safety, ToolSpec
from mcp_toolbridge.names import PROXY_TOOL

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "description": "The exact name tool_search gave for the tool.",
        },
        "arguments": {
            "type": "object",
            "description": (
                "The tool's arguments: an object valid against the input schema tool_search "
                "gave for it (default {})."
            ),
        },
    },
    "required": ["name"],
    "additionalProperties": False,
}

DESCRIPTION = (
    "Call a tool that tool_search found and that is not in your tool list: give its exact "
    "name and its arguments. It runs as that tool, with the same checks, permissions and "
    "confirmation, and returns that tool's result. Call the tools in your list directly."
)


def reachable_safety(reachable: Iterable[ToolSpec]) -> Safety:
    """The least permissive safety facts of ``reachable``: read-only and idempotent only when
    every tool is, destructive and open world when any tool is."""
    specs = list(reachable)
    return Safety(
        read_only=all(s.safety.read_only for s in specs),
        destructive=any(s.safety.destructive for s in specs),
        idempotent=all(s.safety.idempotent for s in specs),
        open_world=any(s.safety.open_world for s in specs),
        requires_confirmation=False,
        inferred=frozenset(),
    )


def proxy_spec(reachable: Iterable[ToolSpec]) -> ToolSpec:
    """call_tool's declaration over the tools it can reach (the catalog's manifest tools)."""
    return builtin_spec(
        PROXY_TOOL,
        title="Call a found tool",
        description=DESCRIPTION,
        input_schema=INPUT_SCHEMA,
        safety=reachable_safety(reachable),
    )
