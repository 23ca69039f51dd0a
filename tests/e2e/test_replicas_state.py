"""What belongs to a person, across three replicas behind HAProxy with a real Redis and a real
OpenID provider: two agents (identified by their access tokens) never see each other's
"always" answers, whichever replica serves them, nor each other's truncated outputs (kept in
Redis with their owner and TTL); a per-caller rate limit and a tool budget hold exactly under
calls spread over the three replicas at once; a Redis restarted mid-load makes limited calls
fail closed (and ``/readyz`` unready) while it is away, and nothing is counted twice when it
is back; a replica killed takes nothing of a person with it (their "always" answers, budget
and to-do list are there on another)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge.bridge import ALLOW_ALWAYS
from mcp_toolbridge.state import RedisLink
from tests.support.cluster import Cluster, cluster
from tests.support.httpserve import answer_from, call, modern, modern_headers, request
from tests.support.manifests import NOT_DESTRUCTIVE, agentcli_manifest, echo_tool
from tests.support.oauth import AGENT, AGENT_SECRET, CLIENTS, PEOPLE, REPORTER, REPORTER_SECRET
from tests.support.oidc import Provider, oidc_provider, oidc_skip_reason

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(oidc_skip_reason() is not None, reason=oidc_skip_reason() or ""),
]

CALLS_PER_WINDOW = 60
ELICITING: dict[str, Any] = {"elicitation": {"form": {}}}
BUDGET_TOKENS = 5
LOAD_PACE_S = 0.1
POLICY = f"""
[limits]
calls = {CALLS_PER_WINDOW}
window_s = 3600

