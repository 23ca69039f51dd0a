"""Abusive clients over streamable HTTP: floods, oversized bodies, disconnects mid-call.

Each test runs a real ``serve --http 127.0.0.1:0`` process and talks raw HTTP to it. What
must hold (docs/reliability.md, "HTTP abuse"):

- the server stays up: every request it accepted is answered, an oversized body gets a clean
  413, and the next request is served;
- a request without a session (``--stateless``, or any 2026-era request) ends with its
  connection, so a client that disconnects mid-call cancels it and the call's whole process
  group is killed at once;
- in a stateful session a disconnect is not a cancellation (the MCP transport spec), but
  nothing leaks: the call's processes end at its deadline, or as soon as the session is
  deleted or expires.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.faulty_tools import Fault, faults, write_catalog
from tests.support.httpserve import (
    ACCEPT,
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
from tests.support.procs import alive_with, group_members, memory_kib, process_group, wait_gone

pytestmark = pytest.mark.e2e

MAX_BODY = 4 << 20
"""The SDK's cap on a request body."""
DEADLINE_S = 2.0
FAMILY_DEADLINE_S = 600
"""The family tool's own deadline: far past GONE_WITHIN_S, so a group gone within that was
ended by the disconnect, cancel, DELETE or expiry under test, never by its deadline."""
GONE_WITHIN_S = 60.0
"""How long a call's process group may take to be gone: a guard against it living on, with
room for a loaded 2-core machine (it takes milliseconds on an idle one, printed below)."""
FAMILY = (
    # Starts a child that would outlive it, named by the catalog's marker and the tool (the
    # test finds the call's process group through it: a sandboxed tool cannot know its pid
    # outside its PID namespace), and runs until killed.
    "/bin/sh -c 'sleep 900; :' \"@MARKER@-${0##*/}-child\" &\nsleep 900\n"
)
Era = str
"""How a client talks: "stateless" (a 2025-era client of a --stateless server),
"stateful" (a 2025-era session) or "2026" (a 2026-07-28 client: never a session)."""


def _catalog(tmp_path: Path) -> tuple[Path, str]:
    marker = f"abuse-http-{uuid.uuid4().hex}"
    family = FAMILY.replace("@MARKER@", marker)
    tools = (
        *faults(bomb_bytes=1 << 20),
        Fault("family", family, None, timeout_s=FAMILY_DEADLINE_S),
        Fault("deadline", family, None, timeout_s=DEADLINE_S),
    )
    return write_catalog(tmp_path / marker, tools), marker


@asynccontextmanager
async def _serving(
    tmp_path: Path, era: Era, *flags: str
) -> AsyncIterator[tuple[HttpServer, Path, str]]:
    folder, marker = _catalog(tmp_path)
    stateless = ("--stateless",) if era == "stateless" else ()
    async with http_server(tmp_path, *stateless, *flags, str(folder)) as server:
        yield server, folder, marker
    assert "Traceback" not in server.stderr(), server.stderr()


