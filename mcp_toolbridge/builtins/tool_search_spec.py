"""tool_search's declaration (ToolSpec), apart from its search (tool_search.py): listing it
imports no executor module."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import TEXT_MAX, builtin_spec
from mcp_toolbridge.model import Safety

DEFAULT_RESULTS = 5
MAX_RESULTS = 20

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": (
                "What you need, in words (e.g. 'send an email', 'current time in a city'), "
                "a tool name, or 'select:name_a,name_b' to load exactly those tools."
            ),
        },
        "max_results": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_RESULTS,
            "description": f"How many tools to return (default {DEFAULT_RESULTS}).",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

SPEC = builtin_spec(
    "tool_search",
    title="Search tools",
    description=(
        "Search the catalog of available tools. Returns each match's name, description and "
        "input schema, and how to call the matches. Use it before calling a tool you do not "
        "see in your tool list."
    ),
    input_schema=INPUT_SCHEMA,
    # No output schema: the hits as text are the whole result, the one form every client
    # shows a model as it is (server/wire.py; tool descriptions run over several lines). The
    # value (query, tools: name, description, input_schema; how_to_call) stays what `call`
    # prints and what the server loads the hits from.
    safety=Safety(read_only=True, idempotent=True, open_world=False, inferred=frozenset()),
)
