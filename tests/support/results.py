"""Reading MCP tool results in tests the way clients do."""

from __future__ import annotations

import mcp_types as types


def text_of(result: types.CallToolResult) -> str:
    """The result's one text block: what every client shows the model of a failure, and
    what text-first clients show of a success."""
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text
