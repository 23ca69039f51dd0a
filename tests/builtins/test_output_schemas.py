"""Every locked tool but read and grep publishes an outputSchema, and what it returns matches
it: a success's structuredContent validates (and uses only declared fields), a failure carries
none. Its text is written for the model, never the JSON of the structured result. read and
grep publish none and return their text alone, so that every client shows a model the plain
lines (the clients that prefer structuredContent would show it as escaped JSON).

Through the SDK's in-memory client in both eras, every locked tool called once to succeed and
once to fail, with a person who answers (elicitation), a model (sampling) and real HTTP
servers on 127.0.0.1 (web_fetch, a SearXNG-shaped web_search provider)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from mcp_toolbridge.builtins import LOCKED_IDS
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.results import CLIENTS, shown_to_model, text_of
from tests.support.web_fixture import Reply, Seen, WebServer, serving

MODES = ["auto", "legacy"]

CODE = "".join(f'def f{n}(x):\n    return "value {n}: " + str(x)\n\n' for n in range(5))

POLICY = """
extends = "none"  # all of the policy: not over the default's write, edit, bash ask
default_action = "allow"
[requires]
fs.read = ["{{workspace}}"]
fs.write = ["{{workspace}}"]
net.hosts = ["127.0.0.1"]
[web_fetch]
allow_loopback = true
[[web_search.providers]]
kind = "searxng"
url = "{search}"
"""

SKILL = """---
name: release-notes
description: Write release notes from the changelog
---
# Release notes

