"""The State port's check-and-change methods (rate-limit windows, budget admission), on the
in-memory store and on a real Redis; and what the Redis one does when Redis is away."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from mcp_toolbridge.state import (
    UNKNOWN_CALL_USAGE,
    Grant,
    RedisLink,
    RedisState,
    State,
    StateUnavailable,
    Usage,
)
from mcp_toolbridge.state.redis_client import MAX_CONNECTIONS
from mcp_toolbridge.state.redis_state import SESSION_TTL_S
from tests.support.redis_server import RedisServer, free_port, unique_prefix


async def test_hit_counts_up_to_the_limit_in_its_window_and_says_when_to_retry(
    state: State,
) -> None:
    waits = [await state.hit("a", "calls", 3, 60.0) for _ in range(4)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert 0 < waits[3] <= 60.0
    assert await state.hit("b", "calls", 3, 60.0) == 0.0  # another owner's window
    assert await state.hit("a", "other", 3, 60.0) == 0.0  # another counter


async def test_a_use_leaves_the_window_when_it_is_over(state: State) -> None:
    assert await state.hit("a", "calls", 1, 0.2) == 0.0
    wait = await state.hit("a", "calls", 1, 0.2)
    assert wait > 0
    await anyio.sleep(wait + 0.05)  # the window's own length: what the refusal said
    assert await state.hit("a", "calls", 1, 0.2) == 0.0


async def test_admission_holds_a_call_until_it_settles(state: State) -> None:
    first = await state.admit("a", "t", tokens=2, usd=None)
    assert first.admitted and first.held == UNKNOWN_CALL_USAGE
    second = await state.admit("a", "t", tokens=2, usd=None)
    assert second.admitted and second.running == UNKNOWN_CALL_USAGE
    third = await state.admit("a", "t", tokens=2, usd=None)
    assert not third.admitted and third.running.tokens == 2 and third.held == Usage()
    assert await state.settle("a", "t", first.held, Usage(1, 0.5)) == Usage(1, 0.5)
    assert await state.settle("a", "t", second.held, None) == Usage(1, 0.5)
    again = await state.admit("a", "t", tokens=2, usd=None)
    assert again.admitted and again.used == Usage(1, 0.5)
    assert again.held == Usage(1, 0.5)  # the largest usage one call reported


async def test_a_spent_budget_refuses_by_its_own_figure(state: State) -> None:
    call = await state.admit("a", "t", tokens=None, usd=1.0)
    await state.settle("a", "t", call.held, Usage(0, 1.25))
    refused = await state.admit("a", "t", tokens=None, usd=1.0)
    assert not refused.admitted and refused.used == Usage(0, 1.25)
    assert (await state.admit("a", "t", tokens=None, usd=None)).admitted
    assert (await state.admit("b", "t", tokens=None, usd=1.0)).admitted


async def test_forget_drops_windows_and_holds_too(state: State) -> None:
    await state.hit("a", "calls", 1, 60.0)
    await state.admit("a", "t", tokens=1, usd=None)
    await state.forget("a")
    assert await state.hit("a", "calls", 1, 60.0) == 0.0
    assert (await state.admit("a", "t", tokens=1, usd=None)).admitted


async def test_concurrent_admissions_through_three_links_never_pass_the_budget(
    redis_server: RedisServer,
) -> None:
    """Three replicas' links, forty calls at once, a budget of seven one-token calls: seven
    are admitted, whichever link they came through."""
    prefix = unique_prefix()
    links = [RedisLink(redis_server.url()) for _ in range(3)]
    states = [RedisState(link, prefix=prefix) for link in links]
    admitted: list[bool] = []

    async def one(state: State) -> None:
        admitted.append((await state.admit("p", "t", tokens=7, usd=None)).admitted)

    try:
        async with anyio.create_task_group() as group:
            for i in range(40):
                group.start_soon(one, states[i % 3])
        assert admitted.count(True) == 7
        waits: list[float] = []

        async def hit(state: State) -> None:
            waits.append(await state.hit("p", "calls", 5, 60.0))

        async with anyio.create_task_group() as group:
            for i in range(30):
                group.start_soon(hit, states[i % 3])
        assert waits.count(0.0) == 5
    finally:
        for link in links:
            await link.aclose()


async def test_redis_away_is_unavailable_at_once_and_names_the_server() -> None:
    port = free_port()  # nothing listens there
    link = RedisLink(f"redis://:hunter2@127.0.0.1:{port}/0")
    state = RedisState(link, prefix=unique_prefix())
    try:
        with anyio.fail_after(10), pytest.raises(StateUnavailable) as caught:
            await state.admit("a", "t", tokens=1, usd=None)
        assert f"127.0.0.1:{port}" in caught.value.reason
        assert "hunter2" not in caught.value.reason
        assert not await link.ping()
    finally:
        await link.aclose()


async def test_state_survives_nothing_of_a_restart_but_answers_again(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A restarted Redis (without persistence) answers the next command on the same link:
    the pool reconnects; the command that met the dead connection failed once, unretried."""
    server = RedisServer(tmp_path_factory.mktemp("redis-restart")).start()
    link = RedisLink(server.url())
    state = RedisState(link, prefix=unique_prefix())
    try:
        assert await state.take("a", "n", 5)
        server.stop()
        with pytest.raises(StateUnavailable):
            await state.take("a", "n", 5)
        server.start()
        outcomes: list[bool | None] = []
        for _ in range(3):  # pooled connections to the old server fail once each, at most
            try:
                outcomes.append(await state.take("a", "n", 5))
            except StateUnavailable:
                outcomes.append(None)
        assert True in outcomes
        assert await link.ping()
    finally:
        await link.aclose()
        server.stop()