[[rules]]
permission = "bash"
pattern = {{ prefix = "seq " }}
action = "allow"
"""
_ECHO = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
SCHEMA = {
    "type": "object",
    "properties": {"message": {"type": "string"}, "usage": {"type": "object"}},
    "required": ["message"],
}


def _catalog(folder: Path) -> list[str]:
    confirm = echo_tool("confirm_echo")
    confirm.pop("annotations")  # destructive by default: the policy asks first
    tools = [echo_tool(), confirm]
    agentcli = agentcli_manifest(folder / "agentcli", tools, {"echo": _ECHO})
    paid = {
        "id": "paid.call",
        "description": "Echo the payload; its result reports the usage it carries",
        "transport": {"kind": "exec", "command": "/bin/cat", "args": []},
        "input_schema": SCHEMA,
        "result_schema": SCHEMA,
        "annotations": NOT_DESTRUCTIVE,
        "budget": {"tokens": BUDGET_TOKENS},
    }
    runloop = folder / "runloop" / "tools.json"
    runloop.parent.mkdir(parents=True)
    runloop.write_text(json.dumps({"version": 1, "tools": [paid]}))
    return [str(agentcli.parent), str(runloop)]


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    async with oidc_provider(
        tmp_path_factory.mktemp("oidc"), accounts=PEOPLE, clients=CLIENTS, scopes=["tools"]
    ) as running:
        yield running


@pytest.fixture(scope="module")
async def service(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> AsyncIterator[Cluster]:
    work = tmp_path_factory.mktemp("replicas-state")
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    args = ["--sandbox", "off", "--workspace", str(work), "--policy", str(policy)]
    args += ["--auth-issuer", provider.issuer, "--auth-resource", "{lb}", *_catalog(work)]
    # No deadline around the yield: a scope held across it would cancel whichever later
    # test runs when it expires (the fixture runs in the tests' task). Each step of the
    # start has its own (a server's first line, Redis's, the load balancer's readiness).
    async with cluster(work, ("r1", "r2", "r3"), *args) as running:
        yield running


class Caller:
    """An agent's raw 2026-07-28 requests, with its access token."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.http: httpx2.AsyncClient | None = None
        """The client of the requests sent together (:meth:`together`); one each, else."""

    @asynccontextmanager
    async def together(self) -> AsyncIterator[None]:
        """One client for the calls sent in the body: a client each would build a TLS
        context each (tens of milliseconds of this process's loop apiece), and on a loaded
        machine a hundred of them held the loop long enough for the other calls' connects to
        time out. Its timeout guards against a hang only."""
        limits = httpx2.Limits(max_connections=None)
        async with httpx2.AsyncClient(timeout=120, limits=limits) as self.http:
            try:
                yield
            finally:
                self.http = None

    async def post(
        self, url: str, message: dict[str, Any], capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        body = modern(message)
        if capabilities is not None:
            body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = capabilities
        headers = {**modern_headers(body), "Authorization": f"Bearer {self.token}"}
        if "uri" in body["params"]:
            headers["Mcp-Name"] = body["params"]["uri"]
        if self.http is not None:
            response = await self.http.post(url, json=body, headers=headers)
        else:
            async with httpx2.AsyncClient(timeout=30) as http:
                response = await http.post(url, json=body, headers=headers)
        assert response.status_code in (200, 400), (response.status_code, response.text[:300])
        return answer_from(response.content)

    async def call(self, url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = await self.post(url, call(tool, arguments))
        result: dict[str, Any] = answer["result"]
        return result


async def _caller(provider: Provider, service: Cluster, client: str, secret: str) -> Caller:
    return Caller(await provider.client_credentials(client, secret, resource=service.url))


def _code(result: dict[str, Any]) -> str | None:
    code = (result.get("_meta") or {}).get("toolbridge/code")
    return code if isinstance(code, str) else None


async def test_two_agents_on_three_replicas_never_see_each_others_always_answers(
    service: Cluster, provider: Provider
) -> None:
    """The agent answers "Allow always" to a confirmation on r1: on r2 its calls of that tool
    run without asking (its answer is kept for it, in Redis); on r3 the other agent is still
    asked."""
    agent = await _caller(provider, service, AGENT, AGENT_SECRET)
    reporter = await _caller(provider, service, REPORTER, REPORTER_SECRET)
    arguments = {"text": "x"}
    asked = await agent.post(service.direct("r1"), call("confirm_echo", arguments), ELICITING)
    result = asked["result"]
    assert result["resultType"] == "input_required", result
    (key,) = result["inputRequests"]
    always = {"action": "accept", "content": {"decision": ALLOW_ALWAYS}}
    retry = call("confirm_echo", arguments)
    retry["params"].update(requestState=result["requestState"], inputResponses={key: always})
    done = await agent.post(service.direct("r1"), retry, ELICITING)
    assert done["result"]["structuredContent"] == {"echo": arguments}
    again = await agent.post(service.direct("r2"), call("confirm_echo", arguments), ELICITING)
    assert again["result"]["resultType"] == "complete", again
    assert again["result"]["structuredContent"] == {"echo": arguments}
    other = await reporter.post(service.direct("r3"), call("confirm_echo", arguments), ELICITING)
    assert other["result"]["resultType"] == "input_required"


async def test_a_truncated_results_link_reads_on_any_replica_for_its_owner_only(
    service: Cluster, provider: Provider
) -> None:
    """A sessionless call's whole output is kept in Redis with its owner and TTL: the agent
    reads it on another replica; the other agent, on a third, is told there is no such
    resource (as for one that never was); it expires within 30 minutes."""
    agent = await _caller(provider, service, AGENT, AGENT_SECRET)
    reporter = await _caller(provider, service, REPORTER, REPORTER_SECRET)
    result = await agent.call(service.direct("r1"), "bash", {"command": "seq 1 100000"})
    (link,) = [c for c in result["content"] if c["type"] == "resource_link"]
    read = {"uri": link["uri"]}
    mine = await agent.post(service.direct("r2"), request("resources/read", read))
    assert "\n99999\n100000\n" in mine["result"]["contents"][0]["text"]
    theirs = await reporter.post(service.direct("r3"), request("resources/read", read))
    assert theirs["error"]["message"] == "Resource not found"
    shared = RedisLink(service.redis.url())
    try:
        ttls = [await shared.run("TTL", key) for key in await shared.run("KEYS", "tb:out:*")]
    finally:
        await shared.aclose()
    assert ttls and all(0 < ttl <= 30 * 60 for ttl in ttls)


async def test_a_rate_limit_holds_exactly_over_three_replicas_at_once(
    service: Cluster, provider: Provider
) -> None:
    """Twice the limit, sent together through the load balancer (round robin over the
    replicas): exactly the limit runs; the rest are told which limit and when to retry."""
    agent = await _caller(provider, service, REPORTER, REPORTER_SECRET)
    counted = [
        line
        for line in service.all_audits()
        if line["clientId"] == REPORTER and line["decisionScope"] != "limits"
    ]
    results: list[dict[str, Any]] = []

    async def one(i: int) -> None:
        results.append(await agent.call(service.url, "echo", {"text": f"call {i}"}))

    async with agent.together(), anyio.create_task_group() as group:
        for i in range(2 * CALLS_PER_WINDOW):
            group.start_soon(one, i)
    ran = [r for r in results if not r.get("isError")]
    limited = [r for r in results if _code(r) == "rate.limited"]
    # On a loaded machine a replica may wait on Redis past its command deadline (2 s) and
    # refuse the call, closed (state.unavailable); such a call may have taken a slot (its
    # count reached Redis, the answer did not), never more than one. Without such refusals
    # exactly what was left of the limit runs; never more.
    unavailable = [r for r in results if _code(r) == "state.unavailable"]
    others = [r for r in results if r not in ran + limited + unavailable]
    assert not others, [r["content"][0]["text"] for r in others]
    left = CALLS_PER_WINDOW - len(counted)
    assert left - len(unavailable) <= len(ran) <= left, (len(ran), left, len(unavailable))
    text = limited[0]["content"][0]["text"]
    assert f"may make {CALLS_PER_WINDOW} calls per 3600 s" in text and "Retry in " in text
    replicas = {line["session"] for line in service.all_audits() if line["tool"] == "echo"}
    assert len(replicas) > 1  # the calls were spread


async def test_a_budget_holds_exactly_over_three_replicas_at_once(
    service: Cluster, provider: Provider
) -> None:
    agent = await _caller(provider, service, AGENT, AGENT_SECRET)
    spend = {"message": "m", "usage": {"tokens": 1}}
    results: list[dict[str, Any]] = []

    async def one() -> None:
        results.append(await agent.call(service.url, "paid_call", spend))

    async with agent.together(), anyio.create_task_group() as group:
        for _ in range(4 * BUDGET_TOKENS):
            group.start_soon(one)
    ran = [r for r in results if not r.get("isError")]
    assert len(ran) == BUDGET_TOKENS
    assert all(_code(r) in (None, "budget.exceeded") for r in results)
    after = await agent.call(service.url, "paid_call", spend)
    assert _code(after) == "budget.exceeded" and "is spent" in after["content"][0]["text"]


async def test_redis_restarted_mid_load_fails_closed_then_counts_each_call_once(
    service: Cluster, provider: Provider
) -> None:
    """Calls keep coming through the load balancer while Redis is shut down and started
    again (its append-only log replayed): while it is away a replica refuses limited calls
    with state.unavailable, /readyz turns 503 (the load balancer then answers 503 itself, a
    JSON-RPC error saying no replica can take requests); once it is back calls run again,
    and the window holds every call that ran, and no more than the calls a replica answered
    (see the end)."""
    caller = await _caller(provider, service, AGENT, AGENT_SECRET)
    await _forget_windows(service)  # the earlier tests' calls leave this one the whole limit
    before = await _counted(service)
    seen: list[str] = []
    stop = anyio.Event()

    async def load() -> None:
        """One call at a time, ten a second at most: the limit (60) is never what stops
        a call, however long the replicas take to see Redis again."""
        async with httpx2.AsyncClient(timeout=30) as http:
            while not stop.is_set():
                seen.append(await _outcome(http, caller, service.url))
                await anyio.sleep(LOAD_PACE_S)

    async with anyio.create_task_group() as group:
        group.start_soon(load)
        with anyio.fail_after(120):
            while seen.count("ok") < 3:  # noqa: ASYNC110
                await anyio.sleep(0.05)
            await anyio.to_thread.run_sync(lambda: service.redis.stop(kill=False))
            async with httpx2.AsyncClient(timeout=30) as http:
                direct = await _outcome(http, caller, service.direct("r2"))
            await _ready(service.direct("r2"), 503)
            await anyio.to_thread.run_sync(service.redis.start)
            await _ready(service.direct("r2"), 200)
            mark = len(seen)
            while seen[mark:].count("ok") < 3:  # noqa: ASYNC110
                await anyio.sleep(0.05)
        stop.set()
    assert direct == "state.unavailable"
    assert set(seen) <= {"ok", "state.unavailable", "503"}, set(seen)
    assert seen.count("ok") < CALLS_PER_WINDOW
    # A call is counted at its rate check, before its gate reads the caller's grants: one
    # that Redis left between the two is refused with state.unavailable, counted, not run
    # (as a denied call is counted). So the window holds each call that ran (none lost with
    # the restart) and at most the calls a replica answered (the 503s reached none).
    ran, refused = seen.count("ok"), seen.count("state.unavailable")
    assert ran <= await _counted(service) - before <= ran + refused


async def _outcome(http: httpx2.AsyncClient, caller: Caller, url: str) -> str:
    """One call's outcome: ok, its error code, or the load balancer's own 503."""
    body = modern(call("echo", {"text": "load"}))
    headers = {**modern_headers(body), "Authorization": f"Bearer {caller.token}"}
    response = await http.post(url, json=body, headers=headers)
    if response.status_code == 503:  # the load balancer's own, as a JSON-RPC error
        error = answer_from(response.content)["error"]
        assert error["message"].startswith("no replica of this service can take requests")
        return "503"
    result = answer_from(response.content)["result"]
    return "ok" if not result.get("isError") else str(_code(result))


async def _counted(service: Cluster) -> int:
    """The rate-limit window's entries of every caller (one per call counted)."""
    link = RedisLink(service.redis.url())
    try:
        total = 0
        for key in await link.run("KEYS", "tb:*:hits:calls"):
            total += int(await link.run("ZCARD", key))
        return total
    finally:
        await link.aclose()


async def _forget_windows(service: Cluster) -> None:
    link = RedisLink(service.redis.url())
    try:
        for key in await link.run("KEYS", "tb:*:hits:calls"):
            await link.run("DEL", key)
    finally:
        await link.aclose()


async def _ready(url: str, status: int) -> None:
    base = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient(timeout=5) as http:
        with anyio.fail_after(30):
            while (await http.get(f"{base}/readyz")).status_code != status:  # noqa: ASYNC110
                await anyio.sleep(0.1)  # a probe, as the load balancer's


async def test_what_belongs_to_a_person_outlives_the_replica_that_served_them(
    tmp_path_factory: pytest.TempPathFactory, provider: Provider
) -> None:
    """Two agents call r1: one answers "Allow always", spends 2 of a 5-token budget, and both
    keep a to-do list; r1 is killed (kill -9). On r2 the first agent's "always" holds (the
    other agent is still asked), the budget goes on from 2 (two more calls of 2 run while
    the sum is under 5, then none), and each agent's list is in Redis, apart."""
    work = tmp_path_factory.mktemp("replicas-person")
    policy = work / "policy.toml"
    policy.write_text(POLICY)
    args = ["--sandbox", "off", "--workspace", str(work), "--policy", str(policy)]
    args += ["--auth-issuer", provider.issuer, "--auth-resource", "{lb}", *_catalog(work)]
    arguments = {"text": "mine"}
    spend = {"message": "m", "usage": {"tokens": 2}}
    with anyio.fail_after(120):
        async with cluster(work, ("r1", "r2"), *args) as service:
            agent = await _caller(provider, service, AGENT, AGENT_SECRET)
            reporter = await _caller(provider, service, REPORTER, REPORTER_SECRET)
            r1, r2 = service.direct("r1"), service.direct("r2")
            asked = await agent.post(r1, call("confirm_echo", arguments), ELICITING)
            (key,) = asked["result"]["inputRequests"]
            always = {"action": "accept", "content": {"decision": ALLOW_ALWAYS}}
            retry = call("confirm_echo", arguments)
            retry["params"].update(
                requestState=asked["result"]["requestState"], inputResponses={key: always}
            )
            assert (await agent.post(r1, retry, ELICITING))["result"]["structuredContent"]
            assert not (await agent.call(r1, "paid_call", spend)).get("isError")
            for who, caller in (("agent", agent), ("reporter", reporter)):
                todo = {"todos": [{"content": f"{who} step", "status": "pending"}]}
                assert not (await caller.call(r1, "todo", todo)).get("isError")
            service.kill("r1")
            again = await agent.post(r2, call("confirm_echo", arguments), ELICITING)
            other = await reporter.post(r2, call("confirm_echo", arguments), ELICITING)
            after = [await agent.call(r2, "paid_call", spend) for _ in range(3)]
            lists = await _todo_lists(service)
    assert again["result"]["resultType"] == "complete", again
    assert other["result"]["resultType"] == "input_required"
    # 2 used before: 2 -> 4 -> 6 (a call runs while the sum is under 5), then refused; had
    # the kill lost the 2, the third call would have run too (4 -> 6)
    assert [_code(result) for result in after] == [None, None, "budget.exceeded"]
    assert sorted(lists) == [["agent step"], ["reporter step"]]


async def _todo_lists(service: Cluster) -> list[list[str]]:
    """Each person's stored to-do list, as Redis holds it (one hash of values per person)."""
    link = RedisLink(service.redis.url())
    try:
        found = []
        for key in await link.run("KEYS", "tb:{caller:*}:values"):
            stored = json.loads(await link.run("HGET", key, "todo"))
            found.append([item["content"] for item in stored])
        return found
    finally:
        await link.aclose()
