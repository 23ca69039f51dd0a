"""A hand-written MCP server for benchmarks/roundtrip.py: the SDK's low-level Server over the
SDK's stdio transport, publishing one tool, echo_json, with no validation, policy or audit.

    python benchmarks/sdk_server.py              # answers json.dumps(arguments), spawns nothing
    python benchmarks/sdk_server.py --spawn TOOL # runs TOOL per call, arguments on stdin
    python benchmarks/sdk_server.py --anchor TOOL # the same with anyio.open_process

Without ``--spawn`` a call measures what MCP over stdio costs by itself. With it, the tool is run
by ``mcp_toolbridge.executors.subprocess.run_process``, the spawn `serve` uses, so the difference
to `serve` is the product's own pipeline and adapter. ``--anchor`` is the hand-written server of
the performance anchors (shared/notes/performance-anchors.md), call for call: ``json.dumps`` of
the arguments, ``anyio.open_process``, send stdin and close it, read stdout, then stderr,
``wait()``, the stdout as text.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server

ECHO = types.Tool(
    name="echo_json",
    description="Echo the JSON arguments",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
)


async def anchor_spawn(tool: str, payload: bytes) -> bytes:
    """The anchors' call handler body (see the module doc)."""
    async with await anyio.open_process([tool]) as process:
        assert process.stdin and process.stdout and process.stderr
        await process.stdin.send(payload)
        await process.stdin.aclose()
        out = b"".join([chunk async for chunk in process.stdout])
        _ = b"".join([chunk async for chunk in process.stderr])
        await process.wait()
    return out


def make_server(tool: str | None, *, anchor: bool = False) -> Server[Any]:
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[ECHO])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        payload = json.dumps(params.arguments or {})
        if tool is None:
            text = payload
        elif anchor:
            text = (await anchor_spawn(tool, payload.encode())).decode()
        else:
            from mcp_toolbridge.executors.subprocess import run_process  # --spawn only

            outcome = await run_process(
                [tool], stdin=payload.encode(), cwd=None, env=env, timeout_s=60, sandbox=None
            )
            text = outcome.stdout.decode()
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("sdk-server", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawn", metavar="TOOL", help="run TOOL for every call")
    parser.add_argument("--anchor", metavar="TOOL", help="the same with anyio.open_process")
    args = parser.parse_args()
    server = make_server(args.anchor or args.spawn, anchor=args.anchor is not None)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
