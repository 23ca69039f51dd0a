"""A session's event store on its own: its bounds, what a resumed stream gets when the bounds
dropped its result, and the end of the session ending every resumed stream."""

from __future__ import annotations

import anyio
from mcp.server.streamable_http import GET_STREAM_KEY, EventMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCResponse

from mcp_toolbridge.server.resume import (
    RESULT_LOST,
    EventBudget,
    SessionEvents,
    parse_event_id,
    request_id_of,
)


def _note(n: int, pad: str = "") -> JSONRPCNotification:
    params = {"progressToken": "t", "progress": n, "message": pad}
    return JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params=params)


def _result(request_id: int, value: str = "done") -> JSONRPCResponse:
    return JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"value": value})


class Collected:
    def __init__(self) -> None:
        self.events: list[EventMessage] = []

    async def __call__(self, event: EventMessage) -> None:
        self.events.append(event)

    @property
    def messages(self) -> list[object]:
        return [e.message for e in self.events]


async def test_the_store_keeps_at_most_its_count_and_bytes_dropping_the_oldest() -> None:
    by_count = SessionEvents(max_events=5, max_bytes=1 << 20)
    for n in range(20):
        await by_count.store_event("1", _note(n))
    assert by_count.kept[0] == 5
    by_bytes = SessionEvents(max_events=1000, max_bytes=2000)
    for n in range(20):
        await by_bytes.store_event("1", _note(n, "x" * 300))
    count, size = by_bytes.kept
    assert size <= 2000 and 0 < count < 20


async def test_a_resumed_stream_gets_what_followed_and_its_result_without_priming_events() -> None:
    store = SessionEvents()
    priming = await store.store_event("7", None)
    await store.store_event("7", _note(1))
    await store.store_event("8", _note(99))  # another request's stream
    await store.store_event("7", _result(7))
    got = Collected()
    assert await store.replay_events_after(priming, got) is None
    assert got.messages == [_note(1), _result(7)]
    assert all(e.event_id and parse_event_id(e.event_id) for e in got.events)


async def test_a_resumed_call_whose_result_was_dropped_is_answered_with_an_error() -> None:
    store = SessionEvents(max_events=3, max_bytes=1 << 20)
    priming = await store.store_event("3", None)
    await store.store_event("3", _result(3))
    for n in range(5):  # the result goes
        await store.store_event(GET_STREAM_KEY, _note(n))
    got = Collected()
    await store.replay_events_after(priming, got)
    [lost] = got.messages
    assert isinstance(lost, JSONRPCError) and lost.id == 3 and lost.error.code == RESULT_LOST


async def test_a_result_larger_than_the_store_is_sent_but_not_kept() -> None:
    store = SessionEvents(max_events=100, max_bytes=1000)
    priming = await store.store_event("4", None)
    await store.store_event("4", _result(4, "y" * 5000))
    assert store.kept == (1, 0)
    got = Collected()
    await store.replay_events_after(priming, got)
    [lost] = got.messages
    assert isinstance(lost, JSONRPCError) and lost.error.code == RESULT_LOST


async def test_a_resumed_stream_follows_the_call_until_its_result() -> None:
    store = SessionEvents()
    priming = await store.store_event("5", None)
    got = Collected()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.replay_events_after, priming, got)
            await anyio.wait_all_tasks_blocked()
            await store.store_event("5", _note(1))
            await store.store_event("5", _result(5))
    assert got.messages == [_note(1), _result(5)]


async def test_the_end_of_the_session_ends_a_stream_waiting_for_a_result() -> None:
    store = SessionEvents()
    priming = await store.store_event("6", None)
    got = Collected()
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(store.replay_events_after, priming, got)
            await anyio.wait_all_tasks_blocked()
            store.close()
    assert got.messages == []
    assert store.kept == (0, 0)


async def test_the_standalone_stream_is_replayed_and_left_to_the_sdk_to_follow() -> None:
    store = SessionEvents()
    priming = await store.store_event(GET_STREAM_KEY, None)
    await store.store_event(GET_STREAM_KEY, _note(1))
    got = Collected()
    assert await store.replay_events_after(priming, got) == GET_STREAM_KEY
    assert got.messages == [_note(1)]


async def test_an_event_id_that_is_not_ours_replays_nothing() -> None:
    store = SessionEvents()
    await store.store_event("1", _result(1))
    got = Collected()
    for foreign in ("", "abc", "12", "x-MQ", "1-%%%"):
        assert await store.replay_events_after(foreign, got) is None
    assert got.messages == []


async def test_the_sessions_of_a_process_keep_at_most_their_budget_together() -> None:
    """Each session keeps at most 4 MiB, and 10,000 sessions (the SDK's limit, an anonymous
    caller's alone) each filled by one call echoing its arguments kept 40 GB; now every
    store of a process shares one budget, and the session that stores past it drops its own
    oldest events. A session that ends gives its bytes back."""
    budget = EventBudget(limit=5000)
    first = SessionEvents(max_bytes=4000, budget=budget)
    second = SessionEvents(max_bytes=4000, budget=budget)
    for n in range(20):
        await first.store_event("1", _note(n, "x" * 200))
    assert 3500 < first.kept[1] <= 4000
    for n in range(20):
        await second.store_event("1", _note(n, "y" * 200))
        assert first.kept[1] + second.kept[1] == budget.kept <= 5000
    assert second.kept[1] <= 5000 - first.kept[1]
    first.close()
    assert budget.kept == second.kept[1]
    for n in range(20):
        await second.store_event("2", _note(n, "z" * 200))
    assert 3500 < second.kept[1] <= 4000


async def test_a_result_stored_while_the_events_before_it_are_resent_is_resent_too() -> None:
    """The client resumes while the call runs; its result is stored while the replay sends
    the progress before it (the send waits on the client's connection). The result follows,
    not "no longer kept": the replay took the stream's events before the result came, and
    saw the stream finished after."""
    store = SessionEvents()
    first = await store.store_event("7", None)
    await store.store_event("7", _note(1))

    class StoresTheResultWhileSending(Collected):
        async def __call__(self, event: EventMessage) -> None:
            await super().__call__(event)
            if len(self.events) == 1:
                await store.store_event("7", _result(7))

    sent = StoresTheResultWhileSending()
    with anyio.fail_after(5):
        await store.replay_events_after(first, sent)
    assert sent.messages == [_note(1), _result(7)]


def test_ids_a_client_chooses_that_int_cannot_read_are_kept_as_text() -> None:
    """A request id (a stream's name) and a Last-Event-ID's sequence number are a client's
    text: "\u00b2" is a digit to str.isdigit and not to int, "--1" passed lstrip("-"), and
    int() refuses 5,000 digits. Each raised ValueError: in the sweep that ends a dead replica's
    streams (ending the sweeping replica; tests/e2e/test_replicas_hostile.py) and in a resume
    (its response cut). Red-team pass of 2026-11-29 (6th)."""
    for text in ("--1", "\u00b2", "\u0661", "1_0", "05", "+5", " 5", "9" * 5000, "-", ""):
        assert request_id_of(text) == text
    assert request_id_of("7") == 7 and request_id_of("-7") == -7
    assert parse_event_id("\u00b2-MQ") is None and parse_event_id("1-MQ") == (1, "1")
