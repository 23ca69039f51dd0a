"""What checking an OAuth access token costs a call over HTTP, against the same server with no
credential and with the static bearer token, in the same run.

    .venv/bin/python benchmarks/auth.py [--calls 300] [--reps 3] [--clients 8]

Needs node and oidc-provider (./scripts/install-oidc): a real OpenID provider on 127.0.0.1
(tests/support/oidc.py) issues the token, a JWT its published key signs, by client
credentials.

Three servers, each `python -m mcp_toolbridge serve --http 127.0.0.1:0` in its own process
(the locked tools, the default policy, the audit log in a temporary file), called by the SDK's
`Client` over streamable HTTP in the 2026-07-28 era (every call its own HTTP request, so every
call is authenticated):

- none: no credential (loopback): the baseline;
- token: `--token`: a constant-time comparison of the header;
- oauth: `--auth-issuer`: the JWT checked on every request (signature with the issuer's key,
  cached since start-up; iss, aud, exp, nbf), and the caller made from it.

The tool is `todo` with an empty list: it runs in the server, so no spawn's noise hides the
difference. Per server: p50 and p99 of a call at 1 in flight (``--calls`` calls), and calls/s
with ``--clients`` clients (each its own connection) calling back to back. Every cell starts
with 20 warm-up calls; each repetition runs the servers in a rotated order; cells show the
median over repetitions [min-max]. Last, ``TokenValidator.verify_token`` alone, in this
process (the check without HTTP).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_toolbridge.server.tokens import AuthOptions, TokenValidator
from tests.support.httpserve import http_server
from tests.support.oauth import AGENT, AGENT_SECRET, CLIENTS
from tests.support.oidc import oidc_provider, oidc_skip_reason

SERVERS = ("none", "token", "oauth")
STATIC = "bench-static-token-0123456789abcdef"
WARM_UP = 20
ARGS: dict[str, list[str]] = {"todos": []}


@dataclass
class Cell:
    p50_ms: float
    p99_ms: float
    rate: float


@asynccontextmanager
async def client(url: str, bearer: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as c:
            yield c


async def latency(url: str, bearer: str | None, calls: int) -> tuple[float, float]:
    async with client(url, bearer) as c:
        for _ in range(WARM_UP):
            await c.call_tool("todo", ARGS)
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await c.call_tool("todo", ARGS)
            times.append(time.perf_counter() - started)
            assert not result.is_error, result
    times.sort()
    return 1000 * statistics.median(times), 1000 * times[int(len(times) * 0.99) - 1]


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
    args = parser.parse_args()
    if (reason := oidc_skip_reason()) is not None:
        raise SystemExit(f"benchmarks/auth.py: {reason}")
    cells: dict[str, list[Cell]] = {name: [] for name in SERVERS}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        async with oidc_provider(work, clients=CLIENTS) as provider:
            flags: dict[str, list[str]] = {
                "none": [],
                "token": ["--token", STATIC],
                "oauth": ["--auth-issuer", provider.issuer],
            }
            for rep in range(args.reps):
                order = SERVERS[rep % 3 :] + SERVERS[: rep % 3]
                for name in order:
                    where = work / f"{name}-{rep}"
                    where.mkdir()
                    serving = [*flags[name], "--workspace", str(where)]
                    async with http_server(where, *serving, audit=where / "audit.ndjson") as srv:
                        bearer: str | None = {"none": None, "token": STATIC}.get(name)
                        if name == "oauth":
                            bearer = await provider.client_credentials(
                                AGENT, AGENT_SECRET, resource=srv.url
                            )
                        p50, p99 = await latency(srv.url, bearer, args.calls)
                        rate = await throughput(srv.url, bearer, args.clients, args.calls)
                        cells[name].append(Cell(p50, p99, rate))
                        print(f"rep {rep + 1} {name}: p50 {p50:.2f} ms, {rate:.0f} calls/s",
                              file=sys.stderr)  # fmt: skip
            validator = TokenValidator(
                AuthOptions(issuer=provider.issuer), "http://127.0.0.1:9/mcp"
            )
            await validator.start()
            token = await provider.client_credentials(
                AGENT, AGENT_SECRET, resource="http://127.0.0.1:9/mcp"
            )
            verify_us = await micro(validator, token)
    print(f"\nOAuth token check over HTTP: SDK Client (2026-07-28) -> serve --http, tool todo, "
          f"{args.calls} calls at 1 in flight, {args.clients} clients; median of {args.reps} "
          "repetitions [min-max]\n")  # fmt: skip
    at = f"calls/s at {args.clients} clients"
    print(f"| server | p50 ms | p99 ms | {at} | p50 vs none | calls/s vs none |")
    print("|---|---|---|---|---|---|")
    base = cells["none"]
    for name in SERVERS:
        rows = cells[name]
        added = [r.p50_ms - b.p50_ms for r, b in zip(rows, base, strict=True)]
        ratio = [r.rate / b.rate for r, b in zip(rows, base, strict=True)]
        print(
            f"| {name} | {summary([r.p50_ms for r in rows])} | "
            f"{summary([r.p99_ms for r in rows])} | {summary([r.rate for r in rows], '.0f')} | "
            f"{'+' if statistics.median(added) >= 0 else ''}{summary(added)} ms | "
            f"{summary(ratio)} |"
        )
    print(
        f"\nTokenValidator.verify_token alone (keys cached, this process): p50 {verify_us:.1f} µs"
    )


async def micro(validator: TokenValidator, token: str, n: int = 2000) -> float:
    for _ in range(100):
        await validator.verify_token(token)
    times = []
    for _ in range(n):
        started = time.perf_counter()
        assert await validator.verify_token(token) is not None
        times.append(time.perf_counter() - started)
    return 1e6 * statistics.median(times)


if __name__ == "__main__":
    anyio.run(main)