async def test_every_key_a_person_has_in_redis_expires_with_person_idle_s(link: RedisLink) -> None:
    """What bounds the people kept in Redis (``[auth] max_people`` caps one process's memory
    only): each key of a person lives ``person_ttl_s`` (``[auth] person_idle_s``) after its
    last change or the person's last call, an anonymous session's a day; none lives for
    ever."""
    prefix = unique_prefix()
    state = RedisState(link, prefix=prefix, person_ttl_s=3600)
    for owner in ("caller:person", "session:anonymous"):
        await state.add_grants(owner, [Grant("read", None)])
        await state.save(owner, "todo", [{"content": "x"}])
        assert await state.take(owner, "web_search", 5)
        await state.hit(owner, "calls", 10, 60.0)
        admitted = await state.admit(owner, "t", tokens=5, usd=None)
        await state.settle(owner, "t", admitted.held, Usage(1, 0.0))
    keys = await link.run("KEYS", f"{prefix}*")
    ttls = {key.decode(): await link.run("TTL", key) for key in keys}
    person = {k: t for k, t in ttls.items() if "caller:person" in k}
    session = {k: t for k, t in ttls.items() if "session:anonymous" in k}
    assert len(person) >= 6 and len(session) == len(person), ttls
    windows = [k for k in person if ":hits:" in k]
    assert windows and all(0 < person[k] <= 60 for k in windows)  # the window's own length
    assert all(0 < t <= 3600 for k, t in person.items() if k not in windows), person
    assert all(3600 < t <= SESSION_TTL_S for k, t in session.items() if ":hits:" not in k)
    usage = next(k for k in person if k.endswith(":usage"))
    await link.run("EXPIRE", usage, 5)  # as if its last change were long ago
    assert await state.grants("caller:person") == (Grant("read", None),)  # a call's gate
    assert 5 < await link.run("TTL", usage) <= 3600  # any call renews all of a person's keys
    with pytest.raises(ValueError):
        RedisState(link, person_ttl_s=0)


async def test_a_redis_that_hangs_is_unavailable_within_the_deadline_not_waited_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Redis stopped dead (SIGSTOP: connections open, nothing answered): a command fails
    with StateUnavailable at its deadline instead of hanging the call; once Redis answers
    again, so does the link."""
    server = RedisServer(tmp_path_factory.mktemp("redis-hang")).start()
    assert server.process is not None
    link = RedisLink(server.url(), timeout_s=0.5)
    state = RedisState(link, prefix=unique_prefix())
    try:
        assert await state.take("a", "n", 5)
        os.kill(server.process.pid, signal.SIGSTOP)
        try:
            with anyio.fail_after(30), pytest.raises(StateUnavailable) as caught:
                await state.take("a", "n", 5)
            assert "did not answer" in caught.value.reason
        finally:
            os.kill(server.process.pid, signal.SIGCONT)
        with anyio.fail_after(30):
            while not await link.ping():  # the connection that timed out is dropped once
                pass
        assert await state.take("a", "n", 5)
    finally:
        await link.aclose()
        server.stop()


async def test_one_link_holds_a_bounded_pool_however_many_commands_wait(
    link: RedisLink, redis_server: RedisServer
) -> None:
    """Five times the pool's size of commands at once: all are answered, over at most
    MAX_CONNECTIONS connections of this link (the rest wait for one, within their deadline)."""
    own = RedisLink(redis_server.url())
    state = RedisState(own, prefix=unique_prefix())
    try:
        before = int((await link.run("INFO", "clients"))["connected_clients"])
        async with anyio.create_task_group() as group:
            for i in range(5 * MAX_CONNECTIONS):
                group.start_soon(state.take, f"owner{i}", "n", 5)
        during = int((await link.run("INFO", "clients"))["connected_clients"])
    finally:
        await own.aclose()
    assert 0 < during - before <= MAX_CONNECTIONS
