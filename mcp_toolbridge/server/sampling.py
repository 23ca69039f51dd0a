"""MCP sampling with tools for the task tool: our sampling dataclasses <-> the SDK's wire models.

Sampling is a server-initiated request (``sampling/createMessage``), so it needs a 2025-era
connection whose client declared ``sampling.tools`` and a back channel on this request. The
2026-07-28 protocol deprecates sampling (SEP-2577) and has no server-initiated requests: a
subagent there would have to re-run every earlier turn's tool calls on each multi-round-trip
retry, so task reports sampling as unavailable on such connections instead.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.validation import validate_tool_use_result_messages
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge.host import (
    SamplingBlock,
    SamplingRequest,
    SamplingResult,
    TextBlock,
    ToolUseBlock,
)


def can_sample(ctx: ServerRequestContext[Any]) -> bool:
    """True on a 2025 connection whose client samples with tools and can be asked now."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = ctx.session.client_capabilities
    if caps is None or caps.sampling is None or caps.sampling.tools is None:
        return False
    return ctx.session.can_send_request


def _wire_block(block: SamplingBlock) -> types.SamplingMessageContentBlock:
    if isinstance(block, TextBlock):
        return types.TextContent(type="text", text=block.text)
    if isinstance(block, ToolUseBlock):
        return types.ToolUseContent(id=block.id, name=block.name, input=dict(block.input))
    return types.ToolResultContent(
        tool_use_id=block.tool_use_id,
        content=[types.TextContent(type="text", text=block.text)],
        is_error=block.is_error or None,
    )


def _our_block(block: types.SamplingMessageContentBlock) -> SamplingBlock | None:
    if isinstance(block, types.TextContent):
        return TextBlock(block.text)
    if isinstance(block, types.ToolUseContent):
        return ToolUseBlock(block.id, block.name, dict(block.input))
    return None  # images, audio: nothing a text subagent loop can use


def to_wire(request: SamplingRequest) -> types.CreateMessageRequest:
    messages = [
        types.SamplingMessage(
            role=message.role, content=[_wire_block(block) for block in message.content]
        )
        for message in request.messages
    ]
    validate_tool_use_result_messages(messages)
    tools = [
        types.Tool(name=t.name, description=t.description, input_schema=dict(t.input_schema))
        for t in request.tools
    ]
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(
            messages=messages,
            system_prompt=request.system_prompt,
            max_tokens=request.max_tokens,
            tools=tools or None,
        )
    )


async def sample(ctx: ServerRequestContext[Any], request: SamplingRequest) -> SamplingResult:
    """Ask the client's model for one message, as part of this tools/call request."""
    result = await ctx.session.send_request(
        to_wire(request),
        types.CreateMessageResultWithTools,
        metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
    )
    blocks = [_our_block(block) for block in result.content_as_list]
    return SamplingResult(
        content=tuple(block for block in blocks if block is not None),
        model=result.model,
        stop_reason=result.stop_reason,
    )
