"""tool_search: find catalog tools by query. On a connection whose list may grow (2025 era)
the server loads the hits into it; elsewhere they are called through the proxy (call_tool).
Each hit carries what a model needs to call it in one step, and the result says how."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

import anyio.to_thread

from mcp_toolbridge.builtins.tool_search_spec import DEFAULT_RESULTS, SPEC
from mcp_toolbridge.catalog import Catalog, DeferredIndex, SearchIndex
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import Caller, FoundTools
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import PROXY_TOOL

HOW_TO_CALL: dict[FoundTools, str] = {
    "direct": "These tools are in your tool list now: call each one directly by its name.",
    "loaded": (
        "These tools are in your tool list now: call each one directly by its name; if it is "
        f'not, call it through {PROXY_TOOL} with {{"name": "<its name>", "arguments": {{...}}}}.'
    ),
    "proxy": (
        f"These tools are not in your tool list: call one through {PROXY_TOOL} with "
        '{"name": "<its name>", "arguments": {...}}, the arguments valid against its '
        "input_schema."
    ),
}
"""What the result says about calling the hits, by how the caller reaches them. "loaded": the
server added them to a 2025 session's list and said so (tools/list_changed), but a client
that lists its tools once (langchain-mcp-adapters) never shows them to the model, which then
goes through the proxy."""
NO_MATCH = (
    "Search again with other words for what you need (what the tool does, not how), or a "
    "tool name; if nothing fits, do the task without a catalog tool or tell the user none "
    "is available."
)
"""What the result says when no tool matches."""


class ToolSearch:
    """The tool_search built-in over a SearchIndex of the catalog's manifest tools."""

    spec = SPEC

    def __init__(
        self,
        index: SearchIndex | DeferredIndex,
        catalog: Catalog,
        visible: Callable[[str], bool] | None = None,
        access: ToolAccess | None = None,
    ) -> None:
        """``access``: which callers may call which tools (a hit the caller may not call is
        never shown to it)."""
        self._index = index
        self._catalog = catalog
        self._visible = visible
        self._access = access

    async def index(self) -> SearchIndex:
        """The index searched, once ready (a big one may still be read from the cache)."""
        index = self._index
        if isinstance(index, DeferredIndex):
            index = await index.ready()
        if not index.warm:  # the first search reads the tables and embeds the catalog
            await anyio.to_thread.run_sync(index.warm_up)
        return index

    async def run(self, request: ExecRequest) -> ExecResult:
        query = str(request.arguments["query"])
        limit = int(request.arguments.get("max_results", DEFAULT_RESULTS))
        index = await self.index()
        found = index.find(query, limit, visible=self._for(request.context.caller))
        tools = []
        for hit in found.hits:
            entry = self._catalog.get(hit.name)
            if entry is None:
                continue
            spec = entry.spec
            tools.append(
                {
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                }
            )
        if not tools:
            closest = [name for name in found.closest if self._catalog.get(name) is not None]
            value: dict[str, Any] = {
                "query": query,
                "tools": [],
                "how_to_call": NO_MATCH,
                "closest": closest,
            }
            return ExecResult(ok=True, value=value, text=_no_match(query, closest))
        how = HOW_TO_CALL[request.context.found_tools]
        value = {"query": query, "tools": tools, "how_to_call": how}
        return ExecResult(ok=True, value=value, text=_text(tools, how))

    def _for(self, caller: Caller) -> Callable[[str], bool] | None:
        """What this caller's search may find (None: everything)."""
        access, visible = self._access, self._visible
        if access is None or access.caller_view(caller) is None:  # the same for everyone
            return visible

        def callable_by(name: str) -> bool:
            entry = self._catalog.get(name)
            if entry is None or not access.callable_by(entry.spec, caller):
                return False
            return visible is None or visible(name)

        return callable_by


class ToolAccess(Protocol):
    """Which callers may call which tools (``Policy``)."""

    def callable_by(self, spec: ToolSpec, caller: Caller) -> bool: ...

    def caller_view(self, caller: Caller) -> tuple[int, ...] | None: ...


def _no_match(query: str, closest: list[str]) -> str:
    """Nothing matched: say so plainly, then the nearest names, marked as a hint only."""
    text = (
        f"No tool matches {query!r}: no tool in the catalog does that, as far as its names "
        "and descriptions tell."
    )
    if closest:
        text += (
            f" Closest names, not matches (a hint only; do not call one unless it clearly "
            f"does the job): {', '.join(closest)}."
        )
    return text + " " + NO_MATCH


def _text(tools: list[dict[str, Any]], how: str) -> str:
    """How to call the hits, then each tool's name, description and input schema (compact
    JSON: the model writes the arguments as JSON, so JSON is the readable form of a
    schema)."""
    parts = [f"Found {len(tools)} tool(s). {how}"]
    for tool in tools:
        schema = json.dumps(tool["input_schema"], ensure_ascii=False, separators=(",", ":"))
        parts.append(f"\n## {tool['name']}\n{tool['description']}\nInput schema: {schema}")
    return "\n".join(parts)
