"""What checking an OAuth access token costs a call over HTTP, against the same server with no
credential and with the static bearer token, in the same run.

    .venv/bin/python benchmarks/auth.py [--calls 300] [--reps 3] [--clients 8] [--servers ...]

Needs node and oidc-provider (./scripts/install-oidc): a real OpenID provider on 127.0.0.1
(tests/support/oidc.py) issues the tokens by client credentials: JWTs its published key
signs, and opaque tokens only it can read.

Five servers, each `python -m mcp_toolbridge serve --http 127.0.0.1:0` in its own process
(the locked tools, the default policy, the audit log in a temporary file), called by the SDK's
`Client` over streamable HTTP in the 2026-07-28 era (every call its own HTTP request, so every
call is authenticated):

- none: no credential (loopback): the baseline;
- token: `--token`: a constant-time comparison of the header;
- oauth: `--auth-issuer`: the JWT checked on every request (signature with the issuer's key,
  cached since start-up; iss, aud, exp, nbf), and the caller made from it;
- opaque: an opaque token introspected at the issuer (RFC 7662) on every request
  (``[auth] introspection_cache_s = 0``): a round trip to the provider per request;
- opaque-cached: the same with the issuer's answer kept 30 s (the default), so only the
  first request of each 30 s asks it.

The tool is `todo` with an empty list: it runs in the server, so no spawn's noise hides the
difference. The servers run at once. Latency at 1 in flight is paired: each round calls
every server once, in an order rotated per round, so a neighbour's load falls on all three
alike; the added p50 is the median of the per-round differences against none. Then calls/s
with ``--clients`` clients (each its own connection) calling back to back, one server at a
time. Each repetition starts fresh servers (20 warm-up calls each, the throughput order
rotated); cells show the median over repetitions [min-max].

On a shared machine those figures carry the neighbours' noise, so two more are measured in
this process: the edge alone (the SDK's AuthenticationMiddleware and our bearer backend,
validator and scope check, around an endpoint that answers 200 at once, against the same
endpoint without them, interleaved: the CPU a request's token check costs the server), and
``TokenValidator.verify_token`` alone: a token's first check (signature and claims) and the
same token again (remembered); and for an opaque token, verify_token with the cache off (a
round trip to the provider) and on (the kept answer).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from starlette.applications import Starlette
from starlette.routing import Route

from mcp_toolbridge.server.auth import ResourceServer
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.tokens import TokenValidator
from tests.support.httpserve import http_server
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    CLIENTS,
    OPAQUE,
    OPAQUE_SECRET,
    RS,
    RS_SECRET,
)
from tests.support.oidc import Provider, oidc_provider, oidc_skip_reason

SERVERS = ("none", "token", "oauth", "opaque", "opaque-cached")
CACHE_S = {"opaque": 0, "opaque-cached": 30}
SECRET_ENV = {"TOOLBRIDGE_SECRET_TOOLBRIDGE_RS": RS_SECRET}
STATIC = "bench-static-token-0123456789abcdef"
WARM_UP = 20
ARGS: dict[str, list[str]] = {"todos": []}


@dataclass
class Cell:
    p50_ms: float
    p99_ms: float
    added_ms: float
    rate: float


@asynccontextmanager
async def client(url: str, bearer: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as c:
            yield c


async def latency(
    clients: dict[str, Client], calls: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per server, the time of each call; and per server, its per-round difference to none."""
    names = list(clients)
    for name in names:
        for _ in range(WARM_UP):
            await clients[name].call_tool("todo", ARGS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for n in range(calls):
        for name in names[n % len(names) :] + names[: n % len(names)]:
            started = time.perf_counter()
            result = await clients[name].call_tool("todo", ARGS)
            times[name].append(time.perf_counter() - started)
            assert not result.is_error, result
    added = {
        name: [t - b for t, b in zip(times[name], times["none"], strict=True)] for name in names
    }
    return times, added


async def throughput(url: str, bearer: str | None, clients: int, calls: int) -> float:
    per_client = max(1, calls // clients)

    async def run(ready: anyio.Event, go: anyio.Event, done: list[int]) -> None:
        async with client(url, bearer) as c:
            for _ in range(WARM_UP // 4):
                await c.call_tool("todo", ARGS)
            done.append(0)
            if len(done) == clients:
                ready.set()
            await go.wait()
            for _ in range(per_client):
                await c.call_tool("todo", ARGS)

    ready, go = anyio.Event(), anyio.Event()
    done: list[int] = []
    async with anyio.create_task_group() as group:
        for _ in range(clients):
            group.start_soon(run, ready, go, done)
        await ready.wait()
        started = time.perf_counter()
        go.set()
    return clients * per_client / (time.perf_counter() - started)


def summary(values: list[float], fmt: str = ".2f") -> str:
    mid = statistics.median(values)
    return f"{mid:{fmt}} [{min(values):{fmt}}-{max(values):{fmt}}]"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument(
        "--servers", default=",".join(SERVERS), help=f"a comma-separated subset of {SERVERS}"
    )
    args = parser.parse_args()
    servers = tuple(name for name in SERVERS if name in args.servers.split(","))
    if "none" not in servers:
        raise SystemExit("benchmarks/auth.py: --servers needs none (the baseline)")
    if (reason := oidc_skip_reason()) is not None:
        raise SystemExit(f"benchmarks/auth.py: {reason}")
    cells: dict[str, list[Cell]] = {name: [] for name in servers}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        async with oidc_provider(work, clients=CLIENTS, opaque_clients=[OPAQUE]) as provider:
            flags: dict[str, list[str]] = {
                "none": [],
                "token": ["--token", STATIC],
                "oauth": ["--auth-issuer", provider.issuer],
            }
            for name, cache_s in CACHE_S.items():
                flags[name] = ["--policy", str(introspecting(work, provider, cache_s))]
            for rep in range(args.reps):
                async with AsyncExitStack() as stack:
                    urls: dict[str, str] = {}
                    bearers: dict[str, str | None] = {"none": None, "token": STATIC}
                    for name in servers:
                        where = work / f"{name}-{rep}"
                        where.mkdir()
                        audit = where / "audit.ndjson"
                        serving = [*flags[name], "--workspace", str(where)]
                        env = SECRET_ENV if name in CACHE_S else None
                        srv = await stack.enter_async_context(
                            http_server(where, *serving, audit=audit, env=env)
                        )
                        urls[name] = srv.url
                    for name in servers:
                        if name == "oauth":
                            bearers[name] = await provider.client_credentials(
                                AGENT, AGENT_SECRET, resource=urls[name]
                            )
                        elif name in CACHE_S:
                            bearers[name] = await provider.client_credentials(
                                OPAQUE, OPAQUE_SECRET, resource=urls[name]
                            )
                    clients = {
                        name: await stack.enter_async_context(client(urls[name], bearers[name]))
                        for name in servers
                    }
                    times, added = await latency(clients, args.calls)
                    turn = rep % len(servers)
                    order = servers[turn:] + servers[:turn]
                    rates = {
                        name: await throughput(urls[name], bearers[name], args.clients, args.calls)
                        for name in order
                    }
                for name in servers:
                    ordered = sorted(times[name])
                    cell = Cell(
                        1000 * statistics.median(ordered),
                        1000 * ordered[int(len(ordered) * 0.99) - 1],
                        1000 * statistics.median(added[name]),
                        rates[name],
                    )
                    cells[name].append(cell)
                    print(f"rep {rep + 1} {name}: p50 {cell.p50_ms:.2f} ms (+{cell.added_ms:.3f}), "
                          f"{cell.rate:.0f} calls/s", file=sys.stderr)  # fmt: skip
            resource = "http://127.0.0.1:9/mcp"
            validator = TokenValidator(AuthOptions(issuer=provider.issuer), resource)
            await validator.start()
            tokens = [
                await provider.client_credentials(AGENT, AGENT_SECRET, resource=resource)
                for _ in range(200)
            ]
            first_us, again_us = await micro(validator, tokens)
            edge_us = await edge(provider.issuer, tokens[0], resource)
            opaque_us = await opaque_micro(provider, resource)
    print(f"\nOAuth token check over HTTP: SDK Client (2026-07-28) -> serve --http, tool todo, "
          f"{args.calls} calls at 1 in flight, {args.clients} clients; median of {args.reps} "
          "repetitions [min-max]\n")  # fmt: skip
    at = f"calls/s at {args.clients} clients"
    print(f"| server | p50 ms | p99 ms | {at} | added p50 (paired) | calls/s vs none |")
    print("|---|---|---|---|---|---|")
    base = cells["none"]
    for name in servers:
        rows = cells[name]
        extra = [r.added_ms for r in rows]
        ratio = [r.rate / b.rate for r, b in zip(rows, base, strict=True)]
        print(
            f"| {name} | {summary([r.p50_ms for r in rows])} | "
            f"{summary([r.p99_ms for r in rows])} | {summary([r.rate for r in rows], '.0f')} | "
            f"{'+' if statistics.median(extra) >= 0 else ''}{summary(extra, '.3f')} ms | "
            f"{summary(ratio)} |"
        )
    print(
        "\nThe edge alone, in this process: a request with a valid token costs "
        f"{edge_us[0]:.1f} µs "
        f"more than one without auth (p50 of paired differences; p50s {edge_us[1]:.1f} and "
        f"{edge_us[2]:.1f} µs)"
    )
    print(
        "TokenValidator.verify_token alone, in this process (keys cached): a token's first "
        f"check p50 {first_us:.1f} µs (signature and claims), the same token again p50 "
        f"{again_us:.1f} µs (remembered: the time only)"
    )
    print(
        "An opaque token, TokenValidator.verify_token alone, in this process: introspection "
        f"cache off (a round trip to the provider) p50 {opaque_us[0]:.1f} µs, cache on (the "
        f"kept answer) p50 {opaque_us[1]:.1f} µs"
    )


def introspecting(work: Path, provider: Provider, cache_s: float) -> Path:
    """A policy file whose [auth] table introspects opaque tokens, keeping answers cache_s."""
    policy = work / f"introspect-{cache_s:g}.toml"
    policy.write_text(
        f'[auth]\nissuer = "{provider.issuer}"\nintrospection_client_id = "{RS}"\n'
        f'introspection_secret = "toolbridge-rs"\nintrospection_cache_s = {cache_s}\n',
        encoding="utf-8",
    )
    return policy


async def opaque_micro(provider: Provider, resource: str, n: int = 300) -> tuple[float, float]:
    """p50 of verify_token for one opaque token with the introspection cache off, and on."""
    results = []
    for cache_s in (0.0, 30.0):
        options = AuthOptions(
            issuer=provider.issuer,
            introspection_client_id=RS,
            introspection_secret=RS_SECRET,
            introspection_cache_s=cache_s,
        )
        validator = TokenValidator(options, resource)
        await validator.start()
        token = await provider.client_credentials(OPAQUE, OPAQUE_SECRET, resource=resource)
        times = []
        for _ in range(n):
            started = time.perf_counter()
            assert await validator.verify_token(token) is not None
            times.append(time.perf_counter() - started)
        results.append(1e6 * statistics.median(times))
    return results[0], results[1]


async def micro(validator: TokenValidator, tokens: list[str]) -> tuple[float, float]:
    """p50 of the first check of each token, and of checking them again (20 rounds)."""
    first, later = [], []
    for token in tokens:
        started = time.perf_counter()
        assert await validator.verify_token(token) is not None
        first.append(time.perf_counter() - started)
    for _ in range(20):
        for token in tokens:
            started = time.perf_counter()
            assert await validator.verify_token(token) is not None
            later.append(time.perf_counter() - started)
    return 1e6 * statistics.median(first), 1e6 * statistics.median(later)


class Answer:
    """An ASGI endpoint that answers 200 at once (an object: Starlette routes it as ASGI)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def edge(issuer: str, token: str, resource: str, n: int = 5000) -> tuple[float, ...]:
    """The auth layers of serve --http around an endpoint that answers at once, against the
    same endpoint alone: (p50 of the paired differences, p50 with, p50 without), in µs."""

    answer = Answer()
    guard = ResourceServer(AuthOptions(issuer=issuer), resource)
    await guard.start()
    plain = Starlette(routes=[Route("/mcp", answer)])
    protected = Starlette(
        routes=[Route("/mcp", guard.protect(answer)), *guard.routes()],
        middleware=guard.middleware(),
    )
    headers = [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]
    scope = {"type": "http", "method": "POST", "path": "/mcp", "query_string": b"",
             "headers": headers, "http_version": "1.1", "scheme": "http",
             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "root_path": ""}  # fmt: skip
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    async def timed(app: Any) -> float:
        started = time.perf_counter()
        await app(dict(scope), receive, send)
        return time.perf_counter() - started

    with_auth, without, added = [], [], []
    for n_ in range(n):
        first, second = (protected, plain) if n_ % 2 else (plain, protected)
        a, b = await timed(first), await timed(second)
        mine, theirs = (a, b) if first is protected else (b, a)
        with_auth.append(mine)
        without.append(theirs)
        added.append(mine - theirs)
    assert set(statuses) == {200}, set(statuses)
    return tuple(1e6 * statistics.median(v) for v in (added, with_auth, without))


if __name__ == "__main__":
    anyio.run(main)
