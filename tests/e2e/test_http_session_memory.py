"""What a stateful HTTP session keeps of a request once it is answered: nothing
(docs/security.md, "The HTTP edge and the console", the row "Sessions that each sent one
large request").

An attacker opens many sessions of ``serve --http``, sends one large request in each (any
method: ``tools/list``, ``tools/call``, ``ping``), reads the answers and leaves the sessions
open and idle. Before, each session kept its last request until it ended (its idle timeout:
30 minutes): the SDK's receive loop held the last message it had read (the parsed request and
its Starlette ``Request`` with the cached body), and so did the server's own handle on the
connection (a ServerSession of its latest request, kept to send it ``list_changed``). The
server grew by about twice the body per session: about 4 MB per session here, measured
against the same sessions sending small requests (the control). Now the request goes once it
is answered, and the server does not grow with the sessions' bodies.

What the server loads once, on first use, is not what it keeps of requests, and goes in the
baseline: each test first makes its attack once (in a session it then ends), then calls that
wait for what the server loads in worker threads once it has answered its first tools/list
(cli/startup.py's ``warm_up``): a call whose result the secret scanner reads waits for its
engine (about 20 MB resident: its library, its Go heap and threads), a bash call for the shell
parser (about 3 MB). A baseline taken while they loaded counted them as growth: 16-25 MiB
against a bound of 12 MiB (21 MiB on CI). The attack is then made in ROUNDS sets of sessions,
one after the other, and the growth after each set is held to the bound of one set: what the
server keeps of answered requests does not grow with the requests."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.httpserve import (
    HttpServer,
    Session,
    answer_from,
    call,
    http_server,
    modern,
    modern_headers,
    open_session,
    request,
)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.procs import memory_kib

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

SESSIONS = 24
BODY = 2_000_000
"""Bytes of padding in each large request (the SDK caps a body at 4 MiB)."""
KEPT_PER_SESSION_KIB = 512
"""What a session may keep of its large request, in KiB: a quarter of the body (it kept
twice the body before: the body and the parsed request)."""
FREED_AT_ONCE = {"MALLOC_MMAP_THRESHOLD_": str(128 << 10)}
"""The server's environment: glibc gives back a freed block of more than 128 KiB at once
(its default, until a large block is freed: then it keeps such blocks in its heap, where
they may stay resident after they are freed). What the server holds shows in its memory,
not what its allocator keeps for later: the same on every run."""
ROUNDS = 2
"""Sets of sessions the attack is made in, one after the other, after the baseline: a session
that kept a part of its request under the bound of one set (300 KB of 2 MB: 7 MB in 24
sessions) fails after the second."""
SETTLE_S = 3.0
"""How long the server may take to free what its answered requests held (milliseconds on an
idle machine); the test looks at its memory until then, and fails only after."""


def _padded(message: dict[str, Any], pad: str) -> dict[str, Any]:
    """``message`` with ``pad`` in its params' ``_meta`` (valid for any method)."""
    params = dict(message.get("params") or {})
    params["_meta"] = {**params.get("_meta", {}), "pad": pad}
    return {**message, "params": params}


def _requests(n: int, pad: str) -> list[dict[str, Any]]:
    """One request of each session: tools/list, tools/call (an unknown tool: an error answer)
    and ping in turn."""
    made = [request("tools/list"), call("no_such_tool", {}), request("ping")]
    return [_padded(made[i % len(made)], pad) for i in range(n)]


def _waiting_calls() -> list[dict[str, Any]]:
    """Calls answered only once the server has loaded what its first tools/list started
    loading (see the module doc). The bash call runs nothing: the default policy asks before
    ``sudo``, and a client that cannot be asked is refused."""
    return [call("word_count", {"text": "one two"}), call("bash", {"command": "sudo true"})]


async def _warm_up(
    ask: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]],
    attack: list[dict[str, Any]],
    waiting: list[dict[str, Any]],
) -> None:
    """Send ``attack`` (every path the measured requests take), then the ``waiting`` calls."""
    for message in attack:
        await ask(message)
    for message in waiting:
        answer = await ask(message)
        assert "result" in answer, answer


async def _warm_up_in_a_session(
    http: httpx2.AsyncClient, url: str, attack: list[dict[str, Any]], waiting: list[dict[str, Any]]
) -> None:
    """:func:`_warm_up` in a session of its own, ended after (it keeps nothing then)."""
    session = await open_session(http, url, stateless=False)
    await _warm_up(session.ask, attack, waiting)
    assert await session.delete() == 200


async def _sessions(http: httpx2.AsyncClient, url: str, n: int) -> list[Session]:
    return [await open_session(http, url, stateless=False) for _ in range(n)]


def _rss_kib(server: HttpServer) -> int:
    return memory_kib(server.pid)["VmRSS"]


async def _settled_growth(server: HttpServer, base: int, bound: int) -> int:
    """The server's growth over ``base`` (KiB) once under ``bound``, or after SETTLE_S."""
    deadline = time.monotonic() + SETTLE_S
    grown = _rss_kib(server) - base
    while grown >= bound and time.monotonic() < deadline:
        await anyio.sleep(0.05)
        grown = _rss_kib(server) - base
    return grown


