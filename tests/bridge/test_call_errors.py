"""The failures Bridge.call reports itself, each with its code: a name the catalog does not
hold, a result its output schema refuses, an HTTP tool that cannot reach its server, and a
transport the server has no executor for. Real Runloop manifests, real processes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.errors import ErrorCode, UnknownToolError
from mcp_toolbridge.executors import ExecToolExecutor
from mcp_toolbridge.runtime import BUILTIN_SPECS, Loaded, Settings, load_catalog, open_bridge
from tests.support.manifests import NOT_DESTRUCTIVE, write_script

WORDS = "import json\nprint(json.dumps({'count': 'three'}))\n"
"""Prints a count the result schema refuses: a string, not an integer."""


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """A Runloop tools.json with an exec tool that breaks its result schema and an http tool
    whose server is not listening."""
    script = write_script(tmp_path / "bin" / "count", WORDS)
    tools = [
        {
            "id": "words.count",
            "description": "Count the words of a text.",
            "transport": {"kind": "exec", "command": str(script)},
            "input_schema": {"type": "object"},
            "result_schema": {
                "type": "object",
                "properties": {"count": {"type": "integer"}},
                "required": ["count"],
            },
            "annotations": NOT_DESTRUCTIVE,  # it only counts: the default policy runs it
        },
        {
            "id": "wiki.get",
            "description": "Get a wiki page.",
            "transport": {
                "kind": "http",
                "method": "GET",
                "url": f"http://127.0.0.1:{_closed_port()}/page",
            },
            "input_schema": {"type": "object"},
            "result_schema": {"type": "object"},
            "capabilities": ["net:127.0.0.1"],
        },
    ]
    folder = tmp_path / "rl"
    folder.mkdir()
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    return Settings(paths=[folder], audit=False, workspace=tmp_path)


@pytest.fixture
def loaded(settings: Settings) -> Loaded:
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert loaded.problems == []
    return loaded


async def test_a_name_the_catalog_does_not_hold_is_tool_unknown(
    settings: Settings, loaded: Loaded
) -> None:
    async with open_bridge(settings, loaded) as bridge:
        with pytest.raises(UnknownToolError) as caught:
            await bridge.call("words_cuont", {})
    assert str(caught.value) == "unknown tool: words_cuont"
    assert caught.value.code is ErrorCode.TOOL_UNKNOWN
    assert caught.value.tool == "words_cuont"


async def test_a_result_its_output_schema_refuses_is_output_invalid_naming_the_path(
    settings: Settings, loaded: Loaded
) -> None:
    async with open_bridge(settings, loaded) as bridge:
        outcome = await bridge.call("words_count", {})
    assert not outcome.ok
    assert outcome.code is ErrorCode.OUTPUT_INVALID
    assert outcome.error == (
        "the tool's result does not match its output schema: "
        'at /count: expected an integer; got a string ("three")'
    )


async def test_an_http_tool_whose_server_is_not_listening_is_exec_transport(
    settings: Settings, loaded: Loaded
) -> None:
    async with open_bridge(settings, loaded) as bridge:
        outcome = await bridge.call("wiki_get", {})
    assert not outcome.ok
    assert outcome.code is ErrorCode.EXEC_TRANSPORT
    assert outcome.error is not None and outcome.error.startswith("could not connect to 127.0.0.1:")


async def test_a_transport_without_an_executor_is_exec_unsupported_and_runs_nothing(
    loaded: Loaded,
) -> None:
    bridge = Bridge(loaded.catalog, {"exec": ExecToolExecutor()})
    outcome = await bridge.call("wiki_get", {})
    assert not outcome.ok
    assert outcome.code is ErrorCode.EXEC_UNSUPPORTED
    assert outcome.error == "http tools are not supported by this server yet"
    assert outcome.result is None
