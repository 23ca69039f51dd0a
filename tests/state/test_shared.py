"""What replicas share in Redis beyond a person's state (state/shared.py), against a real
Redis: a session's streams bounded and started anew, leases claimed by one survivor only."""

from __future__ import annotations

import anyio

from mcp_toolbridge.state import RedisLink, SharedStore
from tests.support.redis_server import RedisServer, unique_prefix


async def test_a_stream_keeps_its_last_events_and_marks_a_message_too_large_to_keep(
    link: RedisLink,
) -> None:
    shared = SharedStore(link, prefix=unique_prefix())
    for i in range(12):
        await shared.append(
            "s1", "7", f'{{"n":{i}}}'.encode(), final=False, keep=True, max_events=5, ttl_s=60
        )
    big = b"x" * 100  # stands for a message over the byte bound: sent, not kept
    seq = await shared.append("s1", "7", big, final=True, keep=False, max_events=5, ttl_s=60)
    kept = await shared.events_after("s1", "7", 0)
    assert len(kept) == 5  # bounded per stream: the oldest went first
    assert kept[-1].seq == seq and kept[-1].final and kept[-1].dropped
    assert [e.data for e in kept[:-1]] == [f'{{"n":{i}}}'.encode() for i in range(8, 12)]
    assert await shared.start_of("s1", "7") == 1


async def test_a_priming_event_after_a_finished_stream_starts_it_anew(link: RedisLink) -> None:
    shared = SharedStore(link, prefix=unique_prefix())
    await shared.append("s1", "1", None, final=False, keep=True, max_events=10, ttl_s=60)
    await shared.append("s1", "1", b"{}", final=True, keep=True, max_events=10, ttl_s=60)
    fresh = await shared.append("s1", "1", None, final=False, keep=True, max_events=10, ttl_s=60)
    assert await shared.start_of("s1", "1") == fresh  # the request id used again
    assert [e.seq for e in await shared.events_after("s1", "1", 0)] == [fresh]


async def test_a_dead_replicas_calls_and_sessions_go_to_one_claimer_only(
    redis_server: RedisServer,
) -> None:
    prefix = unique_prefix()
    links = [RedisLink(redis_server.url()) for _ in range(3)]
    stores = [SharedStore(link, prefix=prefix) for link in links]
    try:
        await stores[0].alive("dead", 0.2)
        await stores[0].begin_call("dead", "c1", {"tool": "t"})
        await stores[0].open_session("sess", "dead", "cred", 60)
        assert await stores[1].claim("dead") == ([], [])  # alive: nothing to claim
        with anyio.fail_after(10):
            while await stores[1].is_alive("dead"):  # noqa: ASYNC110
                await anyio.sleep(0.05)  # the lease's 0.2 s running out, on Redis's clock
        claims = []

        async def claim(store: SharedStore) -> None:
            claims.append(await store.claim("dead"))

        async with anyio.create_task_group() as group:
            for store in stores:
                group.start_soon(claim, store)
        won = [c for c in claims if c != ([], [])]
        assert won == [([{"tool": "t"}], ["sess"])]
        assert "dead" not in await stores[0].replicas()
    finally:
        for link in links:
            await link.aclose()
