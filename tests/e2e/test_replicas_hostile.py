"""What a replica reads from Redis that it did not write (red-team pass of 2026-11-29, 6th),
against real processes:

- values nobody but a holder of Redis's password can write (a stale version's, or an
  attacker's where Redis asks none): one byte ``\\xff`` among the replica names (every
  replica's sweep read it within 2 s and ended its process, at every start again), and
  ``[`` 200,000 times published on the events channel (every replica's listener ended its
  process at once);
- a name any client chooses: a JSON-RPC request id ``"--1"`` (a digit string to
  ``lstrip("-").isdigit()``, not to ``int()``) in flight when its replica is killed: the
  survivor that ended the dead replica's streams ended its own process.

Each replica now reads past what it cannot read, and stays ready.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_toolbridge.state import RedisLink
from tests.e2e.test_replicas import CLUSTER_TEST_S, _catalog, _resume, _started
from tests.support.cluster import KEYS, cluster
from tests.support.httpserve import HttpServer, call, http_server, open_session, request
from tests.support.redis_server import RedisServer, need_redis

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

DEEP = b"[" * 200_000
_SWEPT = re.compile(r"replica r9 stopped during a call of probe")


async def _line(server: HttpServer, pattern: re.Pattern[str]) -> None:
    with anyio.fail_after(30):
        while True:
            if any(pattern.search(x) for x in server.lines):
                return
            await anyio.sleep(0.05)  # a bounded wait for the sweep's line (every 2 s)


async def _ready(server: HttpServer) -> int:
    async with httpx2.AsyncClient(timeout=10) as http:
        return (await http.get(server.url.rsplit("/mcp", 1)[0] + "/readyz")).status_code


async def test_a_replica_reads_past_values_it_never_wrote_and_stays_ready(tmp_path: Path) -> None:
    need_redis()
    (tmp_path / "redis").mkdir()
    redis = RedisServer(tmp_path / "redis")
    await anyio.to_thread.run_sync(redis.start)
    args = ["--state", redis.url(), "--replica", "r1", "--console", "127.0.0.1:0"]
    args += ["--sandbox", "off", "--workspace", str(tmp_path), "--locked", "none"]
    link = RedisLink(redis.url())
    try:
        async with http_server(tmp_path, *args, env={"TOOLBRIDGE_STATE_KEYS": KEYS}) as server:
            assert await _ready(server) == 200
            await link.run("PUBLISH", "tb:events", DEEP)
            await link.run("PUBLISH", "tb:console", DEEP)
            await link.run("HSET", "tb:calls:r9", "a", DEEP, "b", json.dumps({"tool": "probe"}))
            await link.run("SADD", "tb:sessions:r9", b"\xff")
            await link.run("SADD", "tb:replicas", b"\xff", "r9")  # r9: no lease, so dead
            await _line(server, _SWEPT)  # a sweep read every name, after the publishes
            assert server.process.returncode is None, server.stderr()
            assert await _ready(server) == 200
            assert "Traceback" not in server.stderr()
    finally:
        await link.aclose()
        redis.stop()


async def test_a_request_id_int_cannot_read_ends_no_replica_when_its_own_is_killed(
    tmp_path: Path,
) -> None:
    folder = _catalog(tmp_path / "manifests")
    gate, started = tmp_path / "gate", tmp_path / "started"
    args = ("--sandbox", "off", "--workspace", str(tmp_path), str(folder))
    with anyio.fail_after(CLUSTER_TEST_S):
        async with (
            cluster(tmp_path, ("r1", "r2"), *args) as service,
            httpx2.AsyncClient(timeout=60) as http,
        ):
            session = await open_session(http, service.url, stateless=False)
            assert session.id is not None
            home = session.id.split(".")[0]
            arguments = {"gate": str(gate), "started": str(started)}
            message = request("tools/call", {"name": "wait_gate", "arguments": arguments}, id="--1")
            last = None
            async with http.stream("POST", service.url, json=message, headers=session.headers) as r:
                async for line in r.aiter_lines():
                    if line.startswith("id:"):
                        last = line[3:].strip()
                        break
            assert last is not None
            await _started(started)
            service.kill(home)
            headers = {**session.headers, "Last-Event-ID": last}
            headers.pop("Content-Type")
            resumed = await _resume(http, service.url, headers)  # the survivor
            answers = [
                json.loads(line[5:])
                for line in resumed.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            (final,) = [a for a in answers if a.get("id") == "--1"]
            assert f"replica running this call ({home}) stopped" in final["error"]["message"]
            survivor = service.replicas[next(n for n in service.replicas if n != home)]
            assert survivor.process.returncode is None, survivor.stderr()
            again = await open_session(http, service.url, stateless=False)
            answer = await again.ask(call("echo", {"text": "y"}))
            assert answer["result"]["structuredContent"] == {"echo": {"text": "y"}}
