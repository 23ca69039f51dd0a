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
tool_search then call_tool.

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

    counted, read, wrong, refused = report["steps"]
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


def _workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "note.txt").write_text(NOTE, encoding="utf-8")
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
    tool_search and runs it through call_tool; the value reaches the model as structured."""
    target = _stdio(tmp_path, "--workspace", str(tmp_path), "--expose", "search")
    steps = [
        {"tool": "tool_search", "arguments": {"query": "count the words in a text"}},
        {"tool": "call_tool", "arguments": {"name": "word_count", "arguments": {"text": "a b"}}},
    ]
    report = await run_framework({"framework": "pydantic-ai", "target": target, "steps": steps})

    names = {tool["name"] for tool in report["tools"]}
    assert names == LOCKED | {"call_tool"}
    found, ran = report["steps"]
    assert "## word_count" in found["output"], found
    assert ran["output"] == {"words": 2, "lines": 1, "characters": 3}, ran
    assert report["answer"] == "done"
