"""What the replicas' consoles share in a real Redis (state/console_share.py): an answer is
taken once however many are given at once, never for a question whose wait ended or whose
replica's lease lapsed, and a wait that ends just after an answer was taken still gets it;
only live replicas' questions and connections are listed; a sign-in pass opens once; the
audit stream is read in order from where a reader left off."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from mcp_toolbridge.console.guard import Gatekeeper
from mcp_toolbridge.state import ConsoleShare, RedisLink, SharedStore
from tests.support.redis_server import unique_prefix

pytestmark = pytest.mark.anyio


def _stores(link: RedisLink) -> tuple[ConsoleShare, SharedStore]:
    prefix = unique_prefix()
    return ConsoleShare(link, prefix=prefix), SharedStore(link, prefix=prefix)


async def test_of_answers_given_at_once_one_is_taken_and_its_replica_hears_it(
    link: RedisLink,
) -> None:
    share, shared = _stores(link)
    await shared.alive("r1", 30)
    await share.post("r1", "r1.q", {"id": "r1.q", "replica": "r1"}, wait_s=60)
    taken: list[int] = []
    with anyio.fail_after(10):
        async with share.messages() as messages:
            async with anyio.create_task_group() as group:
                for choice in ("once", "always", "deny"):
                    answer = {"action": "accept", "content": {"decision": choice}, "by": "c:x"}
                    group.start_soon(_give, share, answer, taken)
            heard = await anext(messages)
    assert sorted(taken) == [0, 0, 1]
    assert heard["k"] == "answer" and heard["id"] == "r1.q"
    assert await share.waiting() == []  # answered: on no console any more
    assert await share.answer("r1", "r1.q", {"action": "decline"}) == 0
    late = await share.close("r1", "r1.q")  # the wait ends: the answer taken counts
    assert late is not None and late == heard["a"]


async def _give(share: ConsoleShare, answer: dict[str, Any], taken: list[int]) -> None:
    taken.append(await share.answer("r1", "r1.q", answer))


async def test_a_question_whose_wait_ended_or_whose_replica_died_cannot_be_answered(
    link: RedisLink,
) -> None:
    share, shared = _stores(link)
    await shared.alive("r1", 30)
    await shared.alive("r2", 0.05)  # a lease that lapses at once: r2 is dead
    for replica in ("r1", "r2"):
        await share.post(replica, f"{replica}.q", {"id": f"{replica}.q"}, wait_s=60)
    with anyio.fail_after(5):
        while await shared.is_alive("r2"):  # noqa: ASYNC110
            await anyio.sleep(0.02)
    assert [q["id"] for q in await share.waiting()] == ["r1.q"]  # r2's is not listed
    assert await share.answer("r2", "r2.q", {"action": "decline"}) == -1
    assert await share.close("r1", "r1.q") is None  # its wait ended, unanswered
    assert await share.answer("r1", "r1.q", {"action": "decline"}) == 0
    assert await share.waiting() == []


async def test_only_live_replicas_connections_are_listed(link: RedisLink) -> None:
    share, shared = _stores(link)
    await shared.alive("r1", 30)
    await share.put_connections("r1", [{"session": "a", "replica": "r1"}], ttl_s=30)
    await share.put_connections("r9", [{"session": "b", "replica": "r9"}], ttl_s=30)
    assert await share.connections() == [{"session": "a", "replica": "r1"}]
    assert await share.live() == ["r1"]


async def test_a_sign_in_pass_opens_once(link: RedisLink) -> None:
    share, _ = _stores(link)
    await share.put_pass("pass-1", "ops-admin", ttl_s=60)
    assert await share.take_pass("pass-1") == "ops-admin"
    assert await share.take_pass("pass-1") is None
    assert await share.take_pass("never-issued") is None


async def test_a_completed_browser_sign_in_is_remembered_apart_from_passes(
    link: RedisLink,
) -> None:
    share, _ = _stores(link)
    await share.put_pass("state-1", "spent", ttl_s=60, kind="login")
    assert await share.has_pass("state-1", kind="login")
    assert await share.has_pass("state-1", kind="login")  # it stays until it expires
    assert not await share.has_pass("state-2", kind="login")
    assert await share.take_pass("state-1") is None  # never a sign-in pass


async def test_the_audit_stream_reads_on_from_where_a_reader_left_off(link: RedisLink) -> None:
    share, _ = _stores(link)
    for n in range(3):
        await share.append_audit(f"r{n}", b'{"n": %d}' % n, {"owner": "o"})
    tail = await share.audit_tail()
    assert [e.replica for e in tail] == ["r0", "r1", "r2"] and tail[0].who == {"owner": "o"}
    assert await share.audit_after(tail[-1].id, 0.05) == []
    await share.append_audit("r3", b'{"n": 3}', {})
    [after] = await share.audit_after(tail[-1].id, 0.5)
    assert (after.replica, after.record) == ("r3", b'{"n": 3}')


async def test_a_pass_is_kept_longer_only_while_it_is_there(link: RedisLink) -> None:
    share, _ = _stores(link)
    await share.put_pass("pass-1", "ops-admin", ttl_s=60)
    assert await share.keep_pass("pass-1", 120)
    assert await share.take_pass("pass-1") == "ops-admin"
    assert not await share.keep_pass("pass-1", 120)  # taken: nothing to keep
    assert not await share.keep_pass("never-issued", 120)
    assert await share.take_pass("pass-1") is None  # keeping made nothing


async def test_a_printed_url_outlives_its_lease_only_while_its_replica_renews_it(
    link: RedisLink,
) -> None:
    """A replica killed without ending (SIGKILL) cannot take its printed URL back: the URL
    opens on the other replicas until its lease lapses (it was a week), while a running
    replica's URL waits for its person however long, renewed by its watch."""
    share, _ = _stores(link)
    lease = 0.3

    def replica() -> Gatekeeper:
        return Gatekeeper(port=1, user="me", passes=share, printed_lease_s=lease)

    running, killed, other = replica(), replica(), replica()
    kept, lost = await running.print_next(), await killed.print_next()
    assert kept is not None and lost is not None
    with anyio.fail_after(10):
        while await share.has_pass(_token(lost)):  # the lease runs on Redis's clock
            await running.watch_printed()
            await anyio.sleep(lease / 6)
    assert running.printed == _token(kept)  # renewed all along: not reprinted
    assert await other.admit(_token(kept)) == "me"
    assert await other.admit(_token(lost)) is None


def _token(url: str) -> str:
    return url.rsplit("token=", 1)[1]
