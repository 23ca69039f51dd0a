"""End to end with the agent frameworks people build MCP clients with: openai-agents 0.24,
pydantic-ai-slim 2.68 (on fastmcp's Client) and langchain-mcp-adapters 0.3.2, each the client
of `serve` over stdio and over Streamable HTTP, connected as its documentation says (all three
speak the 2025 era through the Python SDK 1.x they pin, and none declares elicitation).

In each: every tool lists and converts to the framework's tool type (openai-agents with
``convert_schemas_to_strict``), a structured result and a text result reach the model in the
form docs/builtins.md gives for that framework, a wrong argument comes back as a tool error the
framework reports (not a crash), and a call the policy asks about is refused at once with the
server's text (no hang). pydantic-ai runs a real Agent whose offline FunctionModel (no LLM)
makes the calls, so the agent loop drives the tools; it also takes the large-catalog path,
tool_search then call_tool (as langchain does, which lists its tools only once) and the found
tool by name. What each shows of a truncated result, pydantic-ai's retries and its elicitation
handler, and openai-agents' strict conversion of manifest schemas are pinned too.

Installed by scripts/install-frameworks; skipped without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.frameworks import FRAMEWORKS, require_frameworks, run_framework
from tests.support.httpserve import http_server
from tests.support.paths import ROOT

pytestmark = pytest.mark.e2e

require_frameworks()

LOCKED = {
    *("read", "write", "edit", "glob", "grep", "bash", "todo", "task", "question"),
    *("web_search", "web_fetch", "skill", "tool_search"),
}
MANIFEST_TOOLS = {"word_count", "slugify", "hash_text", "get_time", "debug_echo"}
REFUSED = "this call needs a person's confirmation and this client cannot ask one"
NOTE = 'say "hi"\tthere\n'
"""A line whose quotes and tab a JSON string would escape."""


def _stdio(tmp_path: Path, *serve: str) -> dict[str, Any]:
    argv = ["-m", "mcp_toolbridge", "serve", "--no-audit", *serve]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    return {"command": sys.executable, "args": argv, "cwd": str(ROOT), "env": env}


def _steps(workspace: Path) -> list[dict[str, Any]]:
    return [
        {"tool": "word_count", "arguments": {"text": "one two"}},
        {"tool": "read", "arguments": {"file_path": str(workspace / "note.txt")}},
        {"tool": "word_count", "arguments": {"text": 5}},
        {"tool": "write", "arguments": {"file_path": str(workspace / "new.txt"), "content": "x"}},
        {
            "tool": "grep",
            "arguments": {"pattern": "match", "path": "many.txt", "output_mode": "content"},
        },
    ]


def _text(framework: str, output: Any) -> str:
    """The text of a text-only output as the framework hands it over."""
    if framework == "openai-agents":
        assert output["type"] == "text", output
        return str(output["text"])
    if framework == "langchain":
        (block,) = output
        assert block["type"] == "text", output
        return str(block["text"])
    assert isinstance(output, str), output
    return output


def _check(framework: str, report: dict[str, Any], workspace: Path) -> None:
    tools = {tool["name"]: tool for tool in report["tools"]}
    assert LOCKED | MANIFEST_TOOLS <= set(tools)
    for tool in tools.values():  # every schema converted, as an object of named parameters
        assert tool["schema"]["type"] == "object", tool
    if framework == "openai-agents":  # converted with convert_schemas_to_strict
        assert all(tool["strict"] for tool in tools.values()), tools
        read = tools["read"]["schema"]
        assert read["additionalProperties"] is False
        assert read["required"] == ["file_path", "offset", "limit"]  # strict: all required

    counted, read, wrong, refused, cut = report["steps"]
    words = {"words": 2, "lines": 1, "characters": 7}
    # Structured: pydantic-ai hands the model structuredContent; the others the text, which
    # holds the same facts as JSON.
    if framework == "pydantic-ai":
        assert counted["output"] == words
        assert json.loads(counted["text"]) == words
    else:
        assert json.loads(_text(framework, counted["output"])) == words
    if framework == "langchain":  # structuredContent rides beside, as the artifact
        assert counted["artifact"] == {"structured_content": words}

    # Text alone (read): every framework shows the same numbered lines, quotes and tab as
    # they are.
    shown = _text(framework, read["output"])
    assert shown == f"     1\t{NOTE.rstrip()}", shown
    assert not read["failed"]

    # A wrong argument: a tool error the framework reports (openai-agents has no error mark:
    # the model reads the message).
    message = "invalid arguments: at /text: expected a string; got an integer (5)"
    assert _text(framework, wrong["output"]) == message
    assert wrong["failed"] is (framework != "openai-agents")
    if framework == "pydantic-ai":
        assert json.loads(wrong["text"]) == {"error": message}

    # A confirmation with no elicitation: refused at once with the server's text.
    assert REFUSED in _text(framework, refused["output"])
    assert refused["failed"] is (framework != "openai-agents")
    assert not (workspace / "new.txt").exists()

    _check_cut(framework, cut)


def _check_cut(framework: str, cut: dict[str, Any]) -> None:
    """A truncated result: the text, which names the file holding all of it, then the
    resource link to that file, which none of the three can read and each shows otherwise."""
    assert not cut["failed"]
    output = cut["output"]
    if framework == "pydantic-ai":  # a list: the model is sent it as a JSON array
        text, uri = output
        assert uri.startswith("toolbridge://output/")
        assert json.loads(cut["text"]) == [text, uri]
    else:
        text_part, link = output
        text = _text(framework, text_part if framework == "openai-agents" else [text_part])
        if framework == "openai-agents":  # the link's JSON, as a second text
            assert json.loads(link["text"])["type"] == "resource_link"
        else:  # a file block with the link's URI, which OpenAI's messages cannot carry
            assert (link["type"], link["url"][:20]) == ("file", "toolbridge://output/")
            assert cut["openai_refuses"] == "OpenAI Chat Completions does not support file URLs."
    assert text.startswith("many.txt:1:match 0\n")
    assert "(showing the first 200 of 300 matching lines; the full output is in /" in text


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "note.txt").write_text(NOTE, encoding="utf-8")
    lines = "".join(f"match {number}\n" for number in range(300))
    (workspace / "many.txt").write_text(lines, encoding="utf-8")  # past grep's 200
    return workspace


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_each_framework_over_stdio(tmp_path: Path, framework: str) -> None:
    workspace = _workspace(tmp_path)
    target = _stdio(tmp_path, "--workspace", str(workspace))
    plan = {"framework": framework, "target": target, "strict": True, "steps": _steps(workspace)}

    report = await run_framework(plan)

    _check(framework, report, workspace)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_each_framework_over_http(tmp_path: Path, framework: str) -> None:
    workspace = _workspace(tmp_path)
    async with http_server(tmp_path, "--workspace", str(workspace)) as server:
        plan = {
            "framework": framework,
            "target": {"url": server.url},
            "strict": True,
            "steps": _steps(workspace),
        }
        report = await run_framework(plan)

    _check(framework, report, workspace)


async def test_a_pydantic_ai_agent_takes_the_large_catalog_path(tmp_path: Path) -> None:
    """With the catalog behind tool_search (--expose search), the agent loop finds a tool with
    tool_search and runs it through call_tool, and by its name: pydantic-ai lists again on
    tools/list_changed, so the hits join the agent's tools. The value reaches the model as
    structured. Given an elicitation handler (fastmcp's, passed through MCPToolset), it declares
    elicitation: a confirmation is put to it (fastmcp builds a type from the form's schema) and
    the answer runs the call."""
    note = tmp_path / "note.txt"
    target = _stdio(tmp_path, "--workspace", str(tmp_path), "--expose", "search")
    steps = [
        {"tool": "tool_search", "arguments": {"query": "count the words in a text"}},
        {"tool": "call_tool", "arguments": {"name": "word_count", "arguments": {"text": "a b"}}},
        {"tool": "word_count", "arguments": {"text": "a b"}},
        {"tool": "write", "arguments": {"file_path": str(note), "content": "hi\n"}},
    ]
    plan = {"framework": "pydantic-ai", "target": target, "steps": steps}
    report = await run_framework({**plan, "decision": "Allow once"})

    names = {tool["name"] for tool in report["tools"]}
    assert names == LOCKED | {"call_tool"}
    found, proxied, direct, written = report["steps"]
    assert "## word_count" in found["output"], found
    assert proxied["output"] == {"words": 2, "lines": 1, "characters": 3}, proxied
    assert direct["output"] == proxied["output"], direct
    assert report["answer"] == "done"

    assert not written["failed"], written
    created = {"file_path": "note.txt", "bytes_written": 3, "lines": 1, "created": True}
    assert written["output"] == created
    (asked,) = report["asked"]
    assert "wants to run the tool 'write'" in asked
    assert note.read_text(encoding="utf-8") == "hi\n"


async def test_openai_agents_strict_conversion_of_manifest_schemas(tmp_path: Path) -> None:
    """convert_schemas_to_strict takes every schema the server publishes, a Runloop one with
    ``schema:ID`` references included (published as JSON pointers into its ``$defs``); the one
    it cannot take, an agentcli tool without a schema (any object), falls back to a non-strict
    tool and is still listed."""
    fixtures = ROOT / "tests" / "fixtures" / "manifests"
    manifests = (str(fixtures / "runloop"), str(fixtures / "agentcli"))
    target = _stdio(tmp_path, "--workspace", str(tmp_path), "--locked", "none", *manifests)
    plan = {"framework": "openai-agents", "target": target, "strict": True, "steps": []}

    report = await run_framework(plan)

    tools = {tool["name"]: tool for tool in report["tools"]}
    assert {"notes_publish", "notes_append", "disk_usage"} <= set(tools)
    assert {name for name, tool in tools.items() if not tool["strict"]} == {"disk_usage"}
    assert tools["disk_usage"]["schema"] == {"type": "object", "properties": {}}
    body = tools["notes_publish"]["schema"]["properties"]["body"]
    assert body == {"type": "string", "maxLength": 10000}, body  # the $ref, inlined


async def test_pydantic_ai_ends_a_run_at_a_second_refusal_unless_told_otherwise(
    tmp_path: Path,
) -> None:
    """A tool error is a retry for pydantic-ai, and a tool gets one by default: a model that
    tries a refused call twice ends the run. ``tool_error_behavior="failed"`` hands the model
    each error without counting it."""
    note = str(tmp_path / "note.txt")
    target = _stdio(tmp_path, "--workspace", str(tmp_path))
    steps = [{"tool": "write", "arguments": {"file_path": note, "content": "x"}}] * 2
    plan = {"framework": "pydantic-ai", "target": target, "steps": steps}

    ended = await run_framework(plan)
    went_on = await run_framework({**plan, "tool_error_behavior": "failed"})

    assert "Tool 'write' exceeded max retries count of 1" in ended["error"]
    assert [step["failed"] for step in went_on["steps"]] == [True, True]
    assert all(REFUSED in step["output"] for step in went_on["steps"])
    assert went_on["answer"] == "done"


async def test_langchain_reaches_found_tools_through_call_tool_and_can_drop_links(
    tmp_path: Path,
) -> None:
    """langchain-mcp-adapters lists the tools once (get_tools, load_mcp_tools) and never
    again, so a tool tool_search loads into a 2025 session's list never reaches the agent:
    tool_search's text says to go through call_tool then, and call_tool runs it. And the
    workaround docs/clients.md gives for a truncated result, a tool interceptor that drops
    resource links, leaves the text alone, which OpenAI's messages carry."""
    workspace = _workspace(tmp_path)
    grep = {"pattern": "match", "path": "many.txt", "output_mode": "content"}
    steps = [
        {"tool": "tool_search", "arguments": {"query": "count the words in a text"}},
        {"tool": "call_tool", "arguments": {"name": "word_count", "arguments": {"text": "a b"}}},
        {"tool": "grep", "arguments": grep},
    ]
    async with http_server(tmp_path, "--workspace", str(workspace), "--expose", "search") as server:
        plan = {"framework": "langchain", "target": {"url": server.url}, "steps": steps}
        report = await run_framework({**plan, "drop_links": True})

    assert {tool["name"] for tool in report["tools"]} == LOCKED | {"call_tool"}
    found, ran, cut = report["steps"]
    first = _text("langchain", found["output"]).splitlines()[0]
    assert "in your tool list now" in first
    assert 'if it is not, call it through call_tool with {"name": "<its name>"' in first
    assert json.loads(_text("langchain", ran["output"])) == {
        "words": 2,
        "lines": 1,
        "characters": 3,
    }

    (block,) = cut["output"]
    assert "the full output is in /" in block["text"]
    assert cut["openai_refuses"] is None