async def test_idle_sessions_keep_nothing_of_their_last_large_request(tmp_path: Path) -> None:
    async with (
        http_server(tmp_path, env=FREED_AT_ONCE) as server,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        attack = _requests(SESSIONS, "x" * BODY)
        await _warm_up_in_a_session(http, server.url, attack, _waiting_calls())
        rounds = [await _sessions(http, server.url, SESSIONS) for _ in range(ROUNDS)]
        # the control: the same sessions, the same requests, small
        for sessions in rounds:
            for session, message in zip(sessions, _requests(SESSIONS, "x"), strict=True):
                await session.ask(message)
        base = _rss_kib(server)
        bound = SESSIONS * KEPT_PER_SESSION_KIB
        for done, sessions in enumerate(rounds, 1):
            # the attack: one large request in each session, answered, then the sessions idle
            for session, message in zip(sessions, _requests(SESSIONS, "x" * BODY), strict=True):
                answer = await session.ask(message)
                assert "result" in answer or answer["error"]["code"] == -32602, answer
            grown = await _settled_growth(server, base, bound)
            per_session = grown / (done * SESSIONS)
            print(f"{done * SESSIONS} idle sessions after a large request each: {grown} KiB")
            assert grown < bound, (
                f"{done * SESSIONS} idle sessions that each sent one request of {BODY} bytes "
                f"keep {grown} KiB ({per_session:.0f} KiB each) after their answers"
            )
        for sessions in rounds:  # still served
            for session in sessions:
                assert "result" in await session.ask(request("ping"))


async def test_idle_sessions_keep_nothing_of_their_last_large_answer(tmp_path: Path) -> None:
    """A tool's result stayed with the transport's router (the last message a session sent)
    until the session sent another: a result of more than the event store keeps of a session
    (resume.py's MAX_BYTES, 4 MiB: it cannot be resumed) is now kept by nobody once sent."""
    tools = tmp_path / "tools"
    agentcli_manifest(tools, [echo_tool("echo")], {"echo": ECHO})
    sessions_n, text = SESSIONS // 2, "y" * (5 * BODY // 4)  # echoed twice: 5 MB answers
    async with (
        http_server(tmp_path, str(tools), env=FREED_AT_ONCE) as server,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        # it lists no tools: its calls wait for the engine they need, and nothing else loads
        large = [call("echo", {"text": text}) for _ in range(sessions_n)]
        await _warm_up_in_a_session(http, server.url, large, [])
        rounds = [await _sessions(http, server.url, sessions_n) for _ in range(ROUNDS)]
        for sessions in rounds:
            for session in sessions:
                await session.ask(call("echo", {"text": "y"}))
        base = _rss_kib(server)
        bound = sessions_n * KEPT_PER_SESSION_KIB
        for done, sessions in enumerate(rounds, 1):
            for session in sessions:
                answer = await session.ask(call("echo", {"text": text}))
                assert answer["result"]["structuredContent"] == {"echo": {"text": text}}
            grown = await _settled_growth(server, base, bound)
            per_session = grown / (done * sessions_n)
            print(f"{done * sessions_n} idle sessions after a large answer each: {grown} KiB")
            assert grown < bound, (
                f"{done * sessions_n} idle sessions that each got an answer of about "
                f"{2 * len(text)} bytes keep {grown} KiB ({per_session:.0f} KiB each)"
            )


async def test_requests_of_the_2026_era_keep_nothing_once_answered(tmp_path: Path) -> None:
    """The 2026-07-28 era has no session: each request stands alone (a regression guard)."""
    async with (
        http_server(tmp_path, env=FREED_AT_ONCE) as server,
        httpx2.AsyncClient(timeout=60) as http,
    ):

        async def ask(message: dict[str, Any]) -> dict[str, Any]:
            response = await http.post(server.url, json=message, headers=modern_headers(message))
            assert response.status_code == 200, response.text[:300]
            return answer_from(response.content)

        def large() -> list[dict[str, Any]]:
            return [_padded(modern(request("tools/list")), "x" * BODY) for _ in range(SESSIONS)]

        await _warm_up(ask, large(), [modern(waiting) for waiting in _waiting_calls()])
        base = _rss_kib(server)
        bound = SESSIONS * KEPT_PER_SESSION_KIB
        for done in range(1, ROUNDS + 1):
            for message in large():
                assert "tools" in (await ask(message))["result"]
            grown = await _settled_growth(server, base, bound)
            print(f"{done * SESSIONS} answered requests of the 2026 era: {grown} KiB")
            assert grown < bound, f"{done * SESSIONS} requests of {BODY} bytes left {grown} KiB"


async def test_a_listen_stream_cannot_hold_a_large_request_open(tmp_path: Path) -> None:
    """A 2026-07-28 ``subscriptions/listen`` stream holds its opening request for as long as
    it stays open (it is in flight, not answered), so ten of them opened with 2 MB each held
    some 6 MB each. A listen request names a few subscriptions: one over 64 KiB is refused
    (413, as a body over the SDK's 4 MiB is), and one of an ordinary size still opens."""
    async with (
        http_server(tmp_path, env=FREED_AT_ONCE) as server,
        httpx2.AsyncClient(timeout=60) as http,
    ):
        listen = {"notifications": {"toolsListChanged": True}}
        for pad, status in (("x" * BODY, 413), ("x" * (64 << 10), 413), ("x" * 1000, 200)):
            message = _padded(modern(request("subscriptions/listen", listen)), pad)
            headers = modern_headers(message)
            async with http.stream("POST", server.url, json=message, headers=headers) as opened:
                assert opened.status_code == status, len(pad)
        # Nor past the check with a routing header that names another method: the SDK
        # requires Mcp-Method to be the body's method.
        headers = {**modern_headers(message), "Mcp-Method": "ping"}
        message = _padded(modern(request("subscriptions/listen", listen)), "x" * BODY)
        refused = await http.post(server.url, json=message, headers=headers)
        assert refused.status_code == 400, refused.text[:300]
