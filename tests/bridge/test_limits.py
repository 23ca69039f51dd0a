"""Per-caller rate limits (the policy's ``[limits]``) and budgets held by running calls:
a refused call says which limit and when to retry; with the state store away, budgeted and
limited calls, and any call whose gate must read the caller's "always" answers, fail closed
(nothing runs) with ``state.unavailable``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.host import CallContext, Caller
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.state import RedisLink, RedisState
from tests.bridge.test_budgets import _tool
from tests.support.redis_server import free_port

ALICE = Caller(subject="alice", client_id="ide", issuer="https://id.example")
BOB = Caller(subject="bob", client_id="ide", issuer="https://id.example")


def _settings(tmp_path: Path, policy: str = "") -> Settings:
    path = tmp_path / "tools" / "tools.json"
    path.parent.mkdir()
    tools = [_tool("paid.call", budget={"tokens": 2}), _tool("plain.echo")]
    path.write_text(json.dumps({"version": 1, "tools": tools}), encoding="utf-8")
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy, encoding="utf-8")
    return Settings(paths=[path], policy_file=policy_file, audit_path=tmp_path / "audit.ndjson")


def _audit(settings: Settings) -> list[dict[str, Any]]:
    assert settings.audit_path is not None
    return [json.loads(line) for line in settings.audit_path.read_text().splitlines()]


async def test_a_caller_past_the_rate_limit_is_told_which_limit_and_when_to_retry(tmp_path):
    settings = _settings(tmp_path, "[limits]\ncalls = 2\nwindow_s = 600\n")
    loaded = load_catalog(settings, BUILTIN_SPECS)
    alice, bob = CallContext(caller=ALICE), CallContext(caller=BOB)
    echo = {"message": "m"}
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:
            bridge = runtime.bridge
            assert (await bridge.call("plain_echo", echo, alice)).ok
            assert (await bridge.call("plain_echo", echo, alice)).ok
            refused = await bridge.call("plain_echo", echo, alice)
            assert (await bridge.call("plain_echo", echo, bob)).ok  # bob's own count
    assert refused.code == ErrorCode.RATE_LIMITED
    assert refused.error is not None
    assert "alice (client ide) may make 2 calls per 600 s" in refused.error
    assert "[limits]" in refused.error and "Retry in " in refused.error
    lines = _audit(settings)
    assert [line["outcome"] for line in lines] == ["ok", "ok", "denied", "ok"]
    assert lines[2]["decisionScope"] == "limits" and lines[2]["errorCode"] == "rate.limited"


async def test_running_calls_hold_the_budget_so_concurrent_calls_never_pass_it(tmp_path):
    """A budget of two tokens, calls that each report one: of ten started together, two run
    (each holds one token until it reports), the rest are told to retry when they end."""
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    ctx = CallContext(caller=ALICE)
    spend = {"message": "m", "usage": {"tokens": 1}}
    outcomes = []
    with anyio.fail_after(30):
        async with open_runtime(settings, loaded) as runtime:

            async def one() -> None:
                outcomes.append(await runtime.bridge.call("paid_call", spend, ctx))

            async with anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(one)
            after = await runtime.bridge.call("paid_call", spend, ctx)
    assert sum(o.ok for o in outcomes) == 2
    held = [o for o in outcomes if not o.ok]
    assert all(o.code == ErrorCode.BUDGET_EXCEEDED for o in held)
    assert all("held by calls of it still running" in (o.error or "") for o in held)
    assert after.code == ErrorCode.BUDGET_EXCEEDED and "is spent" in (after.error or "")


async def test_with_the_state_store_away_limited_calls_fail_closed(tmp_path):
    settings = _settings(tmp_path, "[limits]\ncalls = 100\n")
    loaded = load_catalog(settings, BUILTIN_SPECS)
    port = free_port()  # no Redis there
    link = RedisLink(f"redis://127.0.0.1:{port}/0")
    try:
        with anyio.fail_after(30):
            sessions = Sessions(state=RedisState(link))
            async with open_runtime(settings, loaded, sessions=sessions) as runtime:
                refused = await runtime.bridge.call(
                    "plain_echo", {"message": "m"}, CallContext(caller=ALICE)
                )
    finally:
        await link.aclose()
    assert refused.code == ErrorCode.STATE_UNAVAILABLE
    assert refused.error is not None
    assert f"Redis at redis://127.0.0.1:{port}/0" in refused.error
    assert "refused rather than let through unchecked" in refused.error
    assert _audit(settings)[0]["errorCode"] == "state.unavailable"


async def test_with_the_state_store_away_budgets_and_grants_fail_closed_too(tmp_path):
    """No ``[limits]``: a budgeted call (its admission) and a plain one (the gate reads the
    caller's "always" answers) are refused with state.unavailable; nothing runs."""
    settings = _settings(tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    link = RedisLink(f"redis://127.0.0.1:{free_port()}/0")  # no Redis there
    try:
        with anyio.fail_after(30):
            sessions = Sessions(state=RedisState(link))
            async with open_runtime(settings, loaded, sessions=sessions) as runtime:
                paid = await runtime.bridge.call(
                    "paid_call", {"message": "m"}, CallContext(caller=ALICE)
                )
                plain = await runtime.bridge.call(
                    "plain_echo", {"message": "m"}, CallContext(caller=BOB)
                )
    finally:
        await link.aclose()
    assert paid.code == plain.code == ErrorCode.STATE_UNAVAILABLE
    lines = _audit(settings)
    assert [(line["tool"], line["outcome"]) for line in lines] == [
        ("paid_call", "error"),
        ("plain_echo", "error"),
    ]
    assert all(line["errorCode"] == "state.unavailable" for line in lines)
