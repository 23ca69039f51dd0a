"""Runloop budgets are enforced: the usage a tool's results report is summed per session (per
person, across their sessions, for an identified caller) and tool, and once a budget is spent
the tool's next call there is refused with budget.exceeded; the audit line records each call's
usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.bridge import CallOutcome
from mcp_toolbridge.bridge.budget import reported_usage
from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.host import CallContext, Caller
from mcp_toolbridge.runtime import (
    BUILTIN_SPECS,
    Settings,
    load_catalog,
    open_bridge,
    open_runtime,
)
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from mcp_toolbridge.state import MemoryState, Usage
from tests.support.manifests import NOT_DESTRUCTIVE

DAY = 86_400.0

SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string"},
        "usage": {"type": "object"},
    },
    "required": ["message"],
}


def _tool(tool_id: str, **extra: Any) -> dict[str, Any]:
    """A tool that prints its payload: its result reports the usage its arguments carry."""
    return {
        "id": tool_id,
        "description": f"Echo the payload ({tool_id})",
        "transport": {"kind": "exec", "command": "/bin/cat", "args": []},
        "input_schema": SCHEMA,
        "result_schema": SCHEMA,
        "annotations": NOT_DESTRUCTIVE,  # it prints what it is given: the default runs it
        **extra,
    }


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    path = tmp_path / "budgeted" / "tools.json"
    path.parent.mkdir()
    tools = [
        _tool("summarize.long", budget={"tokens": 4000, "usd": 1.0}),
        _tool("paid.call", budget={"usd": 0.25}),
        _tool("plain.echo"),
    ]
    path.write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    return Settings(paths=[path], audit_path=tmp_path / "audit.ndjson")


def _lines(path: Path | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_usage_is_read_from_a_top_level_usage_object_only_when_well_formed():
    assert reported_usage({"usage": {"tokens": 12, "usd": 0.5}}) == Usage(12, 0.5)
    assert reported_usage({"usage": {"usd": 1}}) == Usage(0, 1.0)
    malformed: list[Any] = [
        None,
        [1],
        {"usage": 5},
        {"usage": {}},
        {"usage": {"tokens": -1}},
        {"usage": {"tokens": 1.5}},
        {"usage": {"tokens": True}},
        {"usage": {"usd": float("nan")}},
        {"data": {"usage": {"tokens": 3}}},
    ]
    for value in malformed:
        assert reported_usage(value) is None, value


async def test_a_spent_token_budget_refuses_the_next_call_in_that_session(settings):
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    one = CallContext(session_id="one")
    other = CallContext(session_id="other")
    spend = {"message": "m", "usage": {"tokens": 1500, "usd": 0.01}}
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            for _ in range(3):  # 1500, 3000, 4500: the third still starts under 4000
                assert (await bridge.call("summarize_long", spend, one)).ok
            refused = await bridge.call("summarize_long", spend, one)
            assert (await bridge.call("summarize_long", spend, other)).ok
            assert (await bridge.call("plain_echo", spend, one)).ok  # no budget: not refused
    assert refused.code == ErrorCode.BUDGET_EXCEEDED
    assert refused.error is not None
    assert "token budget of summarize_long is spent" in refused.error
    assert "4500 tokens" in refused.error and "budget.tokens is 4000" in refused.error
    assert "raises budget.tokens" in refused.error and "tools.json" in refused.error
    entries = _lines(settings.audit_path)
    assert [e["outcome"] for e in entries] == ["ok", "ok", "ok", "denied", "ok", "ok"]
    assert entries[0]["usage"] == {"tokens": 1500, "usd": 0.01}
    assert entries[3]["errorCode"] == "budget.exceeded"
    assert entries[3]["decisionScope"] == "budget" and entries[3]["usage"] is None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_spent_usd_budget_reaches_the_client_as_a_tool_error(settings, mode):
    loaded = load_catalog(settings, BUILTIN_SPECS)
    with anyio.fail_after(30):
        async with open_bridge(settings, loaded) as bridge:
            server = ToolbridgeServer(bridge)
            async with Client(server.server, mode=mode) as client:
                paid = {"message": "m", "usage": {"usd": 0.2}}
                assert not (await client.call_tool("paid_call", paid)).is_error
                assert not (await client.call_tool("paid_call", paid)).is_error
                refused = await client.call_tool("paid_call", paid)
    assert refused.is_error
    assert (refused.meta or {}).get("toolbridge/code") == "budget.exceeded"
    text = json.dumps([block.model_dump() for block in refused.content])
    assert "USD budget of paid_call is spent" in text and "$0.4000" in text


async def test_a_persons_budget_holds_across_their_sessions_and_is_theirs_alone(settings):
    loaded = load_catalog(settings, BUILTIN_SPECS)
    alice = Caller(subject="alice", client_id="ide", issuer="https://id.example")
    bob = Caller(subject="bob", client_id="ide", issuer="https://id.example")
    spend = {"message": "m", "usage": {"usd": 0.2}}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:
            bridge = runtime.bridge
            first = CallContext(session_id="alice-1", caller=alice)
            assert (await bridge.call("paid_call", spend, first)).ok
            runtime.end_session("alice-1")  # her session ends; her usage does not
            await anyio.wait_all_tasks_blocked()
            second = CallContext(session_id="alice-2", caller=alice)
            assert (await bridge.call("paid_call", spend, second)).ok
            refused = await bridge.call("paid_call", spend, second)
            assert (await bridge.call("paid_call", spend, CallContext("bob-1", caller=bob))).ok
    assert refused.code == ErrorCode.BUDGET_EXCEEDED
    assert refused.error is not None
    assert "used by alice (client ide) across their sessions" in refused.error


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_a_persons_budget_holds_for_their_window_and_a_full_state_refuses_newcomers(
    settings,
):
    """Two people at most, a day's window, an injected clock: a third person's budgeted call
    is refused (state.full) before it runs rather than anyone's usage dropped; a call without
    a budget still runs; a person idle for the window starts again, one active does not."""
    loaded = load_catalog(settings, BUILTIN_SPECS)
    clock = Clock()
    state = MemoryState(person_idle_s=DAY, max_people=2, clock=clock)
    alice, bob, carol = (
        Caller(subject=name, client_id="ide", issuer="https://id.example")
        for name in ("alice", "bob", "carol")
    )
    spend = {"message": "m", "usage": {"usd": 0.2}}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded, sessions=Sessions(state=state)) as runtime:
            bridge = runtime.bridge

            async def call(tool: str, caller: Caller) -> CallOutcome:
                return await bridge.call(tool, spend, CallContext("s", caller=caller))

            assert (await call("paid_call", alice)).ok
            assert (await call("paid_call", bob)).ok
            full = await call("paid_call", carol)
            assert full.code == ErrorCode.STATE_FULL and full.result is None  # nothing ran
            assert full.error is not None and "at most 2 people" in full.error
            assert (await call("plain_echo", carol)).ok  # nothing kept for it: it runs
            clock.now += DAY / 2
            assert (await call("paid_call", alice)).ok  # $0.40 of $0.25: spent
            clock.now += DAY / 2 + 1  # bob idle for a day, alice for half of one
            assert (await call("paid_call", carol)).ok  # bob's place was freed
            spent = await call("paid_call", alice)
            assert spent.code == ErrorCode.BUDGET_EXCEEDED  # within her window: still spent
            assert (await call("paid_call", bob)).code == ErrorCode.STATE_FULL
            clock.now += DAY + 1
            assert (await call("paid_call", bob)).ok  # a new window for everyone
            assert (await call("paid_call", alice)).ok
    lines = _lines(settings.audit_path)
    refused = [line for line in lines if line.get("errorCode") == "state.full"]
    assert len(refused) == 2 and all(line["subject"] in ("carol", "bob") for line in refused)
