"""call_tool's declaration: its safety facts are the least permissive of the tools it reaches;
subagents are not offered it (their own search hits are offered to them by name)."""

from __future__ import annotations

from pathlib import Path

from mcp_toolbridge.builtins import TOOL_SEARCH_SPEC, proxy_spec, subagent_offer
from mcp_toolbridge.model import Safety, ToolSpec
from mcp_toolbridge.runtime import load_catalog
from tests.support.served import locked_settings

READER = Safety(read_only=True, destructive=False, idempotent=True, open_world=False)


def _tool(name: str, safety: Safety) -> ToolSpec:
    return TOOL_SEARCH_SPEC.model_copy(update={"name": name, "id": name, "safety": safety})


def test_call_tool_is_read_only_and_closed_only_when_every_tool_it_reaches_is() -> None:
    readers = [_tool("a", READER), _tool("b", READER)]
    safety = proxy_spec(readers).safety
    assert (safety.read_only, safety.destructive, safety.idempotent) == (True, False, True)
    assert safety.open_world is False and safety.inferred == frozenset()


def test_one_destructive_open_world_tool_makes_call_tool_so() -> None:
    writer = Safety(read_only=False, destructive=True, idempotent=False, open_world=True)
    safety = proxy_spec([_tool("a", READER), _tool("w", writer)]).safety
    assert (safety.read_only, safety.destructive, safety.idempotent) == (False, True, False)
    assert safety.open_world is True
    assert safety.requires_confirmation is False  # each call asks as the real tool would


def test_a_subagent_is_offered_tool_search_but_not_call_tool(tmp_path: Path) -> None:
    settings = locked_settings(tmp_path, locked=("read", "tool_search"))
    loaded = load_catalog(settings, locked=True)
    assert "call_tool" in loaded.catalog
    assert [s.name for s in subagent_offer(loaded.catalog)] == ["read", "tool_search", "echo"]
