"""What one request per client connection costs through HAProxy (docs/deploy.md: the shipped
configuration closes each client connection after its response, so that a request whose
replica dies gets HAProxy's 502 with its JSON-RPC error instead of a silent cut).

    .venv/bin/python benchmarks/lb_connections.py [--calls 300] [--reps 3] [--clients 12]

One cluster (a Redis, two replicas) and two HAProxy processes in front of the same replicas:
the shipped configuration (``option httpclose``) and the one ``--keep-alive`` writes (the
baseline). Each rep measures both, in a rotated order: the p50 of a 2026-07-28 call at one
in flight (each call of the built-in ``todo``, a client keeping its connection when the load
balancer lets it), and calls/s of ``--clients`` clients calling back to back.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.replicas import POLICY, WARM_UP, _modern_call, _rate
from tests.support.cluster import _wait_ready, cluster, haproxy_module, need_haproxy
from tests.support.redis_server import free_port

CLOSE = "    option httpclose"


@asynccontextmanager
async def _balancer(
    work: Path, name: str, replicas: list[tuple[str, str]], keep: bool
) -> AsyncIterator[str]:
    """An HAProxy over ``replicas``: the shipped configuration, or (``keep``) the one
    ``deploy/haproxy.py --keep-alive`` writes (without ``option httpclose``); yields its URL."""
    port = free_port()
    config = haproxy_module().render(f"127.0.0.1:{port}", replicas, keep_alive=keep)
    assert (CLOSE in config.splitlines()) is not keep
    path = work / f"{name}.cfg"
    path.write_text(config)
    process = await anyio.open_process(
        [need_haproxy(), "-db", "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        await _wait_ready(url)
        yield url
    finally:
        process.kill()
        await process.wait()
        await process.aclose()


async def _p50(url: str, calls: int) -> float:
    times = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(WARM_UP):
            await _modern_call(http, url)
        for _ in range(calls):
            began = time.perf_counter()
            await _modern_call(http, url)
            times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--clients", type=int, default=12)
    args = parser.parse_args()
    found: dict[str, dict[str, list[float]]] = {"keep-alive": {}, "httpclose": {}}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        policy = work / "policy.toml"
        policy.write_text(POLICY)
        serve = ["--sandbox", "off", "--workspace", str(work), "--policy", str(policy)]
        async with cluster(work, ("r1", "r2"), *serve) as running:
            listed = [(n, s.url.split("//")[1].split("/")[0]) for n, s in running.replicas.items()]
            async with (
                _balancer(work, "keep", listed, keep=True) as keep,
                _balancer(work, "close", listed, keep=False) as close,
            ):
                urls = {"keep-alive": keep, "httpclose": close}
                for rep in range(args.reps):
                    order = list(urls) if rep % 2 == 0 else list(reversed(urls))
                    for name in order:
                        cell = found[name]
                        cell.setdefault("p50", []).append(await _p50(urls[name], args.calls))
                        rate, others = await _rate([urls[name]], args.clients, args.calls // 3)
                        cell.setdefault("rate", []).append(rate)
                        cell.setdefault("others", []).append(others)
    base = found["keep-alive"]
    title = f"2026-07-28 `todo` calls through HAProxy, 2 replicas, {args.reps} reps"
    print(f"\n{title} (median [min-max])")
    head = ["client connections", "p50 ms, 1 in flight", f"calls/s, {args.clients} clients"]
    print("| " + " | ".join([*head, "vs keep-alive", "others %"]) + " |")
    print("|---|---|---|---|---|")
    for name, cell in found.items():
        ratio = statistics.median(cell["rate"]) / statistics.median(base["rate"])
        print(
            f"| {name} | {_cell(cell['p50'], 2)} | {_cell(cell['rate'], 0)} | {ratio:.2f} "
            f"| {_cell(cell['others'], 0)} |"
        )


def _cell(values: list[float], digits: int) -> str:
    return (
        f"{statistics.median(values):.{digits}f} "
        f"[{min(values):.{digits}f}-{max(values):.{digits}f}]"
    )


if __name__ == "__main__":
    anyio.run(main)
