"""The bundled example catalog loads cleanly and every tool in it works."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_toolbridge.runtime import (
    BUILTIN_SPECS,
    Settings,
    bundled_manifests,
    load_catalog,
    open_bridge,
)

EXAMPLE_CALLS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "get_time": ({"timezone": "Europe/Helsinki"}, {"timezone": "Europe/Helsinki"}),
    "word_count": ({"text": "count the words\nin this text"}, {"words": 6, "lines": 2}),
    "hash_text": ({"text": "abc", "algorithm": "md5"}, {"hex": "900150983cd24fb0d6963f7d28e17f72"}),
    "slugify": (
        {"text": "Hello, Wörld: MCP Tools!"},
        {"ok": True, "slug": "hello-world-mcp-tools"},
    ),
    "debug_echo": ({"message": "hi", "count": 2}, {"message": "hi", "count": 2}),
    "tool_search": ({"query": "count the words in this text"}, {}),
    "call_tool": ({"name": "word_count", "arguments": {"text": "a b"}}, {"words": 2}),
}


def test_bundled_manifests_load_without_problems() -> None:
    loaded = load_catalog(Settings(), BUILTIN_SPECS)
    assert bundled_manifests().is_dir()
    assert [p.render() for p in loaded.problems] == []
    assert sorted(loaded.catalog.names) == sorted(EXAMPLE_CALLS)
    assert len(loaded.report.manifests) == 3


@pytest.mark.parametrize("name", sorted(EXAMPLE_CALLS))
async def test_every_bundled_tool_can_be_called(name: str) -> None:
    arguments, expected = EXAMPLE_CALLS[name]
    settings = Settings()
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded) as bridge:
        outcome = await bridge.call(name, arguments)
    assert outcome.ok, outcome.error
    assert expected.items() <= outcome.value.items()


async def test_tool_search_finds_the_bundled_word_counter_first() -> None:
    settings = Settings()
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_bridge(settings, loaded) as bridge:
        outcome = await bridge.call("tool_search", {"query": "count the words in this text"})
    assert outcome.ok
    assert outcome.value["tools"][0]["name"] == "word_count"


def test_the_bundled_tools_declare_their_facts_so_the_default_policy_runs_them() -> None:
    """They change nothing and reach nothing outside: said in their manifests, so a client
    that cannot ask (`mcp-toolbridge call`, the Inspector's CLI mode) can still run them."""
    loaded = load_catalog(Settings(), BUILTIN_SPECS)
    for spec in loaded.catalog.specs():
        assert spec.safety.read_only and not spec.safety.destructive, spec.name
        assert not spec.safety.open_world, spec.name
        if spec.name != "tool_search":
            assert {"read_only", "destructive", "open_world"}.isdisjoint(spec.safety.inferred)
