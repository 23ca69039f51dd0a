"""call_tool, the proxy beside tool_search: a found tool runs under its own identity (its
schema and error text, its rules and confirmation, its timeout, its audit line), in both eras,
and nothing can be reached or bypassed through it that a direct call could not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_toolbridge.runtime import Settings
from tests.support.discovery import BLOCKED_NOTE, POLICY, audit_lines, proxied, write_catalog
from tests.support.results import text_of
from tests.support.served import error_text, served_client

MODES = ["auto", "legacy"]
SEARCH = {"expose": "search"}


def _setup(tmp_path: Path, policy: str = POLICY) -> Settings:
    paths, policy_file = write_catalog(tmp_path, policy)
    return Settings(
        paths=paths,
        policy_file=policy_file,
        workspace=tmp_path,
        audit_path=tmp_path / "audit.ndjson",
    )


def _audit(settings: Settings) -> list[dict[str, Any]]:
    assert settings.audit_path is not None
    return audit_lines(settings.audit_path)


def _code(result: types.CallToolResult) -> str:
    assert result.meta is not None
    return str(result.meta["toolbridge/code"])


@pytest.mark.parametrize("mode", MODES)
async def test_a_found_tool_runs_through_call_tool_and_its_audit_line_says_so(
    tmp_path: Path, mode: str
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode, server=SEARCH) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert listed == ["tool_search", "call_tool"]
        result = await client.call_tool("call_tool", proxied("send_email", text="hi"))
        assert result.is_error is False
        assert result.structured_content == {"echo": {"text": "hi"}}
    line = _audit(settings)[-1]
    assert (line["tool"], line["toolId"], line["via"]) == ("send_email", "send_email", "call_tool")
    assert (line["decision"], line["outcome"]) == ("allow", "ok")
    assert line["argv"][0].endswith("/tools/bin/echo")


@pytest.mark.parametrize("mode", MODES)
async def test_arguments_that_break_the_found_tools_schema_get_its_own_error(
    tmp_path: Path, mode: str
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode, server=SEARCH) as client:
        direct = await client.call_tool("send_email", {"text": 5})
        via = await client.call_tool("call_tool", proxied("send_email", text=5))
        assert error_text(via) == error_text(direct)
        assert "/text" in error_text(via) and "string" in error_text(via)
        assert _code(via) == _code(direct) == "args.invalid"
    direct_line, proxied_line = _audit(settings)[-2:]
    assert proxied_line["tool"] == "send_email" and proxied_line["via"] == "call_tool"
    assert direct_line["via"] is None
    assert proxied_line["decidedBy"] == direct_line["decidedBy"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_deny_rule_on_the_real_tool_denies_the_proxied_call(
    tmp_path: Path, mode: str
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode, server=SEARCH) as client:
        direct = await client.call_tool("post_note", BLOCKED_NOTE)
        via = await client.call_tool("call_tool", proxied("post_note", **BLOCKED_NOTE))
        assert error_text(via) == error_text(direct)
        assert "Denied by" in error_text(via) and "blocked.example.test" in error_text(via)
        assert _code(via) == "permission.denied"
        # a tool every call of which is denied is not served at all, so not reachable either
        hidden = await client.call_tool("call_tool", proxied("forbidden", text="x"))
        assert "no tool named 'forbidden'" in error_text(hidden)
        assert _code(hidden) == "tool.unknown"
    line = _audit(settings)[-2]
    assert (line["tool"], line["via"], line["decision"]) == ("post_note", "call_tool", "deny")
    assert line["outcome"] == "denied"


class Person:
    """Answers each confirmation with "Allow once" and remembers what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(
        self, context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "Allow once"})


@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_rule_asks_for_the_real_tool(tmp_path: Path, mode: str) -> None:
    settings = _setup(tmp_path)
    person = Person()
    async with served_client(settings, mode, server=SEARCH, elicitation_callback=person) as client:
        result = await client.call_tool("call_tool", proxied("guarded", text="go"))
        assert result.structured_content == {"echo": {"text": "go"}}
    assert len(person.asked) == 1
    assert "the tool 'guarded'" in person.asked[0] and "call_tool" not in person.asked[0]
    line = _audit(settings)[-1]
    assert (line["tool"], line["via"], line["decision"], line["answer"]) == (
        "guarded",
        "call_tool",
        "allow",
        "once",
    )