Read CHANGELOG.md and summarise it.
"""

TEXT_ONLY = frozenset({"read", "grep"})
"""The locked tools whose text is their whole result: no outputSchema, no structuredContent."""

SUCCEEDS = "succeeds"
FAILS = "fails"

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("read", SUCCEEDS, {"file_path": "code.py"}),
    ("read", FAILS, {"file_path": "missing.py"}),
    ("write", SUCCEEDS, {"file_path": "new.txt", "content": "one\ntwo\n"}),
    ("write", FAILS, {"file_path": "folder", "content": "x"}),
    ("edit", SUCCEEDS, {"file_path": "code.py", "old_string": "value 3", "new_string": "v3"}),
    ("edit", FAILS, {"file_path": "code.py", "old_string": "not there", "new_string": "x"}),
    ("glob", SUCCEEDS, {"pattern": "*.py"}),
    ("glob", FAILS, {"pattern": "*.py", "path": "code.py"}),
    ("grep", SUCCEEDS, {"pattern": "value", "output_mode": "content"}),
    ("grep", SUCCEEDS, {"pattern": "value"}),
    ("grep", SUCCEEDS, {"pattern": "value", "output_mode": "count"}),
    ("grep", FAILS, {"pattern": "(unclosed"}),
    ("bash", SUCCEEDS, {"command": "echo 'out \"q\"'; echo err >&2; exit 3"}),
    ("bash", FAILS, {"command": "sleep 5", "timeout": 100}),
    ("todo", SUCCEEDS, {"todos": [{"content": "write tests", "status": "in_progress"}]}),
    ("todo", FAILS, {"todos": [{"content": "a", "status": "pending", "id": "1"}] * 2}),
    ("question", SUCCEEDS, {"questions": [{"question": "Colour?", "options": [{"label": "b"}]}]}),
    ("question", FAILS, {"questions": [{"question": "Decline this?"}]}),
    ("task", SUCCEEDS, {"description": "read", "prompt": "What does code.py say?"}),
    ("web_search", SUCCEEDS, {"query": "anyio docs"}),
    ("web_search", FAILS, {"query": "   "}),
    ("web_fetch", SUCCEEDS, {"url": "/page"}),
    ("web_fetch", FAILS, {"url": "/missing"}),
    ("skill", SUCCEEDS, {"name": "release-notes"}),
    ("skill", FAILS, {"name": "no-such-skill"}),
    ("tool_search", SUCCEEDS, {"query": "anything"}),
    ("tool_search", FAILS, {"query": "anything", "max_results": 0}),
]


def _search_route(seen: Seen) -> Reply:
    results = [{"title": "AnyIO", "url": "https://anyio.example/", "content": 'Async "I/O"'}]
    body = json.dumps({"query": seen.query["q"][0], "results": results}).encode()
    return Reply(200, body, "application/json")


@pytest.fixture(scope="module")
def web() -> Iterator[WebServer]:
    page = Reply(body=b"<html><head><title>Hi</title></head><body><p>Hello.</p></body></html>")
    with serving({"/page": page, "/search": _search_route}) as server:
        yield server


def _settings(tmp_path: Path, web: WebServer) -> Settings:
    base = Path(os.path.realpath(tmp_path))
    workspace = base / "ws"
    (workspace / "folder").mkdir(parents=True)
    (workspace / "code.py").write_text(CODE, encoding="utf-8")
    (base / "skills" / "release-notes").mkdir(parents=True)
    (base / "skills" / "release-notes" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    policy = base / "policy.toml"
    policy.write_text(POLICY.format(search=web.url("")), encoding="utf-8")
    return Settings(
        workspace=workspace, policy_file=policy, audit=False, skills_dirs=(base / "skills",)
    )


async def _person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    assert isinstance(params, types.ElicitRequestFormParams)
    if "Decline" in params.message:
        return types.ElicitResult(action="decline")
    field = next(iter(params.requested_schema["properties"]))
    return types.ElicitResult(action="accept", content={field: "blue"})


async def _model(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResultWithTools:
    if len(params.messages) == 1:
        use = types.ToolUseContent(id="t1", name="read", input={"file_path": "code.py"})
        return types.CreateMessageResultWithTools(
            role="assistant", content=[use], model="scripted", stop_reason="toolUse"
        )
    return types.CreateMessageResultWithTools(
        role="assistant",
        content=[types.TextContent(type="text", text="It defines five functions.")],
        model="scripted",
        stop_reason="endTurn",
    )


@asynccontextmanager
async def _client(tmp_path: Path, web: WebServer, mode: str) -> AsyncIterator[Client]:
    settings = _settings(tmp_path, web)
    loaded = load_catalog(settings, locked=True)
    assert not loaded.errors, loaded.errors
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(
            server.server,
            mode=mode,
            raise_exceptions=True,
            elicitation_callback=_person,
            sampling_callback=_model,
            sampling_capabilities=types.SamplingCapability(tools=types.SamplingToolsCapability()),
        ) as client:
            yield client


def _undeclared(value: Any, schema: dict[str, Any]) -> list[str]:
    """Top-level fields of a result its schema does not declare (drift between code and
    schema that additionalProperties would let through)."""
    return sorted(set(value) - set(schema.get("properties", {})))


@pytest.mark.parametrize("mode", MODES)
async def test_every_locked_result_matches_its_published_output_schema(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    async with _client(tmp_path, web, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schemas = {name: listed[name].output_schema for name in LOCKED_IDS}
        published = {name for name, schema in schemas.items() if schema}
        assert published == set(LOCKED_IDS) - TEXT_ONLY
        called: set[tuple[str, str]] = set()
        codes: dict[str, str] = {}
        for tool, _, arguments in CALLS:
            if tool == "web_fetch":
                arguments = {"url": web.url(arguments["url"])}
            with anyio.fail_after(20):
                result = await client.call_tool(tool, arguments)
            schema = schemas[tool]
            shown = text_of(result)
            if result.is_error:
                assert result.structured_content is None, (tool, result)
                assert shown and result.meta and "toolbridge/code" in result.meta
                codes[tool] = result.meta["toolbridge/code"]
                called.add((tool, FAILS))
                continue
            if tool in TEXT_ONLY:
                assert result.structured_content is None and shown, (tool, result)
                called.add((tool, SUCCEEDS))
                continue
            assert schema is not None
            value = result.structured_content
            assert value is not None, (tool, result)
            Draft202012Validator(schema).validate(value)
            assert _undeclared(value, schema) == [], tool
            assert shown != json.dumps(value, ensure_ascii=False), (tool, shown)
            called.add((tool, SUCCEEDS))
    assert codes["bash"] == "exec.timeout" and codes["grep"] == "exec.failed"
    expected = {(tool, expect) for tool, expect, _ in CALLS}
    # task needs sampling, which the 2026 era does not have: there it is the failure.
    if mode == "auto":
        expected = (expected - {("task", SUCCEEDS)}) | {("task", FAILS)}
    assert called == expected


async def test_read_grep_and_bash_text_is_what_a_terminal_would_show(
    tmp_path: Path, web: WebServer
) -> None:
    async with _client(tmp_path, web, "auto") as client:
        read = await client.call_tool("read", {"file_path": "code.py", "limit": 2})
        grep = await client.call_tool("grep", {"pattern": "value 1", "output_mode": "content"})
        bash = await client.call_tool("bash", {"command": "echo 'say \"hi\"'; exit 4"})
    assert text_of(read) == (
        '     1\tdef f0(x):\n     2\t    return "value 0: " + str(x)\n\n'
        "(showing lines 1-2 of 15; continue with offset=3)"
    )
    assert text_of(grep) == 'code.py:5:    return "value 1: " + str(x)'
    assert text_of(bash) == 'say "hi"\nexit code 4'


LINES = 'say "hi"\tthere\n\tindented \\ back\nünïcode line\n'
READ_SHOWN = '     1\tsay "hi"\tthere\n     2\t\tindented \\ back\n     3\tünïcode line'


@pytest.mark.parametrize("mode", MODES)
async def test_every_client_shows_the_model_read_and_grep_as_plain_lines(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    """Claude Code and VS Code show a model the JSON of structuredContent when a result has
    one (``"     1\\tsay \\"hi\\"..."``); read and grep send none, so every measured
    client shows the lines as a terminal would: tabs, quotes and backslashes as they are."""
    async with _client(tmp_path, web, mode) as client:
        (tmp_path / "ws" / "quoted.txt").write_text(LINES, encoding="utf-8")
        read = await client.call_tool("read", {"file_path": "quoted.txt"})
        content = await client.call_tool(
            "grep", {"pattern": "hi|back", "path": "quoted.txt", "output_mode": "content"}
        )
        files = await client.call_tool("grep", {"pattern": "ünïcode", "glob": "*.txt"})
        count = await client.call_tool(
            "grep", {"pattern": "e", "path": "quoted.txt", "output_mode": "count"}
        )
    expected = {
        "read": READ_SHOWN,
        "content": 'quoted.txt:1:say "hi"\tthere\nquoted.txt:2:\tindented \\ back',
        "files": "Found 1 file(s)\nquoted.txt",
        "count": "Found 3 matching line(s) in 1 file(s)\nquoted.txt:3",
    }
    results = {"read": read, "content": content, "files": files, "count": count}
    for what, result in results.items():
        assert not result.is_error, (what, result)
        for name in CLIENTS:
            assert shown_to_model(result, name) == expected[what], (what, name)
