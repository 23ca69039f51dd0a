"""ToolSpec -> MCP Tool and CallOutcome -> CallToolResult, per protocol era.

The 2025 era requires an object root for ``outputSchema`` and ``structuredContent``; a tool
whose output is anything else is published there with its schema wrapped as
``{"result": <schema>}`` and its results as ``{"result": <value>}``. The 2026 era takes any
JSON Schema and any JSON value, so nothing is wrapped.

A tool's ``_meta`` carries its source and kind (``toolbridge/...``) and the discovery facts the
clients that defer tools by themselves read: ``anthropic/alwaysLoad`` on a pinned tool,
``anthropic/searchHint`` on a tool whose manifest gives keywords.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types as types

from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.model import ToolSpec, tool_kind
from mcp_toolbridge.schemas import inline_refs

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import CallOutcome

META_PREFIX = "toolbridge/"
ALWAYS_LOAD = "anthropic/alwaysLoad"
"""A pinned tool: clients that defer tools by themselves (Claude Code) load it at once."""
SEARCH_HINT = "anthropic/searchHint"
"""The tool's search hint (its manifest's keywords), which such clients search beside its
name and description."""


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


def wraps_output(spec: ToolSpec, modern: bool) -> bool:
    """Whether results of this tool are wrapped as {"result": value} in this era."""
    if modern or spec.output_schema is None:
        return False
    return not _is_object_schema(spec.output_schema)


def tool_meta(spec: ToolSpec) -> dict[str, Any]:
    meta: dict[str, Any] = {
        f"{META_PREFIX}id": spec.id,
        f"{META_PREFIX}source": spec.source.path,
        f"{META_PREFIX}index": spec.source.index,
        f"{META_PREFIX}format": spec.source.format.value,
        f"{META_PREFIX}acp_kind": tool_kind(spec),
    }
    if spec.namespace:
        meta[f"{META_PREFIX}namespace"] = spec.namespace
    if spec.tags:
        meta[f"{META_PREFIX}tags"] = list(spec.tags)
    if spec.budget is not None:
        meta[f"{META_PREFIX}budget"] = spec.budget.model_dump(exclude_none=True)
    if spec.pinned:
        meta[ALWAYS_LOAD] = True
    hint = spec.search_hint
    if hint is not None:
        meta[SEARCH_HINT] = hint
    return meta


def tool_title(spec: ToolSpec) -> str | None:
    """The title a client shows: the declared one, else the id as written when its MCP name is
    a transliteration (``翻译文本`` served as ``FanYiWenBen``), so a person still reads it."""
    if spec.title or spec.id.isascii() or spec.is_locked:
        return spec.title
    return spec.id


def to_tool(spec: ToolSpec, *, modern: bool) -> types.Tool:
    output_schema = spec.output_schema
    if output_schema is not None and wraps_output(spec, modern):
        output_schema = {
            "type": "object",
            "properties": {"result": output_schema},
            "required": ["result"],
        }
    safety = spec.safety
    title = tool_title(spec)
    annotations = types.ToolAnnotations(
        title=title,
        read_only_hint=safety.read_only,
        destructive_hint=safety.destructive,
        idempotent_hint=safety.idempotent,
        open_world_hint=safety.open_world,
    )
    return types.Tool(
        name=spec.name,
        title=title,
        description=spec.description,
        input_schema=inline_refs(spec.input_schema),
        output_schema=output_schema,
        annotations=annotations,
        meta=tool_meta(spec),
    )


def _envelope_meta(outcome: CallOutcome) -> dict[str, Any]:
    meta: dict[str, Any] = {"duration_ms": outcome.duration_ms, "truncated": outcome.truncated}
    if outcome.output_path:
        meta["output_path"] = outcome.output_path
    if outcome.code is not None:
        meta[f"{META_PREFIX}code"] = outcome.code.value
    meta.update(outcome.meta)
    return meta


def to_result(
    outcome: CallOutcome,
    spec: ToolSpec,
    *,
    modern: bool,
    link: types.ResourceLink | None = None,
) -> types.CallToolResult:
    """Success: the text written for the model (the tool's own, else its value as JSON) and
    the value as structuredContent, except for a tool that writes its own text and publishes
    no outputSchema (the locked tools whose results are read: file lines, matches, paths,
    command output, a diff, a page, a skill, a subagent's answer, found tools, a checklist):
    its text is the whole result, since Claude Code and VS Code show a model
    ``JSON.stringify(structuredContent)`` instead of the text whenever there is one, its
    newlines, tabs and quotes escaped. The spec's outputSchema is thus the one switch between
    the two forms (docs/builtins.md, "What the model reads"). Failure: the message as
    text and no structuredContent at all, whatever the tool's outputSchema (clients on the
    TypeScript SDK check a failure's structuredContent against it too, and reject the whole
    result when it does not match); the error code and the tool's own failure value ride in
    ``_meta``. ``link``: the whole output of a truncated result, after the text (outputs.py)."""
    extra: list[types.ContentBlock] = [link] if link is not None else []
    meta = _envelope_meta(outcome)
    if not outcome.ok:
        if outcome.value is not None:
            meta[f"{META_PREFIX}details"] = outcome.value
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.error or "tool failed"), *extra],
            is_error=True,
            meta=meta,
        )
    value = outcome.value
    if outcome.text is not None and spec.output_schema is None:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.text), *extra],
            is_error=False,
            meta=meta,
        )
    text = outcome.text if outcome.text is not None else json.dumps(value, ensure_ascii=False)
    structured: Any = value
    if wraps_output(spec, modern) or (not modern and not isinstance(value, dict)):
        structured = {"result": value}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text), *extra],
        structured_content=structured,
        is_error=False,
        meta=meta,
    )


class Published:
    """The wire form of each tool per era, built on first use and kept.

    Built lazily: a search-mode server lists a few dozen tools, and building all 100,000 wire
    forms of a large catalog up front, twice, would cost seconds of start-up for nothing."""

    def __init__(self, catalog: Catalog) -> None:
        self._catalog = catalog
        self._built: dict[tuple[bool, str], types.Tool] = {}

    def tool(self, name: str, *, modern: bool) -> types.Tool:
        key = (modern, name)
        tool = self._built.get(key)
        if tool is None:
            entry = self._catalog.get(name)
            assert entry is not None, name  # only catalog names are ever listed
            tool = self._built[key] = to_tool(entry.spec, modern=modern)
        return tool
