"""Three replicas of one service behind HAProxy, sharing a real Redis (docs/deploy.md): what a
client sees is one server, whichever replica answers.

2026-07-28: the same tool list in the same order from every replica; a confirmation asked by
one replica is answered on another (request state sealed with the shared keys); a truncated
result's link made on one replica is read on another. 2025-11-25: session ids name their
replica and the load balancer keeps a session there; a call's stream cut mid-call is resumed
through another replica and the result arrives once, the tool having run once. kill -9 of a
replica mid-call, in both eras and through the SDK's client: the client hears of it at once
(the 2026 client from the load balancer's 502, naming the replica; the 2025 client from the
stream it resumes on a survivor), a survivor audits the call as ``lost``, and a 2025 client's
session gets 404 and a new session works elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_toolbridge.server.resume import RETRY_MS
from mcp_toolbridge.state import RedisLink
from tests.support.cluster import Cluster, cluster, need_haproxy
from tests.support.httpserve import (
    answer_from,
    call,
    http_server,
    modern,
    modern_headers,
    open_session,
    request,
)
from tests.support.manifests import agentcli_manifest, echo_tool
from tests.support.rawstdio import REPO
from tests.support.redis_server import RedisServer, need_redis

pytestmark = pytest.mark.e2e

WAIT = """
import json, os, sys, time
args = json.load(sys.stdin)
with open(args["started"], "a") as out:
    out.write("started\\n")
