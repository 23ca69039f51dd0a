"""Scale figures for loading and searching big catalogs (issue targets in brackets).

    .venv/bin/python benchmarks/search_scale.py [--sizes 10000 100000] [--dir /tmp/tb-scale]
        [--queries 400]

For each size N it generates a catalog with benchmarks/catalog_gen.py (45% agentcli, 45%
Runloop, 10% AgentPM; reused if the folder already exists) and, in a fresh child process per
size (so sizes do not share memory or caches; interpreter start-up is not timed), measures:

- load: ``load_paths`` (read, parse and validate every manifest) -> ToolSpecs
- catalog: ``Catalog.build`` (unique names, compiled argument validators)
- index: ``SearchIndex.build``
  [load + catalog + index <= 1.5 s at 10k, <= 15 s at 100k]
- query p50/p99 over a mixed query set (keywords, sentences, multi-part requests, exact
  names, select:) after 20 warm-up queries [p50 <= 2 ms and p99 <= 10 ms at 10k; p99 <= 50 ms
  at 100k]
- index memory: bytes the index keeps alive (tracemalloc, separate build), and the RSS growth
  of the process across the timed index build [<= 300 MB at 100k]
- tools/list in search mode [< 5 ms whatever the catalog size], after the above, in the same
  child: the app's own start-up (``load_catalog`` with the tool_search built-in, ``open_bridge``
  building the index, ``ToolbridgeServer(expose="search")`` publishing the wire form of every
  tool), then 50 ``list_tools()`` calls through an in-memory SDK ``Client``: the client round
  trip (client-side parse included), the server-side time (a timing middleware outermost,
  so the server's list cache is included), and the uncached server-side time (the list cache
  emptied before each call, so the handler runs and its result is serialized every time).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.catalog_gen import SYSTEMS, VERBS, generate  # noqa: E402
from mcp_toolbridge.catalog import index as search_module  # noqa: E402
from mcp_toolbridge.catalog.index import SearchIndex  # noqa: E402

try:
    from mcp_toolbridge.loaders import load_paths
except ImportError as exc:  # pragma: no cover - only while the loaders are missing
    raise SystemExit(f"mcp_toolbridge.loaders.load_paths is not importable ({exc})") from exc


def rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def make_queries(names: list[str], count: int, rng: random.Random) -> list[str]:
    systems, verbs = list(SYSTEMS), list(VERBS)
    out = []
    for i in range(count):
        sys_ = rng.choice(systems)
        noun = rng.choice(SYSTEMS[sys_])
        other = rng.choice(SYSTEMS[rng.choice(systems)])
        kind = i % 6
        if kind == 0:
            out.append(f"{rng.choice(verbs)} {noun}")
        elif kind == 1:
            out.append(f"how do I {rng.choice(verbs)} the {noun} in {sys_} for my team")
        elif kind == 2:
            out.append(
                f"Find the {noun} in {sys_} created last week, then {rng.choice(verbs)} "
                f"every {other}; also send a summary to the channel."
            )
        elif kind == 3:
            out.append(rng.choice(names))
        elif kind == 4:
            out.append(f"select:{rng.choice(names)},{rng.choice(names)}")
        else:
            out.append(f"what is the {noun} status and when was it last updated")
    return out


async def _list_times(folder: Path, calls: int) -> dict[str, float]:
    from mcp import Client

    from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
    from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer

    settings = Settings(paths=[folder], audit=False)
    start = time.perf_counter()
    loaded = load_catalog(settings, BUILTIN_SPECS)
    app_load_s = time.perf_counter() - start
    start = time.perf_counter()
    async with open_bridge(settings, loaded) as bridge:
        bridge_s = time.perf_counter() - start
        start = time.perf_counter()
        served = ToolbridgeServer(bridge, expose="search")
        server_s = time.perf_counter() - start
        server_side: list[float] = []

        async def timing(ctx: Any, call_next: Any) -> Any:
            if ctx.method != "tools/list":
                return await call_next(ctx)
            begun = time.perf_counter()
            try:
                return await call_next(ctx)
            finally:
                server_side.append(time.perf_counter() - begun)

        served.server.middleware.insert(0, timing)
        round_trip: list[float] = []
        listed = 0
        async with Client(served.server) as client:
            for uncached in (False, True):
                for _ in range(calls):
                    if uncached:
                        served._list_cache.clear()  # benchmark only: force the handler to run
                    begun = time.perf_counter()
                    listed = len((await client.list_tools()).tools)
                    round_trip.append(time.perf_counter() - begun)
    return {
        "app_load_s": app_load_s,
        "bridge_s": bridge_s,
        "server_s": server_s,
        "listed": listed,
        "list_client_ms": 1000 * statistics.median(round_trip[:calls]),
        "list_server_ms": 1000 * statistics.median(server_side[:calls]),
        "list_uncached_ms": 1000 * statistics.median(server_side[calls:]),
    }


def measure(folder: Path, n_queries: int) -> dict[str, float]:
    from mcp_toolbridge.catalog.catalog import Catalog

    gc.collect()
    start = time.perf_counter()
    report = load_paths([folder])
    load_s = time.perf_counter() - start
    if report.problems:
        raise SystemExit(f"catalog has problems, first: {report.problems[0]}")
    start = time.perf_counter()
    catalog, problems = Catalog.build(report.tools)
    catalog_s = time.perf_counter() - start
    specs = catalog.specs()
    gc.collect()
    rss_before = rss_mb()
    start = time.perf_counter()
    index = SearchIndex.build(specs)
    index_s = time.perf_counter() - start
    rss_growth = rss_mb() - rss_before

    queries = make_queries([s.name for s in specs], n_queries, random.Random(3))
    for q in queries[:20]:
        index.search(q, 10)
    # Each query twice, in turn: as shipped, then with sibling evidence off (the baseline in
    # the same process, so a busy machine slows both alike).
    times, plain = [], []
    weight = search_module.SIBLING_WEIGHT
    for q in queries:
        start = time.perf_counter()
        index.search(q, 10)
        times.append(time.perf_counter() - start)
        search_module.SIBLING_WEIGHT = 0.0
        start = time.perf_counter()
        index.search(q, 10)
        plain.append(time.perf_counter() - start)
        search_module.SIBLING_WEIGHT = weight
    times.sort()
    plain.sort()

    del index
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = SearchIndex.build(specs)
    held, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(kept) == len(specs)
    tools = len(specs)
    del kept, catalog, specs, report
    gc.collect()
    listing = anyio.run(_list_times, folder, 50)
    return {
        **listing,
        "tools": tools,
        "problems": len(problems),
        "load_s": load_s,
        "catalog_s": catalog_s,
        "index_s": index_s,
        "total_s": load_s + catalog_s + index_s,
        "p50_ms": 1000 * statistics.median(times),
        "p99_ms": 1000 * times[int(0.99 * (len(times) - 1))],
        "max_ms": 1000 * times[-1],
        "plain_p50_ms": 1000 * statistics.median(plain),
        "plain_p99_ms": 1000 * plain[int(0.99 * (len(plain) - 1))],
        "index_mb": (held - base) / 2**20,
        "build_peak_mb": (peak - base) / 2**20,
        "rss_growth_mb": rss_growth,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tb-scale"))
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.queries)))
        return
    print(
        "tools | load s | catalog s | index s | total s | query p50 ms | p99 ms | max ms "
        "| index MB (tracemalloc) | build peak MB | RSS growth MB"
    )
    listing = []
    for n in args.sizes:
        folder = args.dir / f"catalog-{n}"
        if not folder.exists():
            counts = generate(n, folder)
            print(f"# generated {folder}: {counts}", file=sys.stderr)
        child = [sys.executable, __file__, "--child", str(folder), "--queries", str(args.queries)]
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        m = json.loads(out.strip().splitlines()[-1])
        listing.append(m)
        print(
            f"{m['tools']:,} | {m['load_s']:.2f} | {m['catalog_s']:.2f} | {m['index_s']:.2f} | "
            f"{m['total_s']:.2f} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['max_ms']:.1f} | "
            f"{m['index_mb']:.0f} | {m['build_peak_mb']:.0f} | {m['rss_growth_mb']:.0f}"
        )
    print(
        "\ntools | query p50 ms | p99 ms | without sibling evidence: p50 ms | p99 ms "
        "| ratio p50 | ratio p99"
    )
    for m in listing:
        print(
            f"{m['tools']:,} | {m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['plain_p50_ms']:.2f} "
            f"| {m['plain_p99_ms']:.2f} | {m['p50_ms'] / m['plain_p50_ms']:.2f} "
            f"| {m['p99_ms'] / m['plain_p99_ms']:.2f}"
        )
    print(
        "\ntools | app load_catalog s | open_bridge s | ToolbridgeServer s | tools listed "
        "| list p50 ms client | server-side | server-side uncached"
    )
    for m in listing:
        print(
            f"{m['tools']:,} | {m['app_load_s']:.2f} | {m['bridge_s']:.2f} | {m['server_s']:.2f} "
            f"| {m['listed']} | {m['list_client_ms']:.2f} | {m['list_server_ms']:.3f} "
            f"| {m['list_uncached_ms']:.3f}"
        )


if __name__ == "__main__":
    main()
