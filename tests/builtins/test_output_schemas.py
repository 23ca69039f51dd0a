"""What a model reads of each locked tool, in every measured client and both eras.

Clients differ in which form of a result they show a model (shared notes, ecosystem §4b):
Claude Code shows ``JSON.stringify(structuredContent)`` of a success whenever there is one
(the text never reaches the model), VS Code and pydantic-ai prefer it too, openai-agents and
langchain-mcp-adapters show the text. So a locked tool whose result is read (file lines,
matches, paths, command output, a diff, a page, a skill, a subagent's answer, found tools, a
checklist) publishes no outputSchema and returns its text alone; the three whose value is a few
short fields or the contract's shape (write, question, web_search) publish one, and their
structuredContent holds no multi-line string. A failure is its message as text, everywhere.

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

from mcp_toolbridge.builtins import LOCKED_IDS, PROXY_TOOL
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.results import CLIENTS, shown_to_model, text_of
from tests.support.web_fixture import Reply, Route, Seen, WebServer, serving

MODES = ["auto", "legacy"]

CODE = "".join(f'def f{n}(x):\n    return "value {n}: " + str(x)\n\n' for n in range(5))

QUOTED = 'say "hi"\tthere'
"""A line with what JSON escapes (a quote, a tab): every client must show it as it is."""
LINES = f"{QUOTED}\n\tindented \\ back\nünïcode line\n"

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

SKILL = f"""---
name: release-notes
description: Write release notes from the changelog
---
# Release notes

Read CHANGELOG.md and summarise it. Start each entry with:

    {QUOTED}
"""

ANSWER = f"code.py defines five functions:\n\n- f0 to f4, each returning\n  {QUOTED}"
"""The subagent's answer (task), in Markdown over several lines."""

FOUND = "greet"
FOUND_DESCRIPTION = f"Greet someone.\n\nThe greeting is the text as given, e.g.\n{QUOTED}"
"""A manifest tool whose description runs over several lines, as real ones do (GitHub's)."""

STRUCTURED = frozenset({"write", "question", "web_search"})
"""The locked tools that publish an outputSchema: a few short fields, or the contract's
shape (question's answers, web_search's results)."""
TEXT_ONLY = frozenset(LOCKED_IDS) - STRUCTURED
"""The locked tools whose text is their whole result: no outputSchema, no structuredContent."""

SUCCEEDS = "succeeds"
FAILS = "fails"

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("read", SUCCEEDS, {"file_path": "quoted.txt"}),
    ("read", FAILS, {"file_path": "missing.py"}),
    ("write", SUCCEEDS, {"file_path": "new.txt", "content": LINES}),
    ("write", FAILS, {"file_path": "folder", "content": "x"}),
    ("edit", SUCCEEDS, {"file_path": "quoted.txt", "old_string": "back", "new_string": "fore"}),
    ("edit", FAILS, {"file_path": "code.py", "old_string": "not there", "new_string": "x"}),
    ("glob", SUCCEEDS, {"pattern": "*.py"}),
    ("glob", FAILS, {"pattern": "*.py", "path": "code.py"}),
    ("grep", SUCCEEDS, {"pattern": "hi|back", "output_mode": "content"}),
    ("grep", SUCCEEDS, {"pattern": "value"}),
    ("grep", SUCCEEDS, {"pattern": "value", "output_mode": "count"}),
    ("grep", FAILS, {"pattern": "(unclosed"}),
    ("bash", SUCCEEDS, {"command": "cat quoted.txt; echo 'err \"q\"' >&2; exit 3"}),
    ("bash", FAILS, {"command": "echo started; sleep 5", "timeout": 100}),
    ("todo", SUCCEEDS, {"todos": [{"content": 'answer "hi"', "status": "in_progress"}]}),
    ("todo", FAILS, {"todos": [{"content": "a", "status": "pending", "id": "1"}] * 2}),
    ("question", SUCCEEDS, {"questions": [{"question": "Colour?", "options": [{"label": "b"}]}]}),
    ("question", FAILS, {"questions": [{"question": "Decline this?"}]}),
    ("task", SUCCEEDS, {"description": "read", "prompt": "What does code.py say?"}),
    ("web_search", SUCCEEDS, {"query": "anyio docs"}),
    ("web_search", FAILS, {"query": "   "}),
    ("web_fetch", SUCCEEDS, {"url": "/quoted"}),
    ("web_fetch", FAILS, {"url": "/missing"}),
    ("skill", SUCCEEDS, {"name": "release-notes"}),
    ("skill", FAILS, {"name": "no-such-skill"}),
    ("tool_search", SUCCEEDS, {"query": "greet someone"}),
    ("tool_search", FAILS, {"query": "anything", "max_results": 0}),
]

