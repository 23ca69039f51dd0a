"""Error results through the MCP Inspector CLI: a TypeScript-SDK client that checks
structuredContent against the outputSchema, error results included. A failing call must
reach it as a tool error it can show (exit 5, ``tool_is_error``) with the message as text,
never as a schema-validation failure that hides the message.

One failing call of each kind (schema failure, policy denial, non-zero exit, a result that
breaks the output schema, a tool-reported failure, a timeout) over real stdio, in each
manifest format, with the server started the way a client config starts it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.inspector import TOOL_ERROR_EXIT, require_inspector, run_inspector
from tests.support.schema_tools import FAILURES, Failure, write_catalog, write_policy

pytestmark = pytest.mark.e2e

require_inspector()


def _server(tmp_path: Path, *allow: str) -> list[str]:
    folder = write_catalog(tmp_path / "m", agentpm_timeout_ms=500)
    policy = write_policy(tmp_path / "policy.toml")
    serve = [sys.executable, "-m", "mcp_toolbridge", "serve", str(folder), "--no-audit"]
    allowed = [option for rule in allow for option in ("--allow", rule)]
    return [*serve, "--policy", str(policy), "--workspace", str(tmp_path), *allowed, "--"]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f"{f.tool}-{f.code}")
async def test_the_inspector_shows_the_message_of_every_kind_of_failure(
    tmp_path: Path, failure: Failure
) -> None:
    called = await run_inspector(
        tmp_path,
        *_server(tmp_path),
        "--method",
        "tools/call",
        "--tool-name",
        failure.tool,
        "--tool-args-json",
        json.dumps(failure.arguments),
    )
    assert called.returncode == TOOL_ERROR_EXIT, called
    assert called.error["error"]["code"] == "tool_is_error", called.error
    result = called.result
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert [block["type"] for block in result["content"]] == ["text"]
    assert failure.says in result["content"][0]["text"]
    assert result["_meta"]["toolbridge/code"] == failure.code


async def test_the_inspector_validates_a_success_of_the_same_tools(tmp_path: Path) -> None:
    called = await run_inspector(
        tmp_path,
        *_server(tmp_path),
        "--method",
        "tools/call",
        "--tool-name",
        "rl_echo",
        "--tool-args-json",
        json.dumps({"message": "hi"}),
    )
    assert called.returncode == 0, called
    assert called.result["structuredContent"] == {"message": "hi"}


# bash asks by default (fail-closed); the command's parts are allowed the way the refusal says.
BASH_ALLOWED = ("bash=echo out", "bash=echo err", "bash=exit 2")

LOCKED_CALLS = [
    ("read", {"file_path": "notes.txt"}, False),
    ("read", {"file_path": "missing.txt"}, True),
    ("bash", {"command": "echo out; echo err >&2; exit 2"}, False),
]


@pytest.mark.parametrize(("tool", "arguments", "fails"), LOCKED_CALLS)
async def test_the_inspector_takes_the_locked_tools_text_results(
    tmp_path: Path, tool: str, arguments: dict[str, str], fails: bool
) -> None:
    (tmp_path / "notes.txt").write_text('say "hi"\n', encoding="utf-8")
    called = await run_inspector(
        tmp_path,
        *_server(tmp_path, *BASH_ALLOWED),
        "--method",
        "tools/call",
        "--tool-name",
        tool,
        "--tool-args-json",
        json.dumps(arguments),
    )
    assert called.returncode == (TOOL_ERROR_EXIT if fails else 0), called
    result = called.result
    assert result["isError"] is fails
    # read and bash are text-first: the text is the whole result, success or failure
    # (docs/builtins.md), so the Inspector has nothing to hold against a schema.
    assert "structuredContent" not in result
    text = result["content"][0]["text"]
    if tool == "read" and fails:
        assert text.startswith("file not found: missing.txt")
    elif tool == "read":
        assert text == '     1\tsay "hi"'
    else:
        assert text == "out\n--- stderr ---\nerr\nexit code 2"
