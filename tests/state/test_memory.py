"""The State port's in-memory implementation: what each method keeps, per owner, and the
background forgetting of ended sessions."""

from __future__ import annotations

import anyio

from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.host import LOCAL, CallContext, Caller
from mcp_toolbridge.state import Grant, MemoryState, State, Usage


async def test_grants_are_kept_per_owner_once_each_in_order(state: State) -> None:
    first, second = Grant("bash", "git status"), Grant("read", None)
    await state.add_grants("alice", [first, second, first])
    await state.add_grants("alice", [first])
    assert await state.grants("alice") == (first, second)
    assert await state.grants("bob") == ()


async def test_usage_sums_per_owner_and_tool(state: State) -> None:
    assert await state.add_usage("a", "search", Usage(10, 0.5)) == Usage(10, 0.5)
    assert await state.add_usage("a", "search", Usage(5, 0.25)) == Usage(15, 0.75)
    assert await state.usage("a", "search") == Usage(15, 0.75)
    assert await state.usage("a", "other") == Usage()
    assert await state.usage("b", "search") == Usage()


async def test_take_counts_up_to_the_limit_and_no_further(state: State) -> None:
    taken = [await state.take("a", "web_search.calls", 3) for _ in range(5)]
    assert taken == [True, True, True, False, False]
    assert await state.take("b", "web_search.calls", 3)


async def test_a_saved_value_is_a_copy_both_ways(state: State) -> None:
    items = [{"content": "plan", "status": "pending"}]
    await state.save("a", "todo", items)
    items[0]["status"] = "completed"
    loaded = await state.load("a", "todo")
    assert loaded == [{"content": "plan", "status": "pending"}]
    loaded[0]["status"] = "changed"
    assert await state.load("a", "todo") == [{"content": "plan", "status": "pending"}]
    assert await state.load("b", "todo") is None


async def test_forget_drops_everything_of_one_owner_only(state: State) -> None:
    for owner in ("a", "b"):
        await state.add_grants(owner, [Grant("read", None)])
        await state.add_usage(owner, "t", Usage(1))
        await state.save(owner, "todo", [])
        await state.take(owner, "n", 1)
    await state.forget("a")
    assert await state.grants("a") == ()
    assert await state.usage("a", "t") == Usage()
    assert await state.load("a", "todo") is None
    assert await state.take("a", "n", 1)
    assert await state.grants("b") == (Grant("read", None),)
    if isinstance(state, MemoryState):
        assert state.owners() == 2


async def test_sessions_forget_an_owner_in_the_background_while_open() -> None:
    sessions = Sessions()
    state = sessions.state
    assert isinstance(state, MemoryState)
    await state.add_grants("s1", [Grant("read", None)])
    sessions.forget("s1")  # not open: nothing happens
    assert await state.grants("s1") != ()
    async with sessions.forgetting():
        sessions.forget("s1")
        with anyio.fail_after(5):
            while await state.grants("s1"):
                await anyio.wait_all_tasks_blocked()
    assert state.owners() == 0


def test_an_identified_callers_state_is_theirs_across_sessions() -> None:
    alice = Caller(subject="alice", client_id="ide", issuer="https://id.example")
    one = CallContext(session_id="s1", caller=alice)
    two = CallContext(session_id="s2", caller=alice, budget_session="server")
    assert one.owner == two.owner == alice.key
    assert one.budget_scope == two.budget_scope == alice.key
    other_client = Caller(subject="alice", client_id="cli", issuer="https://id.example")
    assert other_client.key != alice.key
    assert alice.key is not None and "alice" not in alice.key  # a digest, not the name


def test_an_anonymous_callers_state_is_its_sessions() -> None:
    assert LOCAL.key is None and not LOCAL.identified
    ctx = CallContext(session_id="s1")
    assert ctx.owner == "s1" and ctx.budget_scope == "s1"
    assert CallContext(session_id="s2", budget_session="server").budget_scope == "server"
