"""Stale or hostile values in the keys the replicas read (red-team pass of 2026-11-29, 6th),
written straight into a real Redis: text that is not JSON, JSON of the wrong shape, JSON nested
too deep to read (``[`` 200,000 times: a RecursionError), and names that are not UTF-8. Every
read skips them, or reads them as nothing: none raises, none grants anything. Before, the
set of replica names with one byte ``\\xff`` in it, and a deep value published on the events
channel, each ended a replica (tests/e2e/test_replicas_hostile.py runs those against a real
replica process)."""

from __future__ import annotations

import json

import anyio
import pytest

from mcp_toolbridge.state import ConsoleShare, Grant, RedisLink, RedisState, SharedStore
from tests.support.redis_server import unique_prefix

pytestmark = pytest.mark.anyio

DEEP = b"[" * 200_000
BAD = [b"not json", b"\xff\xfe", DEEP, b"5", b"null", b'"abc"', b'[1, null, "allow"]']
BAD_GRANTS = [*BAD, b'["read", null, "always"]', b'["read", 7, "allow"]', b'["read", null]']


async def test_stored_always_answers_of_any_other_shape_grant_nothing(link: RedisLink) -> None:
    state = RedisState(link, prefix=unique_prefix())
    owner = "caller:0123"
    await state.add_grants(owner, [Grant("read", None, "allow")])
    await link.run("RPUSH", state._key(owner, "grants"), *BAD_GRANTS)
    await state.add_grants(owner, [Grant("bash", "git status", "ask")])
    assert await state.grants(owner) == (
        Grant("read", None, "allow"),
        Grant("bash", "git status", "ask"),
    )


async def test_a_stored_value_that_is_not_json_loads_as_none(link: RedisLink) -> None:
    state = RedisState(link, prefix=unique_prefix())
    for i, raw in enumerate([b"not json", b"\xff", DEEP]):
        await link.run("HSET", state._key("s", "values"), f"v{i}", raw)
        assert await state.load("s", f"v{i}") is None
    await state.save("s", "todo", ["a"])
    assert await state.load("s", "todo") == ["a"]


async def test_the_replicas_loops_read_past_names_and_records_they_never_wrote(
    link: RedisLink,
) -> None:
    prefix = unique_prefix()
    shared = SharedStore(link, prefix=prefix)
    await link.run("SADD", f"{prefix}replicas", b"\xff", "r9")
    assert await shared.replicas() == ["r9"]
    await link.run("HSET", f"{prefix}calls:r9", "a", DEEP, "b", b"\xff", "c", json.dumps({"t": 1}))
    await link.run("SADD", f"{prefix}sessions:r9", b"\xff", "r9.s1")
    records, sessions = await shared.claim("r9")
    assert records == [{"t": 1}] and sessions == ["r9.s1"]
    await link.run("HSET", shared._session("r9.s1", "starts"), b"\xff", 1, "7", 2)
    assert await shared.streams("r9.s1") == ["7"]
    await link.run("HSET", shared._session("r9.s1", "meta"), "replica", b"\xff", "credential", "x")
    assert await shared.session("r9.s1") == {"replica": "\ufffd", "credential": "x"}
    with anyio.fail_after(10):
        async with shared.events() as events:
            for raw in (DEEP, b"\xff", b"[1]", json.dumps({"kind": "tools"})):
                await link.run("PUBLISH", f"{prefix}events", raw)
            assert await anext(events) == {"kind": "tools"}


async def test_the_consoles_shared_keys_read_past_values_they_never_wrote(link: RedisLink) -> None:
    prefix = unique_prefix()
    share = ConsoleShare(link, prefix=prefix)
    await link.run("SET", f"{prefix}replica:r1", "1")
    await link.run("SADD", f"{prefix}replicas", "r1", b"\xff")
    assert await share.live() == ["r1"]
    desk = f"{prefix}desk:r1"
    await link.run("HSET", desk, "q1", DEEP, "q2", b"\xff", "q3", json.dumps({"a": 1}))
    assert await share.waiting() == [{"a": 1}]
    assert await share.question("r1", "q1") is None
    assert await share.question("r1", "q2") is None
    await link.run("SET", f"{prefix}answer:q4", DEEP)
    assert await share.given("q4") is None
    assert await share.close("r1", "q4") is None  # not waiting: the stored answer is read
    await link.run("XADD", f"{prefix}audit", "*", "r", b"\xff", "a", b"{}", "w", DEEP)
    (entry,) = await share.audit_tail()
    assert entry.replica == "" and entry.who == {}
    await link.run("SET", share._pass("given", "pass"), b"\xff")
    assert await share.take_pass("given") is None
    with anyio.fail_after(10):
        async with share.messages() as messages:
            for raw in (DEEP, b"\xff", json.dumps({"k": "desk"})):
                await link.run("PUBLISH", share.channel, raw)
            assert await anext(messages) == {"k": "desk"}