deadline = time.monotonic() + 60
while not os.path.exists(args["gate"]) and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"done": args["gate"]}))
"""


def _catalog(folder: Path) -> Path:
    wait = echo_tool("wait_gate", bin="wait")
    wait["schema"] = {
        "type": "object",
        "properties": {"gate": {"type": "string"}, "started": {"type": "string"}},
        "required": ["gate", "started"],
    }
    wait["timeoutSec"] = 90
    confirm = echo_tool("confirm_echo")
    confirm.pop("annotations")  # destructive by default: the policy asks first
    agentcli_manifest(folder, [echo_tool(), wait, confirm], {"echo": _ECHO, "wait": WAIT})
    return folder


SEQ_ALLOWED = """
[[rules]]
permission = "bash"
pattern = { prefix = "seq " }
action = "allow"
"""
_ECHO = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
CLUSTER_TEST_S = 300
"""A guard against a hang of a test that starts a cluster of its own (Redis, replicas,
HAProxy; a start takes seconds on an idle machine and a minute on a loaded one)."""


@pytest.fixture(scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    work = tmp_path_factory.mktemp("replicas")
    folder = _catalog(work / "manifests")
    policy = work / "policy.toml"
    policy.write_text(SEQ_ALLOWED)
    args = ("--sandbox", "off", "--workspace", str(work), "--policy", str(policy), str(folder))
    # No deadline around the yield: a scope held across it would cancel whichever later
    # test runs when it expires (the fixture runs in the tests' task). Each step of the
    # start has its own (a server's first line, Redis's, the load balancer's readiness).
    async with cluster(work, ("r1", "r2", "r3"), *args) as running:
        yield running


ELICITING: dict[str, Any] = {"elicitation": {"form": {}}}


async def _post_modern(
    url: str, message: dict[str, Any], capabilities: dict[str, Any] | None = None
) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=30) as http:
        body = modern(message)
        if capabilities is not None:
            meta = body["params"]["_meta"]
            meta["io.modelcontextprotocol/clientCapabilities"] = capabilities
        headers = modern_headers(body)
        if "uri" in body["params"]:
            headers["Mcp-Name"] = body["params"]["uri"]
        response = await http.post(url, json=body, headers=headers)
    assert response.status_code in (200, 400), response.text[:300]  # 400: a JSON-RPC error
    return answer_from(response.content)


async def test_every_replica_lists_the_same_tools_in_the_same_order(service: Cluster) -> None:
    lists = []
    for url in [service.url, *(service.direct(n) for n in service.replicas), service.url]:
        answer = await _post_modern(url, request("tools/list"))
        lists.append([tool["name"] for tool in answer["result"]["tools"]])
    assert lists[0] and all(names == lists[0] for names in lists)
    assert "wait_gate" in lists[0] and "confirm_echo" in lists[0]


async def test_each_replica_answers_the_load_balancers_probes_without_a_credential(
    service: Cluster,
) -> None:
    async with httpx2.AsyncClient(timeout=5) as http:
        for name in service.replicas:
            base = service.direct(name).rsplit("/mcp", 1)[0]
            alive, ready = await http.get(f"{base}/healthz"), await http.get(f"{base}/readyz")
            assert alive.status_code == 200 and alive.json() == {"status": "ok"}
            assert ready.status_code == 200
            assert ready.json() == {"status": "ready", "replica": name}


async def test_a_confirmation_asked_on_one_replica_is_answered_on_another(
    service: Cluster,
) -> None:
    """The requestState r1 sealed opens on r2 (the shared keys): the retry runs the tool."""
    arguments = {"text": "hello"}
    asked = await _post_modern(service.direct("r1"), call("confirm_echo", arguments), ELICITING)
    result = asked["result"]
    assert result["resultType"] == "input_required", result
    (key,) = result["inputRequests"]
    accept = {"action": "accept", "content": {"decision": "Allow once"}}
    retry = call("confirm_echo", arguments)
    retry["params"].update(requestState=result["requestState"], inputResponses={key: accept})
    done = await _post_modern(service.direct("r2"), retry, ELICITING)
    assert done["result"].get("isError") is not True, done
    assert done["result"]["structuredContent"] == {"echo": arguments}
    forged = call("confirm_echo", arguments)
    forged["params"].update(requestState="v1.forged", inputResponses={key: accept})
    refused = await _post_modern(service.direct("r3"), forged, ELICITING)
    assert refused["error"]["code"] == -32602  # Invalid or expired requestState


async def test_request_state_keys_rotate_a_new_key_seals_and_the_old_one_still_opens(
    tmp_path: Path,
) -> None:
    """A rotation under way (docs/deploy.md): r-new has ``TOOLBRIDGE_STATE_KEYS=new,old``,
    r-old still ``old``. A confirmation r-old sealed (with old) is answered on r-new (old
    still opens there); one r-new sealed (with new) is refused by r-old, which lacks it."""
    need_redis()
    old, new = secrets.token_hex(32), secrets.token_hex(32)
    folder = _catalog(tmp_path / "manifests")
    redis = RedisServer(tmp_path / "redis")
    (tmp_path / "redis").mkdir()
    await anyio.to_thread.run_sync(redis.start)
    shared = ("--state", redis.url(), "--sandbox", "off", "--workspace", str(tmp_path))
    arguments = {"text": "rotate"}
    accept = {"action": "accept", "content": {"decision": "Allow once"}}

    async def asked_on(url: str) -> tuple[dict[str, Any], str]:
        asked = await _post_modern(url, call("confirm_echo", arguments), ELICITING)
        result = asked["result"]
        assert result["resultType"] == "input_required", result
        (key,) = result["inputRequests"]
        retry = call("confirm_echo", arguments)
        retry["params"].update(requestState=result["requestState"], inputResponses={key: accept})
        return retry, key

    try:
        with anyio.fail_after(90):
            async with (
                http_server(
                    tmp_path,
                    *shared,
                    "--replica",
                    "r-old",
                    str(folder),
                    env={"TOOLBRIDGE_STATE_KEYS": old},
                ) as r_old,
                http_server(
                    tmp_path,
                    *shared,
                    "--replica",
                    "r-new",
                    str(folder),
                    env={"TOOLBRIDGE_STATE_KEYS": f"{new},{old}"},
                ) as r_new,
            ):
                sealed_old, _ = await asked_on(r_old.url)
                done = await _post_modern(r_new.url, sealed_old, ELICITING)
                sealed_new, _ = await asked_on(r_new.url)
                refused = await _post_modern(r_old.url, sealed_new, ELICITING)
                mine = await _post_modern(r_new.url, sealed_new, ELICITING)
    finally:
        redis.stop()
    assert done["result"]["structuredContent"] == {"echo": arguments}
    assert refused["error"]["code"] == -32602  # Invalid or expired requestState
    assert mine["result"]["structuredContent"] == {"echo": arguments}


async def test_a_truncated_results_link_made_on_one_replica_reads_on_another(
    service: Cluster,
) -> None:
    answer = await _post_modern(service.direct("r1"), call("bash", {"command": "seq 1 100000"}))
    links = [c for c in answer["result"]["content"] if c["type"] == "resource_link"]
    assert len(links) == 1, answer["result"]["content"][:1]
    uri = links[0]["uri"]
    read = await _post_modern(service.direct("r2"), request("resources/read", {"uri": uri}))
    text = read["result"]["contents"][0]["text"]
    assert text.startswith("--- stdout ---\n1\n2\n") and "\n99999\n100000\n" in text
    missing = await _post_modern(
        service.direct("r3"), request("resources/read", {"uri": uri + "x"})
    )
    assert missing["error"]["message"] == "Resource not found"


async def test_a_2025_session_is_named_for_its_replica_and_kept_there(service: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        session = await open_session(http, service.url, stateless=False)
        assert session.id is not None
        home = session.id.split(".")[0]
        assert home in service.replicas
        for _ in range(6):  # round robin would spread these; the session id keeps them home
            answer = await session.ask(call("echo", {"text": "x"}))
            assert answer["result"]["structuredContent"] == {"echo": {"text": "x"}}
        assert await session.delete() == 200


async def _started(path: Path) -> None:
    """Until the tool wrote that it started (a bounded poll: a file is all it leaves)."""
    marker = anyio.Path(path)
    with anyio.fail_after(30):
        while not await marker.exists():  # noqa: ASYNC110
            await anyio.sleep(0.05)


async def _runner_of(service: Cluster) -> str:
    """The replica whose lease records a call now (the one running it)."""
    link = RedisLink(service.redis.url())
    try:
        with anyio.fail_after(10):
            while True:
                for name in service.replicas:
                    if await link.run("HLEN", f"tb:calls:{name}"):
                        return name
                await anyio.sleep(0.05)
    finally:
        await link.aclose()


async def test_a_dropped_stream_resumes_through_another_replica_and_the_tool_runs_once(
    service: Cluster, tmp_path: Path
) -> None:
    """A 2025-11-25 call on its session's replica; its response stream is cut; the client
    resumes with Last-Event-ID on another replica and gets the result there, once."""
    gate, started = tmp_path / "gate", tmp_path / "started"
    async with httpx2.AsyncClient(timeout=30) as http:
        session = await open_session(http, service.url, stateless=False)
        assert session.id is not None
        home = session.id.split(".")[0]
        other = next(n for n in service.replicas if n != home)
        message = call("wait_gate", {"gate": str(gate), "started": str(started)})
        last = None
        async with http.stream(
            "POST", service.direct(home), json=message, headers=session.headers
        ) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("id:"):
                    last = line[3:].strip()
                    break  # the priming event: then the connection is dropped
        assert last is not None
        await _started(started)
        gate.write_text("open")
        headers = {**session.headers, "Last-Event-ID": last}
        headers.pop("Content-Type")
        resumed = await http.get(service.direct(other), headers=headers)
        assert resumed.status_code == 200, resumed.text[:300]
        answers = [
            json.loads(line[5:])
            for line in resumed.text.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
        finals = [a for a in answers if a.get("id") == message["id"]]
        assert len(finals) == 1 and finals[0]["result"]["structuredContent"] == {"done": str(gate)}
    assert started.read_text().splitlines() == ["started"]  # the tool ran once


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
async def test_kill_9_mid_call_2026_the_client_hears_its_replica_stopped_and_a_survivor_audits_it(
    tmp_path_factory: pytest.TempPathFactory, streamed: bool
) -> None:
    """The SDK client (2026-07-28) through HAProxy, its call's replica killed mid-call. Before
    the answer started (a plain JSON answer, the usual case) the load balancer's 502 is a
    JSON-RPC error the SDK raises as is: it names the replica and says the call may have run.
    Once the answer is an SSE stream under way (the client listens to progress, which the
    server sent) nothing can be added to it: the SDK says the stream ended without a
    response. Either way at once, never a hang, and a survivor audits the call ``lost``."""
    work = tmp_path_factory.mktemp("kill-2026")
    folder = _catalog(work / "manifests")
    gate, started = work / "gate", work / "started"
    args = ("--sandbox", "off", "--workspace", str(work), str(folder))
    heard = anyio.Event()

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        heard.set()

    with anyio.fail_after(CLUSTER_TEST_S):
        async with (
            cluster(work, ("r1", "r2"), *args) as service,
            Client(service.url, mode="auto") as client,
        ):
            failure: list[MCPError] = []

            async def calling() -> None:
                with pytest.raises(MCPError) as raised:
                    await client.call_tool(
                        "wait_gate",
                        {"gate": str(gate), "started": str(started)},
                        progress_callback=progress if streamed else None,
                    )
                failure.append(raised.value)

            async with anyio.create_task_group() as group:
                group.start_soon(calling)
                await _started(started)  # the tool runs (the lease has noted its decision)
                if streamed:
                    await heard.wait()  # the answer is an SSE stream now
                runner = await _runner_of(service)
                service.kill(runner)
            survivor = next(n for n in service.replicas if n != runner)
            lines = await _audit_line(service, survivor, "wait_gate")
            after = await client.call_tool("echo", {"text": "again"})  # the survivor answers
    (error,) = failure
    if streamed:
        assert error.error.message == "SSE stream ended without a response"
    else:
        assert error.error.code == -32001
        message = error.error.message
        assert f"the server replica serving this request ({runner}) stopped" in message
        assert "may have done part of its work" in message and "outcome lost" in message
    assert lines["outcome"] == "lost" and lines["errorCode"] == "exec.cancelled"
    assert lines["decision"] == "allow"
    assert after.structured_content == {"echo": {"text": "again"}}


async def _resume(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> httpx2.Response:
    """GET with Last-Event-ID as an SSE client does: again after the retry interval the
    server suggested (1 s) while the load balancer has not yet seen the replica die (502)."""
    for _ in range(10):
        response = await http.get(url, headers=headers)
        if response.status_code not in (502, 503):
            assert response.status_code == 200, response.text[:300]
            return response
        await anyio.sleep(RETRY_MS / 1000)
    raise AssertionError(f"no replica took the resumed stream: {response.status_code}")


async def _audit_line(service: Cluster, name: str, tool: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        while True:
            found = [line for line in service.audit(name) if line["tool"] == tool]
            if found:
                return found[-1]
            await anyio.sleep(0.1)


async def test_kill_9_mid_call_2025_the_resumed_stream_says_the_replica_stopped(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    work = tmp_path_factory.mktemp("kill-2025")
    folder = _catalog(work / "manifests")
    gate, started = work / "gate", work / "started"
    args = ("--sandbox", "off", "--workspace", str(work), str(folder))
    with anyio.fail_after(CLUSTER_TEST_S):
        async with (
            cluster(work, ("r1", "r2"), *args) as service,
            httpx2.AsyncClient(timeout=60) as http,
        ):
            session = await open_session(http, service.url, stateless=False)
            assert session.id is not None
            home = session.id.split(".")[0]
            message = call("wait_gate", {"gate": str(gate), "started": str(started)})
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
            resumed = await _resume(http, service.url, headers)  # the LB: another replica
            answers = [
                json.loads(line[5:])
                for line in resumed.text.splitlines()
                if line.startswith("data:") and line[5:].strip()
            ]
            (final,) = [a for a in answers if a.get("id") == message["id"]]
            assert final["error"]["code"] == -32001
            assert f"replica running this call ({home}) stopped" in final["error"]["message"]
            gone = await session.post(call("echo", {"text": "x"}))
            assert gone.status_code == 404  # the session died with its replica
            again = await open_session(http, service.url, stateless=False)
            assert again.id is not None and not again.id.startswith(f"{home}.")
            answer = await again.ask(call("echo", {"text": "y"}))
            assert answer["result"]["structuredContent"] == {"echo": {"text": "y"}}
            survivor = next(n for n in service.replicas if n != home)
            lost = await _audit_line(service, survivor, "wait_gate")
    assert lost["outcome"] == "lost"


async def test_kill_9_mid_call_2025_the_sdk_client_resumes_and_hears_its_replica_stopped(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The SDK client (2025-11-25, a session) through HAProxy, its session's replica killed
    mid-call: the SDK resumes the call's stream by itself (Last-Event-ID), the load balancer
    takes the resume to a survivor, and the error the survivor stored ends it: the SDK raises
    it, naming the replica. A new session then works."""
    work = tmp_path_factory.mktemp("kill-2025-sdk")
    folder = _catalog(work / "manifests")
    gate, started = work / "gate", work / "started"
    args = ("--sandbox", "off", "--workspace", str(work), str(folder))
    with anyio.fail_after(120):
        async with cluster(work, ("r1", "r2"), *args) as service:
            async with Client(service.url, mode="legacy") as client:
                failure: list[MCPError] = []

                async def calling() -> None:
                    with pytest.raises(MCPError) as raised:
                        await client.call_tool(
                            "wait_gate", {"gate": str(gate), "started": str(started)}
                        )
                    failure.append(raised.value)

                async with anyio.create_task_group() as group:
                    group.start_soon(calling)
                    await _started(started)
                    runner = await _runner_of(service)
                    service.kill(runner)
            async with Client(service.url, mode="legacy") as again:
                answer = await again.call_tool("echo", {"text": "y"})
            survivor = next(n for n in service.replicas if n != runner)
            lost = await _audit_line(service, survivor, "wait_gate")
    (error,) = failure
    assert error.error.code == -32001
    assert f"replica running this call ({runner}) stopped" in error.error.message
    assert answer.structured_content == {"echo": {"text": "y"}}
    assert lost["outcome"] == "lost"


