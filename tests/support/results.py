"""Reading MCP tool results in tests the way clients do."""

from __future__ import annotations

import json

import mcp_types as types


def text_of(result: types.CallToolResult) -> str:
    """The result's one text block: what every client shows the model of a failure, and
    what text-first clients show of a success."""
    assert len(result.content) == 1, result.content
    block = result.content[0]
    assert isinstance(block, types.TextContent), block
    return block.text


CLIENTS = (
    "claude-code",
    "vscode",
    "pydantic-ai",
    "openai-agents",
    "langchain-mcp-adapters",
)
"""The clients whose display of a tool result was measured (shared notes, ecosystem §4b)."""


def shown_to_model(result: types.CallToolResult, client: str) -> str:
    """What ``client`` puts before its model of ``result``, as measured (ecosystem §4b):

    - Claude Code: of a success with structuredContent, ``JSON.stringify`` of it alone (the
      text never reaches the model); of an error, or a result without it, the text;
    - VS Code Copilot and pydantic-ai: structuredContent when there is one, else the text;
    - openai-agents and langchain-mcp-adapters: the text content.

    ``JSON.stringify`` is compact JSON that keeps non-ASCII characters as they are."""
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    structured = result.structured_content
    prefers_structured = client in ("vscode", "pydantic-ai") or (
        client == "claude-code" and not result.is_error
    )
    if structured is not None and prefers_structured:
        return json.dumps(structured, separators=(",", ":"), ensure_ascii=False)
    assert client in CLIENTS, client
    return "\n".join(texts)


def found_tools(result: types.CallToolResult) -> list[str]:
    """The tools a tool_search result names, in order: its ``## name`` lines, as a model reads
    them (the text is the whole result)."""
    assert not result.is_error, result
    assert result.structured_content is None, result
    return [line[3:] for line in text_of(result).splitlines() if line.startswith("## ")]