VERBATIM = {
    "read": f"     1\t{QUOTED}\n",
    "edit": "-\tindented \\ back\n+\tindented \\ fore\n",
    "glob": "code.py",
    "grep": f"quoted.txt:1:{QUOTED}",
    "bash": f'{QUOTED}\n\tindented \\ fore\nünïcode line\n--- stderr ---\nerr "q"\nexit code 3',
    "todo": '[~] answer "hi"',
    "task": ANSWER,
    "web_fetch": LINES.rstrip("\n"),
    "skill": f"Start each entry with:\n\n    {QUOTED}",
    "tool_search": f"## {FOUND}\n{FOUND_DESCRIPTION}\n",
}
"""What a text-only tool's success must show, as it is, in every client (one of its calls;
edit has changed quoted.txt's "back" to "fore" before the calls that follow it)."""


def _search_route(seen: Seen) -> Reply:
    results = [{"title": "AnyIO", "url": "https://anyio.example/", "content": 'Async\n"I/O"'}]
    body = json.dumps({"query": seen.query["q"][0], "results": results}).encode()
    return Reply(200, body, "application/json")


@pytest.fixture(scope="module")
def web() -> Iterator[WebServer]:
    quoted = Reply(body=LINES.encode(), content_type="text/plain; charset=utf-8")
    big = "".join(f"line {n:06d} {'x' * 90}\n" for n in range(3000)).encode()
    routes: dict[str, Route] = {
        "/quoted": quoted,
        "/big": Reply(body=big, content_type="text/plain"),
        "/search": _search_route,
    }
    with serving(routes) as server:
        yield server