@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_rule_refuses_a_headless_proxied_call(tmp_path: Path, mode: str) -> None:
    async with served_client(_setup(tmp_path), mode, server=SEARCH) as client:
        result = await client.call_tool("call_tool", proxied("guarded", text="go"))
        assert "needs a person's confirmation" in error_text(result)


async def test_the_found_tools_own_timeout_applies(tmp_path: Path) -> None:
    async with served_client(_setup(tmp_path), "auto", server=SEARCH) as client:
        result = await client.call_tool("call_tool", proxied("slow", text="x"))
        assert _code(result) == "exec.timeout"
        assert "timed out after 1s" in error_text(result)


@pytest.mark.parametrize("mode", MODES)
async def test_call_tool_reaches_no_built_in_tool_and_nothing_outside_the_catalog(
    tmp_path: Path, mode: str
) -> None:
    settings = _setup(tmp_path)
    async with served_client(settings, mode, server=SEARCH) as client:
        inner = proxied("send_email", text="x")
        itself = await client.call_tool("call_tool", {"name": "call_tool", "arguments": inner})
        assert "call_tool cannot call itself" in error_text(itself)
        search = await client.call_tool("call_tool", proxied("tool_search", query="email"))
        assert "call_tool cannot call tool_search" in error_text(search)
        unknown = await client.call_tool("call_tool", proxied("no_such_tool"))
        assert "no tool named 'no_such_tool' in the catalog" in error_text(unknown)
        missing = await client.call_tool("call_tool", {"arguments": {}})
        assert "invalid arguments" in error_text(missing) and "name" in error_text(missing)
        for refused in (itself, search, unknown, missing):
            assert refused.structured_content is None
    lines = _audit(settings)
    assert [line["tool"] for line in lines] == ["call_tool"] * 4
    assert {line["outcome"] for line in lines} == {"error"}


async def test_call_tools_annotations_are_the_least_permissive_of_what_it_reaches(
    tmp_path: Path,
) -> None:
    async with served_client(_setup(tmp_path), "auto", server=SEARCH) as client:
        proxy = next(t for t in (await client.list_tools()).tools if t.name == "call_tool")
    assert proxy.annotations is not None
    assert proxy.annotations.read_only_hint is False
    assert proxy.annotations.open_world_hint is True
    assert proxy.input_schema["required"] == ["name"]
    assert proxy.meta is not None and proxy.meta["toolbridge/acp_kind"] == "other"
    assert "tool_search found" in (proxy.description or "")


async def test_a_rule_denying_call_tool_leaves_it_out(tmp_path: Path) -> None:
    policy = POLICY + '\n[[rules]]\npermission = "call_tool"\naction = "deny"\n'
    async with served_client(_setup(tmp_path, policy), "auto", server=SEARCH) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["tool_search"]
        found = await client.call_tool("tool_search", {"query": "send an email"})
        # with no proxy, a found tool is called by name, which tools/call accepts
        assert "call each one directly" in text_of(found)


async def test_a_default_deny_policy_still_serves_call_tool_beside_tool_search(
    tmp_path: Path,
) -> None:
    policy = (
        'default_action = "deny"\n[[rules]]\npermission = "tool_search"\naction = "allow"\n'
        '[[rules]]\npermission = "send_email"\naction = "allow"\n'
    )
    settings = _setup(tmp_path, policy)
    async with served_client(settings, "auto", server=SEARCH) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["tool_search", "call_tool"]
        sent = await client.call_tool("call_tool", proxied("send_email", text="hi"))
        assert sent.structured_content == {"echo": {"text": "hi"}}
        # guarded is denied by the default action whatever its arguments: not served
        refused = await client.call_tool("call_tool", proxied("guarded", text="hi"))
        assert _code(refused) == "tool.unknown"
