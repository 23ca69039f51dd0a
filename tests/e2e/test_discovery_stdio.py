"""Deferred loading end to end over real stdio (`python -m mcp_toolbridge serve --expose
search`, the SDK client in both eras): one list per catalog for 2026-07-28, a growing list for
2025; found tools run through call_tool; pinned tools listed with their _meta."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.builtins import LOCKED_IDS
from tests.support.discovery import BLOCKED_NOTE, audit_lines, proxied, write_catalog
from tests.support.results import found_tools, text_of

pytestmark = pytest.mark.e2e


def _server(*args: str) -> StdioServerParameters:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/")}
    argv = ["-m", "mcp_toolbridge", "serve", "--expose", "search", *args]
    return StdioServerParameters(command=sys.executable, args=argv, env=env)


def _catalog(tmp_path: Path, *extra: str) -> StdioServerParameters:
    paths, policy = write_catalog(tmp_path)
    audit = tmp_path / "audit.ndjson"
    options = ["--policy", str(policy), "--audit", str(audit), "--workspace", str(tmp_path)]
    return _server(*options, *extra, *map(str, paths))


def _listing(result: types.ListToolsResult) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True) for t in result.tools]


async def test_a_2026_stdio_list_is_the_same_before_and_after_a_search() -> None:
    with anyio.fail_after(30):
        async with Client(_server()) as client:  # the bundled manifests
            assert client.protocol_version == "2026-07-28"
            before = _listing(await client.list_tools())
            assert [t["name"] for t in before] == [*LOCKED_IDS, "call_tool"]
            found = await client.call_tool("tool_search", {"query": "count the words"})
            assert found_tools(found)[0] == "word_count"
            assert _listing(await client.list_tools()) == before
            counted = await client.call_tool(
                "call_tool", proxied("word_count", text="one two three")
            )
            assert counted.structured_content == {"words": 3, "lines": 1, "characters": 13}
            assert _listing(await client.list_tools()) == before


async def test_a_2025_stdio_list_grows_with_the_hits() -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(30):
        async with Client(_server(), mode="legacy", message_handler=on_message) as client:
            before = [t.name for t in (await client.list_tools()).tools]
            assert before == [*LOCKED_IDS, "call_tool"]
            found = await client.call_tool("tool_search", {"query": "count the words"})
            hits = found_tools(found)
            await changed.wait()
            after = [t.name for t in (await client.list_tools()).tools]
            assert after == [*before, *hits]
            counted = await client.call_tool("word_count", {"text": "one two"})
            assert counted.structured_content["words"] == 2


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_over_stdio_found_tools_run_through_call_tool_under_their_own_rules(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(30):
        async with Client(_catalog(tmp_path), mode=mode) as client:
            sent = await client.call_tool("call_tool", proxied("send_email", text="hi"))
            assert sent.structured_content == {"echo": {"text": "hi"}}
            broken = await client.call_tool("call_tool", proxied("send_email", text=5))
            direct = await client.call_tool("send_email", {"text": 5})
            assert broken.is_error and text_of(broken) == text_of(direct)
            denied = await client.call_tool("call_tool", proxied("post_note", **BLOCKED_NOTE))
            assert denied.is_error and "Denied by" in text_of(denied)
    lines = audit_lines(tmp_path / "audit.ndjson")
    assert [(ln["tool"], ln["via"], ln["outcome"]) for ln in lines] == [
        ("send_email", "call_tool", "ok"),
        ("send_email", "call_tool", "error"),
        ("send_email", None, "error"),
        ("post_note", "call_tool", "denied"),
    ]
    assert lines[0]["decision"] == "allow" and lines[3]["decision"] == "deny"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_serve_pin_lists_the_tool_under_expose_search_with_its_meta(
    tmp_path: Path, mode: str
) -> None:
    with anyio.fail_after(30):
        async with Client(_catalog(tmp_path, "--pin", "send_email"), mode=mode) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
    assert list(tools) == [*LOCKED_IDS, "call_tool", "send_email"]
    assert (tools["send_email"].meta or {})["anthropic/alwaysLoad"] is True
    assert "anthropic/alwaysLoad" not in (tools["call_tool"].meta or {})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_request_without_the_tools_words_finds_it_in_the_core_install(
    tmp_path: Path, mode: str
) -> None:
    # "mail" and "landlord" are words of no tool: "mail" is near "email" (expansion.py)
    with anyio.fail_after(30):
        async with Client(_catalog(tmp_path), mode=mode) as client:
            found = await client.call_tool("tool_search", {"query": "mail my landlord"})
            assert found_tools(found)[0] == "send_email"
            nothing = await client.call_tool("tool_search", {"query": "zzqxunmatched"})
            assert found_tools(nothing) == [] and "No tool matches" in text_of(nothing)
