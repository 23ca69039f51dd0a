"""The State port's in-memory implementation: what each method keeps, per owner, the
background forgetting of ended sessions, and what it keeps of people: an idle expiry and a cap
that never drops a budget's usage early (a newcomer is refused instead)."""

from __future__ import annotations

import anyio
import pytest

from mcp_toolbridge.builtins import Sessions
from mcp_toolbridge.errors import ErrorCode, StateFullError
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


# -- what is kept of people: idle expiry and a cap (an injected clock, no sleeps) ----------

DAY = 86_400.0


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def person(name: str) -> str:
    key = Caller(subject=name, client_id="ide", issuer="https://id.example").key
    assert key is not None
    return key


def bounded(clock: Clock, max_people: int = 10_000) -> MemoryState:
    return MemoryState(person_idle_s=DAY, max_people=max_people, clock=clock)


async def test_a_persons_entries_expire_a_day_after_their_last_call_and_no_sooner() -> None:
    clock = Clock()
    state = bounded(clock)
    alice, bob = person("alice"), person("bob")
    for who in (alice, bob):
        await state.add_grants(who, [Grant("read", None)])
        await state.add_usage(who, "paid", Usage(10, 0.5))
        await state.save(who, "todo", ["plan"])
        assert await state.take(who, "web_search.calls", 5)
    clock.now += DAY - 1
    assert await state.grants(alice) == (Grant("read", None),)  # a call of hers: she is active
    clock.now += 2  # a day and a second after bob's last activity, a second after alice's
    assert await state.usage(bob, "paid") == Usage()  # forgotten whole: a new window
    assert await state.load(bob, "todo") is None
    assert await state.usage(alice, "paid") == Usage(10, 0.5)
    assert await state.load(alice, "todo") == ["plan"]
    assert state.people() == 2  # bob again (the usage check keeps his place), alice
    clock.now += DAY
    assert await state.grants(alice) == ()
    assert state.people() == 0 and state.owners() == 0


async def test_sessions_entries_never_expire_nor_count_against_the_cap() -> None:
    clock = Clock()
    state = bounded(clock, max_people=1)
    await state.add_grants("session-1", [Grant("read", None)])
    await state.add_usage("server", "paid", Usage(1))
    await state.add_grants(person("alice"), [Grant("read", None)])
    clock.now += 10 * DAY
    assert await state.grants("session-1") == (Grant("read", None),)
    assert await state.usage("server", "paid") == Usage(1)
    assert state.people() == 0  # alice expired; the sessions' entries stay until forgotten


async def test_past_the_cap_the_least_recently_active_person_without_a_limit_makes_room() -> None:
    clock = Clock()
    state = bounded(clock, max_people=3)
    ann, bob, cid, dan = (person(n) for n in ("ann", "bob", "cid", "dan"))
    await state.save(ann, "todo", ["a"])
    clock.now += 1
    await state.add_usage(bob, "paid", Usage(5))  # a budget's usage: never dropped early
    clock.now += 1
    await state.add_grants(cid, [Grant("read", None)])
    clock.now += 1
    assert await state.load(ann, "todo") == ["a"]  # ann is active again: cid is the oldest free
    await state.save(dan, "todo", ["d"])
    assert await state.grants(cid) == ()  # cid made room: asked again, never allowed more
    assert await state.load(ann, "todo") == ["a"]
    assert await state.usage(bob, "paid") == Usage(5)
    assert await state.load(dan, "todo") == ["d"]
    assert state.people() == 3


async def test_a_budget_check_keeps_a_persons_place_like_their_usage() -> None:
    clock = Clock()
    state = bounded(clock, max_people=2)
    ann, bob, cid = (person(n) for n in ("ann", "bob", "cid"))
    assert await state.usage(ann, "paid") == Usage()  # the check before a budgeted call
    await state.save(bob, "todo", [])
    await state.grants(ann)
    await state.add_grants(cid, [Grant("read", None)])  # bob, free, makes room; ann does not
    assert state.people() == 2
    assert await state.load(bob, "todo") is None
    assert await state.add_usage(ann, "paid", Usage(7)) == Usage(7)


async def test_when_every_person_kept_holds_a_limit_a_newcomer_is_refused_not_a_budget_reset() -> (
    None
):
    clock = Clock()
    state = bounded(clock, max_people=2)
    ann, bob, cid = (person(n) for n in ("ann", "bob", "cid"))
    await state.add_usage(ann, "paid", Usage(5))
    assert await state.take(bob, "web_search.calls", 3)
    refusals = [
        state.usage(cid, "paid"),
        state.take(cid, "web_search.calls", 3),
        state.add_grants(cid, [Grant("read", None)]),
        state.save(cid, "todo", ["c"]),
    ]
    for refusal in refusals:
        with pytest.raises(StateFullError) as caught:
            await refusal
        assert caught.value.code == ErrorCode.STATE_FULL
        assert "at most 2 people" in caught.value.message and "24 hours" in caught.value.message
    assert await state.grants(cid) == () and await state.load(cid, "todo") is None  # reads
    assert await state.usage(ann, "paid") == Usage(5)
    assert not await state.take(bob, "web_search.calls", 1)  # bob's count was kept
    assert state.people() == 2
    # a call that ran is always counted, past the cap if it must be
    assert await state.add_usage(cid, "paid", Usage(1)) == Usage(1)
    assert state.people() == 3
    clock.now += DAY  # their window ends: room again
    await state.save(person("dan"), "todo", [])
    assert state.people() == 1


async def test_forgetting_a_person_frees_their_place() -> None:
    state = bounded(Clock(), max_people=1)
    ann = person("ann")
    await state.add_usage(ann, "paid", Usage(1))
    await state.forget(ann)
    await state.add_usage(person("bob"), "paid", Usage(1))
    assert state.people() == 1


def test_a_bounded_state_needs_a_positive_window_and_room_for_one() -> None:
    with pytest.raises(ValueError):
        MemoryState(person_idle_s=0)
    with pytest.raises(ValueError):
        MemoryState(max_people=0)
