"""Scale figures for loading and searching big catalogs (issue targets in brackets).

    .venv/bin/python benchmarks/search_scale.py [--sizes 10000 100000] [--dir /tmp/tb-scale]
        [--queries 400] [--starts 3]

For each size N it generates a catalog with benchmarks/catalog_gen.py (45% agentcli, 45%
Runloop, 10% AgentPM; reused if the folder already exists) and, in a fresh child process per
size (so sizes do not share memory or caches; interpreter start-up is not timed), measures:

- load: ``load_paths`` (read, parse and validate every manifest) -> ToolSpecs
- catalog: ``Catalog.build`` (unique names, compiled argument validators)
- index: ``SearchIndex.build``
  [load + catalog + index <= 1.5 s at 10k, <= 15 s at 100k]
- semantic warm-up: ``SearchIndex.warm_up`` (the model read, then the catalog's vectors),
  which the first tool_search pays in a worker thread; the model is read in a separate step
  first and timed on its own
- query p50/p99 over a mixed query set (keywords, sentences, multi-part requests, exact
  names, select:) after 20 warm-up queries [p50 <= 2 ms and p99 <= 10 ms at 10k; p99 <= 50 ms
  at 100k]
- index memory: bytes the index keeps alive with its vectors (tracemalloc, separate build and
  warm-up; the model's table, read before, is not counted), and the RSS growth of the process
  across the timed index build and warm-up (the model included) [<= 300 MB at 100k]
- the same queries on an index without the semantic leg (``semantic=False``), alternated
  query by query with the shipped one, so a busy machine slows both alike
- tools/list in search mode [< 5 ms whatever the catalog size], after the above, in the same
  child: the app's own start-up (``load_catalog`` with the tool_search built-in, ``open_bridge``
  building the index, ``ToolbridgeServer(expose="search")`` publishing the wire form of every
  tool), then 50 ``list_tools()`` calls through an in-memory SDK ``Client``: the client round
  trip (client-side parse included), the server-side time (a timing middleware outermost,
  so the server's list cache is included), and the uncached server-side time (the list cache
  emptied before each call, so the handler runs and its result is serialized every time).

Then, per size, starts side by side (``--starts N`` of each, medians; 0 skips them): a fresh
child process that imports the app, loads the catalog as ``serve`` does (``load_catalog`` with
the locked tools) and gets its search index (``search_index``): cold (the start-up cache off:
everything loaded and built), first (an empty cache, filled by this start: what a first start
costs with the cache on) and warm (from a filled cache). The caches are private temporary
folders; a start's forked cache writers are waited for before the next start. "process s" is
the child's whole life, interpreter start-up included; the other columns are timed inside it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.catalog_gen import SYSTEMS, VERBS, generate  # noqa: E402
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
                        served._lists._pages.clear()  # benchmark only: force the handler to run
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
    from mcp_toolbridge.catalog.embedding import embedder

    start = time.perf_counter()
    embedder()
    model_s = time.perf_counter() - start
    start = time.perf_counter()
    index.warm_up()
    warm_s = time.perf_counter() - start
    rss_growth = rss_mb() - rss_before
    lexical = SearchIndex.build(specs, semantic=False)

    queries = make_queries([s.name for s in specs], n_queries, random.Random(3))
    for q in queries[:20]:
        index.search(q, 10)
        lexical.search(q, 10)
    # Each query twice, in turn: as shipped, then without the semantic leg (the baseline in
    # the same process, so a busy machine slows both alike).
    times, plain = [], []
    for q in queries:
        start = time.perf_counter()
        index.search(q, 10)
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        lexical.search(q, 10)
        plain.append(time.perf_counter() - start)
    times.sort()
    plain.sort()

    del index, lexical
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = SearchIndex.build(specs)
    kept.warm_up()
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
        "model_s": model_s,
        "warm_s": warm_s,
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


START = """
import json, sys, time
began = time.perf_counter()
from pathlib import Path
from mcp_toolbridge.runtime import Settings, load_catalog, search_index
imported = time.perf_counter()
settings = Settings(paths=[Path(sys.argv[1])], audit=False, cache=sys.argv[2] == "cache")
loaded = load_catalog(settings, locked=True)
done = time.perf_counter()
index = search_index(settings, loaded)
indexed = time.perf_counter()
print(json.dumps({
    "import_s": imported - began, "load_s": done - imported, "index_s": indexed - done,
    "tools": len(loaded.catalog), "reused": loaded.manifests.reused,
    "files": len(loaded.manifests.files()), "hit": len(index) > 0,
}))
"""


def _start(folder: Path, mode: str, env: dict[str, str]) -> dict[str, float]:
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", START, str(folder), mode],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - began
    return result


def _settled(cache: Path) -> None:
    """Wait for the cache writers a start forked (no temporary file for 2 s)."""
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < 2:
        if list(cache.glob("*.tmp")):
            quiet_since = time.monotonic()
        time.sleep(0.2)


def starts(folder: Path, reps: int) -> dict[str, dict[str, float]]:
    """Median starts over ``folder`` (see the module docstring): cold (no cache), first (an
    empty cache, which this start fills) and warm (a filled cache), interleaved so that all
    three see the machine alike; the forked cache writers of a first start are waited for
    before the next start."""
    runs: dict[str, list[dict[str, float]]] = {"cold": [], "first": [], "warm": []}
    with tempfile.TemporaryDirectory(prefix="tb-scale-cache-") as cache:
        warm_env = {**os.environ, "TOOLBRIDGE_CACHE_DIR": cache}
        _start(folder, "cache", warm_env)  # fill it
        _settled(Path(cache))
        for _ in range(reps):
            runs["cold"].append(_start(folder, "none", warm_env))
            with tempfile.TemporaryDirectory(prefix="tb-scale-first-") as empty:
                env = {**os.environ, "TOOLBRIDGE_CACHE_DIR": empty}
                runs["first"].append(_start(folder, "cache", env))
                _settled(Path(empty))
            runs["warm"].append(_start(folder, "cache", warm_env))
    out: dict[str, dict[str, float]] = {}
    for mode, found in runs.items():
        keys = ("process_s", "import_s", "load_s", "index_s")
        out[mode] = {k: statistics.median(r[k] for r in found) for k in keys}
        out[mode]["reused"] = found[-1]["reused"]
        out[mode]["files"] = found[-1]["files"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dir", type=Path, default=Path("/tmp/tb-scale"))
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--starts", type=int, default=3, help="cold and warm starts per size")
    parser.add_argument(
        "--only-starts", action="store_true", help="measure the cold and warm starts only"
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, args.queries)))
        return
    for n in args.sizes:
        folder = args.dir / f"catalog-{n}"
        if not folder.exists():
            counts = generate(n, folder)
            print(f"# generated {folder}: {counts}", file=sys.stderr)
    if not args.only_starts:
        scale(args)
    if args.starts > 0:
        print_starts(args)


def scale(args: argparse.Namespace) -> None:
    print(
        "tools | load s | catalog s | index s | total s | model s | vectors s | query p50 ms "
        "| p99 ms | max ms | index MB (tracemalloc) | build peak MB | RSS growth MB"
    )
    listing = []
    for n in args.sizes:
        folder = args.dir / f"catalog-{n}"
        child = [sys.executable, __file__, "--child", str(folder), "--queries", str(args.queries)]
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        m = json.loads(out.strip().splitlines()[-1])
        listing.append(m)
        print(
            f"{m['tools']:,} | {m['load_s']:.2f} | {m['catalog_s']:.2f} | {m['index_s']:.2f} | "
            f"{m['total_s']:.2f} | {m['model_s']:.2f} | {m['warm_s']:.2f} | "
            f"{m['p50_ms']:.2f} | {m['p99_ms']:.2f} | {m['max_ms']:.1f} | "
            f"{m['index_mb']:.0f} | {m['build_peak_mb']:.0f} | {m['rss_growth_mb']:.0f}"
        )
    print(
        "\ntools | query p50 ms | p99 ms | without the semantic leg: p50 ms | p99 ms "
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


def print_starts(args: argparse.Namespace) -> None:
    print(
        f"\nstart (median of {args.starts}) | process s | import s | load_catalog s "
        "| index s | vs cold | manifests from the cache"
    )
    for n in args.sizes:
        found = starts(args.dir / f"catalog-{n}", args.starts)
        for mode in ("cold", "first", "warm"):
            m = found[mode]
            label = {"cold": "cold (no cache)", "first": "first (fills it)", "warm": "warm"}
            print(
                f"{n:,} {label[mode]} | {m['process_s']:.2f} | {m['import_s']:.2f} "
                f"| {m['load_s']:.2f} | {m['index_s']:.2f} "
                f"| {m['process_s'] / found['cold']['process_s']:.2f} "
                f"| {m['reused']:.0f} of {m['files']:.0f}"
            )


if __name__ == "__main__":
    main()
