"""What shared state costs a call, how calls/s grow with replicas behind HAProxy on this
machine, and what Redis holds per session and per stored stream.

    .venv/bin/python benchmarks/replicas.py [--calls 300] [--reps 3] [--clients 12]

Needs redis-server and haproxy (Debian packages; .ci/run installs them). Every server is
`python -m mcp_toolbridge serve --http 127.0.0.1:0` in its own process, with the locked tools
and a policy with `[limits]` (so every call checks and counts its caller's rate limit in the
state store), called with the built-in `todo` and an empty list (it runs in the server and
loads and saves the caller's list in the state store: no spawn's noise).

1. **Added by shared state** (one replica, Redis vs memory, same run): two servers at once,
   `--state memory` (the baseline) and `--state redis://…`; latency at 1 in flight, paired:
   each round calls both once in a rotated order, and the added p50 is the median of the
   per-round differences. Two eras: 2026-07-28 (each call its own request: the limit's
   script, the list's load and save) and 2025-11-25 in a stateful session (the same, and each
   SSE event stored in the session's stream in Redis).
2. **Calls/s through the load balancer** with 1, 2 and 3 replicas (a fresh cluster each:
   Redis, the replicas, HAProxy as deploy/haproxy.py configures it): ``--clients`` clients on
   their own connections calling back to back (2026-07-28, raw HTTP: the lightest client),
   against one replica called directly in the same run. "others %" is the CPU used by
   processes outside this benchmark and its children while the cell ran.
3. **Redis memory**: used_memory before and after opening 200 2025-era sessions, each making
   one call; and the memory of one stored stream (a call's events: priming, result) and of a
   session's meta, from MEMORY USAGE.
4. **In this process** (no HTTP, no client: the server's own part, which a loaded machine's
   noise hides in 1.): each state operation a call makes, on the Redis State and on the
   in-memory one, interleaved, 2,000 each: the p50, and what they add up to for one call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp_toolbridge.state import Grant, MemoryState, RedisLink, RedisState, SharedStore, State
from tests.support.cluster import KEYS, cluster
from tests.support.httpserve import (
    answer_from,
    call,
    http_server,
    modern,
    modern_headers,
    open_session,
)
from tests.support.redis_server import RedisServer

POLICY = "[limits]\ncalls = 1000000\nwindow_s = 60\n"
ARGS: dict[str, Any] = {"todos": []}
WARM_UP = 20


def _cpu_of_others() -> Callable[[], float]:
    """A stopwatch of the CPU the rest of the machine used (share of all cores)."""

    def total() -> tuple[float, float]:
        with open("/proc/stat") as stat:
            fields = [float(x) for x in stat.readline().split()[1:]]
        busy = sum(fields) - fields[3] - fields[4]
        return busy, sum(fields)

    def mine() -> float:
        usage = os.times()
        return usage.user + usage.system + usage.children_user + usage.children_system

    busy0, all0 = total()
    mine0 = mine()
    ticks = os.sysconf("SC_CLK_TCK")

    def done() -> float:
        busy1, all1 = total()
        spent = (busy1 - busy0) / ticks - (mine() - mine0)
        return max(0.0, 100 * spent / max((all1 - all0) / ticks, 1e-9))

    return done


async def _modern_call(http: httpx2.AsyncClient, url: str) -> None:
    body = modern(call("todo", ARGS))
    response = await http.post(url, json=body, headers=modern_headers(body))
    assert response.status_code == 200, response.text[:200]
    assert not answer_from(response.content)["result"].get("isError")


@asynccontextmanager
async def _server(work: Path, state: str) -> AsyncIterator[str]:
    await anyio.Path(work).mkdir(parents=True, exist_ok=True)
    policy = work / "policy.toml"
    await anyio.Path(policy).write_text(POLICY)
    args = ["--sandbox", "off", "--workspace", str(work), "--policy", str(policy)]
    args += ["--state", state, "--replica", "bench"] if state != "memory" else []
    async with http_server(work, *args, env={"TOOLBRIDGE_STATE_KEYS": KEYS}) as server:
        yield server.url


async def added_latency(calls: int, redis: RedisServer, work: Path) -> dict[str, list[float]]:
    """Per era: [p50 memory, p50 redis, paired added p50] in ms."""
    found: dict[str, list[float]] = {}
    async with (
        _server(work / "memory", "memory") as memory,
        _server(work / "redis", redis.url()) as shared,
    ):
        # 2026-07-28: raw HTTP, one request per call
        async with httpx2.AsyncClient(timeout=30) as http:
            times: dict[str, list[float]] = {"memory": [], "redis": []}
            urls = {"memory": memory, "redis": shared}
            for _ in range(WARM_UP):
                for url in urls.values():
                    await _modern_call(http, url)
            for i in range(calls):
                order = ["memory", "redis"] if i % 2 == 0 else ["redis", "memory"]
                for name in order:
                    began = time.perf_counter()
                    await _modern_call(http, urls[name])
                    times[name].append((time.perf_counter() - began) * 1000)
            found["2026-07-28"] = _paired(times)
        # 2025-11-25: a stateful session each (SSE events stored: in memory / in Redis)
        async with httpx2.AsyncClient(timeout=30) as http:
            sessions = {
                "memory": await open_session(http, memory, stateless=False),
                "redis": await open_session(http, shared, stateless=False),
            }
            times = {"memory": [], "redis": []}
            for _ in range(WARM_UP):
                for session in sessions.values():
                    await session.ask(call("todo", ARGS))
            for i in range(calls):
                order = ["memory", "redis"] if i % 2 == 0 else ["redis", "memory"]
                for name in order:
                    began = time.perf_counter()
                    await sessions[name].ask(call("todo", ARGS))
                    times[name].append((time.perf_counter() - began) * 1000)
            found["2025-11-25 session"] = _paired(times)
    return found


def _paired(times: dict[str, list[float]]) -> list[float]:
    added = [r - m for m, r in zip(times["memory"], times["redis"], strict=True)]
    return [
        statistics.median(times["memory"]),
        statistics.median(times["redis"]),
        statistics.median(added),
    ]


async def _rate(urls: list[str], clients: int, calls: int) -> tuple[float, float]:
    """calls/s of ``clients`` clients calling back to back, spread over ``urls``; others %."""
    count = 0
    others = _cpu_of_others()

    async def client(index: int) -> None:
        nonlocal count
        url = urls[index % len(urls)]
        async with httpx2.AsyncClient(timeout=60) as http:
            for _ in range(calls):
                await _modern_call(http, url)
                count += 1

    began = time.perf_counter()
    async with anyio.create_task_group() as group:
        for i in range(clients):
            group.start_soon(client, i)
    elapsed = time.perf_counter() - began
    return count / elapsed, others()


async def throughput(clients: int, calls: int, work: Path) -> dict[int, tuple[float, float, float]]:
    """Per replica count: (calls/s through the LB, calls/s to one replica directly, others %)."""
    found: dict[int, tuple[float, float, float]] = {}
    for replicas in (1, 2, 3):
        folder = work / f"cluster-{replicas}"
        folder.mkdir()
        policy = folder / "policy.toml"
        policy.write_text(POLICY)
        names = tuple(f"r{i}" for i in range(1, replicas + 1))
        args = ["--sandbox", "off", "--workspace", str(folder), "--policy", str(policy)]
        async with cluster(folder, names, *args) as running:
            async with httpx2.AsyncClient(timeout=30) as http:  # warm every replica
                for _ in range(WARM_UP):
                    await _modern_call(http, running.url)
            through, others = await _rate([running.url], clients, calls)
            direct, _ = await _rate([running.direct("r1")], clients, calls)
        found[replicas] = (through, direct, others)
    return found


async def memory(redis: RedisServer, work: Path, sessions: int = 200) -> dict[str, float]:
    """Bytes in Redis per 2025-era session (with one call) and per stored stream."""
    async with _server(work / "memory-figures", redis.url()) as url:
        link = RedisLink(redis.url())
        try:
            await link.run("FLUSHDB")
            before = int((await link.run("INFO", "memory"))["used_memory"])
            ids = []
            async with httpx2.AsyncClient(timeout=30) as http:
                for _ in range(sessions):
                    session = await open_session(http, url, stateless=False)
                    await session.ask(call("todo", ARGS))
                    ids.append(session.id)
                after = int((await link.run("INFO", "memory"))["used_memory"])
                sid = ids[-1]
                keys = await link.run("KEYS", f"tb:{{s:{sid}}}:*")
                sizes = {k.decode(): int(await link.run("MEMORY", "USAGE", k) or 0) for k in keys}
        finally:
            await link.aclose()
    streams = [v for k, v in sizes.items() if ":ev:" in k]
    return {
        "per session (one call)": (after - before) / sessions,
        "one stored stream (a call's events)": statistics.median(streams) if streams else 0.0,
        "session keys (meta, seq, starts)": float(
            sum(v for k, v in sizes.items() if ":ev:" not in k)
        ),
    }


OPS = 2000
Op = Callable[[], Awaitable[Any]]


async def state_ops(redis: RedisServer) -> dict[str, tuple[float, float]]:
    """p50 µs of each state operation a call makes: (in memory, in Redis)."""
    link = RedisLink(redis.url())
    shared = SharedStore(link, prefix="bench:")
    stores: dict[str, State] = {"memory": MemoryState(), "redis": RedisState(link, prefix="bench:")}
    record = {"tool": "todo", "session": "s", "decision": ["allow", "rule", "default"]}
    owner = "caller:bench"
    found: dict[str, dict[str, list[float]]] = {}

    def ops_of(state: State) -> dict[str, Op]:
        return {
            "rate limit (hit)": lambda: state.hit(owner, "calls", 10**9, 60.0),
            "grants": lambda: state.grants(owner),
            "todo load": lambda: state.load(owner, "todo"),
            "todo save": lambda: state.save(owner, "todo", []),
        }

    def call_ops(i: int) -> dict[str, Op]:
        return {
            "lease write": lambda: shared.begin_call("bench", f"c{i}", record),
            "lease end": lambda: shared.end_call("bench", f"c{i}"),
            "event stored (2025 session)": lambda: shared.append(
                "bench", "1", b"{}", final=False, keep=True, max_events=1000, ttl_s=60
            ),
        }

    async def timed(what: str, store: str, op: Op) -> None:
        began = time.perf_counter()
        await op()
        found.setdefault(what, {}).setdefault(store, []).append((time.perf_counter() - began) * 1e6)

    try:
        for state in stores.values():
            await state.add_grants(owner, [Grant("read", None)])
        for i in range(OPS):
            for name, state in stores.items():
                for what, op in ops_of(state).items():
                    await timed(what, name, op)
            for what, op in call_ops(i).items():
                await timed(what, "redis", op)
        await link.run("FLUSHDB")
    finally:
        await link.aclose()
    return {
        what: (statistics.median(times.get("memory", [0.0])), statistics.median(times["redis"]))
        for what, times in found.items()
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--clients", type=int, default=12)
    args = parser.parse_args()
    added: dict[str, list[list[float]]] = {}
    rates: dict[int, list[tuple[float, float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for rep in range(args.reps):
            rep_dir = work / f"rep{rep}"
            rep_dir.mkdir()
            redis = RedisServer(rep_dir / "redis-data")
            (rep_dir / "redis-data").mkdir()
            await anyio.to_thread.run_sync(redis.start)
            try:
                for era, cell in (await added_latency(args.calls, redis, rep_dir)).items():
                    added.setdefault(era, []).append(cell)
                if rep == 0:
                    figures = await memory(redis, rep_dir)
                    ops = await state_ops(redis)
            finally:
                redis.stop()
            per_client = max(1, args.calls // args.clients)
            for count, cell3 in (await throughput(args.clients, per_client, rep_dir)).items():
                rates.setdefault(count, []).append(cell3)
    _report(added, rates, figures, args)
    _report_ops(ops)


def _span(values: list[float], fmt: str = "{:.2f}") -> str:
    low, mid, high = (fmt.format(v) for v in (min(values), statistics.median(values), max(values)))
    return f"{mid} [{low}-{high}]"


def _report(
    added: dict[str, list[list[float]]],
    rates: dict[int, list[tuple[float, float, float]]],
    figures: dict[str, float],
    args: argparse.Namespace,
) -> None:
    load = os.getloadavg()[0]
    print(f"# {args.reps} reps, {args.calls} paired calls, {args.clients} clients; load {load:.1f}")
    print("\n| era | p50 memory ms | p50 redis ms | added p50 (paired) ms |")
    print("|---|---|---|---|")
    for era, cells in added.items():
        memory_ms, redis_ms, added_ms = ([cell[i] for cell in cells] for i in range(3))
        print(f"| {era} | {_span(memory_ms)} | {_span(redis_ms)} | +{_span(added_ms, '{:.3f}')} |")
    print("\n| replicas | calls/s via HAProxy | calls/s to r1 | vs 1 replica | others % |")
    print("|---|---|---|---|---|")
    one = statistics.median(c[0] for c in rates[1])
    for count, rows in rates.items():
        through = [c[0] for c in rows]
        direct = _span([c[1] for c in rows], "{:.0f}")
        others = _span([c[2] for c in rows], "{:.0f}")
        ratio = statistics.median(through) / one
        print(f"| {count} | {_span(through, '{:.0f}')} | {direct} | {ratio:.2f} | {others} |")
    print("\n| Redis memory | bytes |")
    print("|---|---|")
    for what, value in figures.items():
        print(f"| {what} | {value:,.0f} |")


def _report_ops(ops: dict[str, tuple[float, float]]) -> None:
    print("\n| state operation (in this process) | p50 µs memory | p50 µs Redis |")
    print("|---|---|---|")
    for what, (in_memory, in_redis) in ops.items():
        shown = f"{in_memory:.1f}" if in_memory else "—"
        print(f"| {what} | {shown} | {in_redis:.0f} |")
    per_call = sum(r - m for what, (m, r) in ops.items() if "event" not in what)
    both = per_call + 2 * ops["event stored (2025 session)"][1]
    print(f"| **a 2026-07-28 todo call, added** | | **{per_call:.0f}** |")
    print(f"| **a 2025 session's todo call, added** (2 events stored) | | **{both:.0f}** |")


if __name__ == "__main__":
    anyio.run(main)