def _settings(tmp_path: Path, web: WebServer) -> Settings:
    base = Path(os.path.realpath(tmp_path))
    workspace = base / "ws"
    (workspace / "folder").mkdir(parents=True)
    (workspace / "code.py").write_text(CODE, encoding="utf-8")
    (workspace / "quoted.txt").write_text(LINES, encoding="utf-8")
    (base / "skills" / "release-notes").mkdir(parents=True)
    (base / "skills" / "release-notes" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    greet = echo_tool(FOUND, description=FOUND_DESCRIPTION)
    agentcli_manifest(base / "m", [greet], {"echo": ECHO})
    policy = base / "policy.toml"
    policy.write_text(POLICY.format(search=web.url("")), encoding="utf-8")
    return Settings(
        paths=[base / "m"],
        workspace=workspace,
        policy_file=policy,
        audit=False,
        skills_dirs=(base / "skills",),
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
        content=[types.TextContent(type="text", text=ANSWER)],
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


async def _results(client: Client, web: WebServer) -> list[tuple[str, types.CallToolResult]]:
    """Every call of CALLS, in order, on the same workspace."""
    results = []
    for tool, _, arguments in CALLS:
        if tool == "web_fetch":
            arguments = {"url": web.url(arguments["url"])}
        with anyio.fail_after(20):
            results.append((tool, await client.call_tool(tool, arguments)))
    return results


def _undeclared(value: Any, schema: dict[str, Any]) -> list[str]:
    """Top-level fields of a result its schema does not declare (drift between code and
    schema that additionalProperties would let through)."""
    return sorted(set(value) - set(schema.get("properties", {})))


def _multiline(value: Any) -> list[str]:
    """The strings in ``value`` that JSON would show with escapes: control characters."""
    if isinstance(value, str):
        return [value] if any(ord(c) < 0x20 for c in value) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _multiline(v)]
    if isinstance(value, list):
        return [s for v in value for s in _multiline(v)]
    return []


@pytest.mark.parametrize("mode", MODES)
async def test_every_locked_result_matches_its_published_output_schema(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    async with _client(tmp_path, web, mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        schemas = {name: listed[name].output_schema for name in LOCKED_IDS}
        published = {name for name, schema in schemas.items() if schema}
        assert published == STRUCTURED
        called: set[tuple[str, str]] = set()
        codes: dict[str, str] = {}
        for tool, result in await _results(client, web):
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


@pytest.mark.parametrize("mode", MODES)
async def test_every_client_shows_the_model_every_locked_result_as_readable_text(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    """For each client of §4b: a text-only tool's success is its text, lines, tabs, quotes
    and backslashes as they are; a structured tool's success is JSON without a multi-line
    string; a failure is its message. call_tool shows what the tool it ran shows."""
    async with _client(tmp_path, web, mode) as client:
        results = await _results(client, web)
        arguments = {"text": QUOTED}
        direct = await client.call_tool(FOUND, arguments)
        proxied = await client.call_tool(PROXY_TOOL, {"name": FOUND, "arguments": arguments})
    texts: dict[str, list[str]] = {}
    for tool, result in results:
        text = text_of(result)
        for name in CLIENTS:
            shown = shown_to_model(result, name)
            if result.is_error or tool in TEXT_ONLY:
                assert shown == text, (tool, name, shown)
            else:
                assert shown in (
                    text,
                    json.dumps(
                        result.structured_content, ensure_ascii=False, separators=(",", ":")
                    ),
                )
                assert _multiline(result.structured_content) == [], (tool, result)
        if not result.is_error:
            texts.setdefault(tool, []).append(text)
    # task needs sampling, which the 2026 era does not have
    for tool in set(VERBATIM) - ({"task"} if mode == "auto" else set()):
        assert any(VERBATIM[tool] in text for text in texts[tool]), (tool, texts[tool])
    for name in CLIENTS:
        assert shown_to_model(proxied, name) == shown_to_model(direct, name)
    assert proxied.structured_content == direct.structured_content == {"echo": arguments}


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


READ_SHOWN = f"     1\t{QUOTED}\n     2\t\tindented \\ back\n     3\tünïcode line"


@pytest.mark.parametrize("mode", MODES)
async def test_every_client_shows_the_model_read_and_grep_as_plain_lines(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    """Claude Code and VS Code show a model the JSON of structuredContent when a result has
    one (``"     1\\tsay \\"hi\\"..."``); read and grep send none, so every measured
    client shows the lines as a terminal would: tabs, quotes and backslashes as they are."""
    async with _client(tmp_path, web, mode) as client:
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
        "content": f"quoted.txt:1:{QUOTED}\nquoted.txt:2:\tindented \\ back",
        "files": "Found 1 file(s)\nquoted.txt",
        "count": "Found 3 matching line(s) in 1 file(s)\nquoted.txt:3",
    }
    results = {"read": read, "content": content, "files": files, "count": count}
    for what, result in results.items():
        assert not result.is_error, (what, result)
        for name in CLIENTS:
            assert shown_to_model(result, name) == expected[what], (what, name)


def _long_outputs(tmp_path: Path) -> None:
    """Files whose read, glob, grep and cat go past the caps: 3000 lines of 112 bytes (over
    read's 200 KB and grep's 200 entries; cat three times is over bash's 200 KB) and 1001
    files (over glob's 1000)."""
    workspace = Path(os.path.realpath(tmp_path)) / "ws"
    long = "".join(f"line {n:05d} {'y' * 100}\n" for n in range(3000))
    (workspace / "long.txt").write_text(long, encoding="utf-8")
    (workspace / "many").mkdir()
    for n in range(1001):
        (workspace / "many" / f"{n:04d}.txt").touch()


@pytest.mark.parametrize("mode", MODES)
async def test_a_truncated_result_names_the_file_holding_the_rest_in_its_text(
    tmp_path: Path, web: WebServer, mode: str
) -> None:
    """The model sees the head and the path (the contract's truncation): the path is in the
    text every client shows, not only in _meta and the resource link, and read reads it."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "read": ("read", {"file_path": "long.txt", "limit": 3000}),
        "glob": ("glob", {"pattern": "many/*.txt"}),
        "grep": ("grep", {"pattern": "line", "path": "long.txt", "output_mode": "content"}),
        "bash": ("bash", {"command": "cat long.txt long.txt long.txt"}),
        "web_fetch": ("web_fetch", {"url": web.url("/big")}),
    }
    async with _client(tmp_path, web, mode) as client:
        _long_outputs(tmp_path)
        for what, (tool, arguments) in calls.items():
            result = await client.call_tool(tool, arguments)
            assert not result.is_error and result.meta and result.meta["truncated"], (what, result)
            path = result.meta["output_path"]
            for name in CLIENTS:
                assert path in shown_to_model(result, name), (what, name)
            again = await client.call_tool("read", {"file_path": path, "limit": 1})
            assert not again.is_error, (what, again)