class Client:
    """Sends one era's requests: a session's headers, or the 2026 envelope and headers."""

    def __init__(self, http: httpx2.AsyncClient, url: str, era: Era) -> None:
        self.http = http
        self.url = url
        self.era = era
        self.session: Session | None = None

    async def open(self) -> Client:
        if self.era != "2026":
            self.session = await open_session(self.http, self.url, stateless=self.era != "stateful")
        return self

    def prepared(self, message: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        if self.session is None:
            return modern(message), modern_headers(message)
        return message, self.session.headers

    async def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        body, headers = self.prepared(message)
        response = await self.http.post(self.url, json=body, headers=headers)
        assert response.status_code == 200, (response.status_code, response.text[:300])
        answer = answer_from(response.content)
        assert answer.get("id") == message["id"], answer
        return answer

    async def echo(self, nonce: str) -> None:
        answer = await self.ask(call("ok", {"nonce": nonce}))
        assert answer["result"]["structuredContent"] == {"echo": {"nonce": nonce}}


async def _client(http: httpx2.AsyncClient, url: str, era: Era) -> Client:
    return await Client(http, url, era).open()


def _running_group(child: str) -> int | None:
    """The process group of the call whose tool started the process named ``child``, once
    the tool, that child and the tool's ``sleep`` all run (tools start in a new session; a
    sandboxed tool shares the group of its bwrap)."""
    for pid in alive_with(child):
        group = process_group(pid)
        if group is not None and len(group_members(group)) >= 3:
            return group
    return None


async def _group_of(marker: str, tool: str) -> int:
    """The process group of the running call of ``tool`` (of the catalog ``marker``)."""
    with anyio.fail_after(GONE_WITHIN_S):
        # Polled: nothing announces that a process started.
        while (pgid := _running_group(f"{marker}-{tool}-child")) is None:  # noqa: ASYNC110
            await anyio.sleep(0.01)
        return pgid


async def _gone(pgid: int, within_s: float) -> float:
    """Seconds until no process of group ``pgid`` is left; fail after ``within_s``."""
    start = time.monotonic()
    with anyio.fail_after(within_s):
        while group_members(pgid):  # noqa: ASYNC110 - polled /proc: no event for this
            await anyio.sleep(0.01)
    return time.monotonic() - start


async def _call_then_drop(client: Client, tool: str, marker: str) -> tuple[int, float]:
    """Start a call of ``tool`` on a connection of its own and drop that connection once the
    tool's process group runs; the group and when the call started."""
    body, headers = client.prepared(call(tool, {}))
    started = time.monotonic()
    async with httpx2.AsyncClient(timeout=60) as own:

        async def post() -> None:
            async with own.stream("POST", client.url, json=body, headers=headers) as response:
                assert response.status_code == 200
                async for _ in response.aiter_bytes():
                    pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(post)
            pgid = await _group_of(marker, tool)
            tg.cancel_scope.cancel()  # the response stream and its connection are closed
    return pgid, started


# --- disconnects ---------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["stateless", "2026"])
async def test_a_sessionless_call_whose_client_disconnects_is_cancelled_and_its_group_killed(
    tmp_path: Path, era: Era
) -> None:
    async with _serving(tmp_path, era) as (server, _, marker), httpx2.AsyncClient() as http:
        client = await _client(http, server.url, era)
        pgid, _started = await _call_then_drop(client, "family", marker)
        took = await _gone(pgid, GONE_WITHIN_S)
        await client.echo("after the disconnect")
        assert server.process.returncode is None
    print(f"{era}: process group gone {took * 1000:.0f} ms after the disconnect")


async def test_a_session_call_whose_client_disconnects_runs_to_its_deadline_and_no_further(
    tmp_path: Path,
) -> None:
    async with _serving(tmp_path, "stateful") as (server, _, marker), httpx2.AsyncClient() as http:
        client = await _client(http, server.url, "stateful")
        pgid, started = await _call_then_drop(client, "deadline", marker)
        await _gone(pgid, DEADLINE_S + GONE_WITHIN_S)
        lived = time.monotonic() - started
        assert lived >= DEADLINE_S, "a disconnect is not a cancellation in a session"
        await client.echo("the session still works")
    print(f"stateful: the dropped call's group lived {lived:.2f} s (deadline {DEADLINE_S} s)")


async def test_deleting_the_session_of_a_dropped_call_kills_its_group(tmp_path: Path) -> None:
    async with _serving(tmp_path, "stateful") as (server, _, marker), httpx2.AsyncClient() as http:
        client = await _client(http, server.url, "stateful")
        assert client.session is not None
        pgid, _started = await _call_then_drop(client, "family", marker)
        assert await client.session.delete() == 200
        took = await _gone(pgid, GONE_WITHIN_S)
        gone = await client.session.post(request("ping"))
        assert gone.status_code == 404
        await (await _client(http, server.url, "stateful")).echo("a new session")
    print(f"stateful: process group gone {took * 1000:.0f} ms after DELETE")


async def test_an_expired_session_of_a_dropped_call_kills_its_group(tmp_path: Path) -> None:
    idle_s = 1.0
    async with (
        _serving(tmp_path, "stateful", "--session-idle-timeout", str(idle_s)) as (
            server,
            _,
            marker,
        ),
        httpx2.AsyncClient() as http,
    ):
        client = await _client(http, server.url, "stateful")
        assert client.session is not None
        pgid, _started = await _call_then_drop(client, "family", marker)
        dropped = time.monotonic()
        await _gone(pgid, idle_s + GONE_WITHIN_S)
        took = time.monotonic() - dropped
        assert (await client.session.post(request("ping"))).status_code == 404
        await (await _client(http, server.url, "stateful")).echo("a new session")
    print(f"stateful: process group gone {took:.2f} s after the drop (idle timeout {idle_s} s)")


async def _cancel_mid_call(
    client: Client, tool: str, marker: str
) -> tuple[dict[str, Any], float, float]:
    """Call ``tool``, send ``notifications/cancelled`` for it once its group runs; the
    call's answer, how long the group lived after the cancel, and after the call started."""
    assert client.session is not None
    message = call(tool, {})
    answers: list[dict[str, Any]] = []

    async def post() -> None:
        answers.append(await client.ask(message))

    started = time.monotonic()
    async with anyio.create_task_group() as tg:
        tg.start_soon(post)
        pgid = await _group_of(marker, tool)
        cancel = {"requestId": message["id"], "reason": "the user pressed stop"}
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
        cancelled = time.monotonic()
        assert (await client.session.post(note)).status_code == 202
        await _gone(pgid, DEADLINE_S + GONE_WITHIN_S)
        ended = time.monotonic()
    return answers[0], ended - cancelled, ended - started


async def test_a_session_call_the_client_cancels_is_killed_and_answered_cancelled(
    tmp_path: Path,
) -> None:
    async with _serving(tmp_path, "stateful") as (server, _, marker), httpx2.AsyncClient() as http:
        client = await _client(http, server.url, "stateful")
        answer, took, _lived = await _cancel_mid_call(client, "family", marker)
        # Answered "cancelled" (at its deadline it would be exec.timeout), its group gone.
        assert answer["error"]["code"] == -32800  # the 2025 wire's "request cancelled"
        await client.echo("after the cancel")
    print(f"stateful: process group gone {took * 1000:.0f} ms after notifications/cancelled")


async def test_a_cancel_notification_cannot_reach_a_stateless_call_which_ends_at_its_deadline(
    tmp_path: Path,
) -> None:
    """Without a session the notification arrives on a connection of its own and cannot be
    matched to the call (request ids are only unique per client); a 2025-era client of a
    --stateless server cancels by closing the response stream instead."""
    async with _serving(tmp_path, "stateless") as (server, _, marker), httpx2.AsyncClient() as http:
        client = await _client(http, server.url, "stateless")
        answer, _took, lived = await _cancel_mid_call(client, "deadline", marker)
        assert lived >= DEADLINE_S
        assert answer["result"]["_meta"]["toolbridge/code"] == "exec.timeout"


# --- oversized bodies ----------------------------------------------------------------------


async def _chunks(total: int) -> AsyncIterator[bytes]:
    """A body sent chunked, without a Content-Length: the cap must hold while streaming."""
    chunk = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "' + b"x" * 65536
    sent = 0
    while sent < total:
        yield chunk
        sent += len(chunk)


@pytest.mark.parametrize("era", ["stateless", "stateful", "2026"])
async def test_an_oversized_body_gets_413_and_the_server_keeps_serving(
    tmp_path: Path, era: Era
) -> None:
    async with _serving(tmp_path, era) as (server, _, _), httpx2.AsyncClient(timeout=60) as http:
        client = await _client(http, server.url, era)
        before = memory_kib(server.pid)["VmRSS"]
        big, headers = client.prepared(call("ok", {"nonce": "x" * (MAX_BODY + 1)}))
        declared = await http.post(server.url, content=json.dumps(big), headers=headers)
        streamed = await http.post(server.url, content=_chunks(8 * MAX_BODY), headers=headers)
        for response in (declared, streamed):
            assert response.status_code == 413, response.text[:200]
            assert response.text == "Request body too large"
        nonce = "y" * (MAX_BODY - 4096)  # just under the cap: served whole, in and out
        await client.echo(nonce)
        await client.echo("small")
        grown = memory_kib(server.pid)["VmRSS"] - before
    assert grown < 64 << 10, f"the server grew {grown} KiB"


# --- floods --------------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["stateless", "stateful", "2026"])
async def test_a_flood_of_concurrent_requests_is_all_answered_each_with_its_own_result(
    tmp_path: Path, era: Era
) -> None:
    count = 300
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=100)
    async with (
        _serving(tmp_path, era, "--max-concurrency", "16") as (server, _, marker),
        httpx2.AsyncClient(timeout=60, limits=limits) as http,
    ):
        client = await _client(http, server.url, era)
        await client.echo("warm-up")
        before = memory_kib(server.pid)["VmRSS"]
        answers: dict[int, dict[str, Any]] = {}
        messages = []
        for i in range(count):
            if i % 3 == 0:
                messages.append(call("ok", {"nonce": f"n{i}"}))
            elif i % 3 == 1 and era != "2026":
                messages.append(request("ping"))
            elif i % 3 == 1:
                messages.append(call("fail", {}))  # 2026 has no ping
            else:
                messages.append(request("tools/list"))

        async def send(n: int) -> None:
            answers[n] = await client.ask(messages[n])

        start = time.monotonic()
        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for n in range(count):
                    tg.start_soon(send, n)
        wall = time.monotonic() - start
        assert sorted(answers) == list(range(count))
        for n, answer in answers.items():
            result = answer["result"]
            if n % 3 == 0:
                assert result["structuredContent"] == {"echo": {"nonce": f"n{n}"}}
            elif n % 3 == 1 and era != "2026":
                assert result == {}
            elif n % 3 == 1:
                assert result["isError"] is True
                assert result["_meta"]["toolbridge/code"] == "exec.failed"
            else:
                assert {t["name"] for t in result["tools"]} >= {"ok", "family"}
        await client.echo("after the flood")
        grown = memory_kib(server.pid)["VmRSS"] - before
        await wait_gone(marker, GONE_WITHIN_S, exclude=[server.pid])
    assert grown < 64 << 10, f"the server grew {grown} KiB"
    print(f"{era}: {count} requests in {wall:.2f} s, RSS +{grown / 1024:.1f} MiB")


async def test_hundreds_of_sessions_opened_and_abandoned_leave_the_server_serving(
    tmp_path: Path,
) -> None:
    count = 200
    async with (
        _serving(tmp_path, "stateful") as (server, _, _),
        httpx2.AsyncClient(timeout=60) as http,
    ):
        await (await _client(http, server.url, "stateful")).echo("warm-up")
        before = memory_kib(server.pid)["VmRSS"]
        opened: list[str] = []

        async def initialize() -> None:
            session = await open_session(http, server.url, stateless=False)
            assert session.id is not None
            opened.append(session.id)

        with anyio.fail_after(120):
            async with anyio.create_task_group() as tg:
                for _ in range(count):
                    tg.start_soon(initialize)
        assert len(set(opened)) == count
        grown = memory_kib(server.pid)["VmRSS"] - before
        await (await _client(http, server.url, "stateful")).echo("one more session")
        response = await http.post(
            server.url, json=request("ping"), headers={**ACCEPT, "Mcp-Session-Id": "unknown"}
        )
        assert response.status_code == 404
    assert grown < 64 << 10, f"the server grew {grown} KiB for {count} sessions"
    print(f"{count} abandoned sessions: RSS +{grown / 1024:.1f} MiB")