async def test_a_session_whose_replica_died_is_told_so_and_to_start_a_new_one(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The SDK client's session through HAProxy, its replica killed between calls: the next
    call reaches a survivor, whose 404 said only "Session not found"; it names the replica
    that held the session and says to start a new one. A new session then works."""
    work = tmp_path_factory.mktemp("dead-session")
    args = ("--sandbox", "off", "--workspace", str(work), str(_catalog(work / "manifests")))
    with anyio.fail_after(CLUSTER_TEST_S):
        async with cluster(work, ("r1", "r2"), *args) as service:
            async with Client(service.url, mode="legacy") as client:
                await client.call_tool("echo", {"text": "x"})
                (home,) = [n for n in service.replicas if service.audit(n)]
                service.kill(home)
                await service.replicas[home].process.wait()
                with pytest.raises(MCPError) as raised:
                    await client.call_tool("echo", {"text": "y"})
            async with Client(service.url, mode="legacy") as again:
                answer = await again.call_tool("echo", {"text": "z"})
    survivor = next(n for n in service.replicas if n != home)
    assert raised.value.error.message.startswith(
        f"Session not found: replica {survivor} does not hold this session. The replica that "
        f"opened it ({home}) stopped or restarted"
    )
    assert "Start a new session (initialize again)" in raised.value.error.message
    assert answer.structured_content == {"echo": {"text": "z"}}


async def test_a_reload_on_one_replica_reaches_listen_streams_on_another(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """r1 watches the manifests, r2 does not: a tool added to them reaches a 2026 client
    listening on r2 (the shared bus tells r2, which reads the files again), and r2 lists it."""
    work = tmp_path_factory.mktemp("reload")
    folder = work / "manifests"
    agentcli_manifest(folder, [echo_tool()], {"echo": _ECHO})
    args = ("--sandbox", "off", "--locked", "none", "--workspace", str(work), str(folder))
    with anyio.fail_after(CLUSTER_TEST_S):
        async with (
            cluster(work, ("r1", "r2"), *args, per_replica={"r1": ("--watch",)}) as service,
            Client(service.direct("r2"), mode="auto") as client,
        ):
            before = [t.name for t in (await client.list_tools()).tools]
            assert "echo" in before and "echo_two" not in before
            async with client.listen(tools_list_changed=True) as stream:
                agentcli_manifest(folder, [echo_tool(), echo_tool("echo_two")], {"echo": _ECHO})
                async for _event in stream:
                    break
            after = [t.name for t in (await client.list_tools()).tools]
            assert after == [*before, "echo_two"]
            result = await client.call_tool("echo_two", {"text": "new"})
            assert result.structured_content == {"echo": {"text": "new"}}


@pytest.mark.parametrize("finishes", [True, False])
async def test_sigterm_drains_a_replica_then_ends_what_outlives_the_deadline(
    tmp_path_factory: pytest.TempPathFactory, finishes: bool
) -> None:
    """SIGTERM to a replica running a call: it turns unready and refuses new work (503, which
    the load balancer sends to the other replica), the call goes on; finished within the
    drain deadline it is answered and audited ok, else it is ended at the deadline, answered
    with an error result (exec.cancelled) and audited as ended by the shutdown. Then the
    replica exits."""
    work = tmp_path_factory.mktemp("drain")
    folder = _catalog(work / "manifests")
    gate, started = work / "gate", work / "started"
    drain = "30" if finishes else "1"
    args = ("--sandbox", "off", "--workspace", str(work), "--drain-timeout", drain, str(folder))
    outcome: list[Any] = []
    with anyio.fail_after(CLUSTER_TEST_S):
        async with cluster(work, ("r1", "r2"), *args) as service:
            message = call("wait_gate", {"gate": str(gate), "started": str(started)})

            async def calling() -> None:
                try:
                    outcome.append(await _post_modern(service.direct("r1"), message))
                except (httpx2.HTTPError, AssertionError) as exc:
                    outcome.append(exc)

            async with anyio.create_task_group() as group:
                group.start_soon(calling)
                await _started(started)
                service.replicas["r1"].process.terminate()
                await _until_ready(service.direct("r1"), 503)
                await _alive_but_stopping(service.direct("r1"))
                async with httpx2.AsyncClient(timeout=30) as http:
                    body = modern(request("tools/list"))
                    refused = await http.post(
                        service.direct("r1"), json=body, headers=modern_headers(body)
                    )
                    assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
                answer = await _post_modern(service.url, request("tools/list"))
                assert answer["result"]["tools"]  # the load balancer took it to r2
                if finishes:
                    gate.write_text("open")
            with anyio.fail_after(30):
                await service.replicas["r1"].process.wait()
            lines = [line for line in service.audit("r1") if line["tool"] == "wait_gate"]
    if finishes:
        assert outcome[0]["result"]["structuredContent"] == {"done": str(gate)}
        assert [line["outcome"] for line in lines] == ["ok"]
    else:
        ended = outcome[0]["result"]  # answered at the deadline, not cut
        assert ended["isError"] and ended["_meta"]["toolbridge/code"] == "exec.cancelled"
        assert [line["outcome"] for line in lines] == ["shutdown"]


async def _alive_but_stopping(url: str) -> None:
    """A draining replica is alive (``/healthz`` 200: no orchestrator restarts it) and
    unready (``/readyz`` 503, saying why); neither needs a credential."""
    base = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient(timeout=5) as http:
        alive = await http.get(f"{base}/healthz")
        ready = await http.get(f"{base}/readyz")
    assert alive.status_code == 200 and alive.json() == {"status": "ok"}
    assert ready.status_code == 503
    body = ready.json()
    assert body["status"] == "unready" and body["replica"] == "r1"
    assert body["reasons"] == ["stopping: finishing the calls it runs, taking no new ones"]


async def _until_ready(url: str, status: int) -> None:
    base = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient(timeout=5) as http:
        with anyio.fail_after(30):
            while (await http.get(f"{base}/readyz")).status_code != status:  # noqa: ASYNC110
                await anyio.sleep(0.05)  # a probe, as the load balancer's


async def test_scripts_cluster_serves_n_replicas_behind_haproxy_and_stops_them_all(
    tmp_path: Path,
) -> None:
    """What a person runs to try it: ``scripts/cluster 2``; a client through its load balancer
    lists the tools; SIGTERM to the script ends every process it started."""
    need_haproxy()
    need_redis()
    base = 20000 + secrets.randbelow(120) * 100  # below the ephemeral ports (32768-)
    env = {**os.environ, "TOOLBRIDGE_CLUSTER_PORT": str(base), "TMPDIR": str(tmp_path)}
    argv = [str(REPO / "scripts" / "cluster"), "2", "--sandbox", "off", "--locked", "none"]
    process = await anyio.open_process(
        argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
    )
    try:
        assert process.stderr is not None
        stream = BufferedByteReceiveStream(process.stderr)
        said: list[bytes] = []
        with anyio.move_on_after(90), contextlib.suppress(anyio.IncompleteRead):
            while not said or b"connect clients to" not in said[-1]:
                said.append(await stream.receive_until(b"\n", 1 << 16))
        assert said and b"connect clients to" in said[-1], said
        async with Client(f"http://127.0.0.1:{base}/mcp", mode="auto") as client:
            names = [t.name for t in (await client.list_tools()).tools]
        assert {"get_time", "word_count", "hash_text", "slugify"} <= set(names)  # the examples
        process.terminate()
        with anyio.fail_after(30):
            await process.wait()
        group = os.getpgid(process.pid) if process.returncode is None else process.pid
        assert not _alive_in_group(group)
    finally:
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        await process.aclose()


def _alive_in_group(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
