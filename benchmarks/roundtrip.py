"""Round trip of a trivial exec tool through `mcp-toolbridge serve` over stdio, against a bare
spawn of the same tool measured in the same process.

    .venv/bin/python benchmarks/roundtrip.py [--calls 500] [--reps 3]

Prints p50/p99 per call and calls/s at 1, 8 and 32 in flight, for:
  - spawn/anyio: anyio.run_process of the tool (what an async server pays at minimum),
  - spawn/subprocess: subprocess.run in threads,
  - toolbridge: the SDK client calling the tool through `python -m mcp_toolbridge serve`,
and the p50 overhead of toolbridge over spawn/anyio, paired per repetition.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

PAYLOAD = {"text": "hello from the benchmark"}
CONCURRENCY = (1, 8, 32)


def make_catalog(folder: Path) -> Path:
    tool = folder / "tools" / "bin" / "echo_json"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexec cat\n", encoding="utf-8")
    tool.chmod(0o755)
    manifest = {
        "tools": [
            {
                "name": "echo_json",
                "description": "Echo the JSON arguments",
                "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "command": ["./tools/bin/echo_json"],
            }
        ]
    }
    (folder / "tools.json").write_text(json.dumps(manifest), encoding="utf-8")
    return tool


async def measure(
    call: Callable[[], Awaitable[None]], calls: int, inflight: int
) -> dict[str, float]:
    latencies: list[float] = []
    per_task = max(1, calls // inflight)

    async def worker() -> None:
        for _ in range(per_task):
            start = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - start) * 1000)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(inflight):
            tg.start_soon(worker)
    wall = time.perf_counter() - started
    latencies.sort()
    return {
        "p50": statistics.median(latencies),
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
        "rate": len(latencies) / wall,
    }


async def bench_spawn_anyio(tool: Path, calls: int, inflight: int) -> dict[str, float]:
    data = json.dumps(PAYLOAD).encode()

    async def call() -> None:
        await anyio.run_process([str(tool)], input=data)

    return await measure(call, calls, inflight)


async def bench_spawn_subprocess(tool: Path, calls: int, inflight: int) -> dict[str, float]:
    data = json.dumps(PAYLOAD).encode()

    def run() -> None:
        subprocess.run([str(tool)], input=data, capture_output=True, check=True)

    limiter = anyio.CapacityLimiter(inflight)

    async def call() -> None:
        await anyio.to_thread.run_sync(run, limiter=limiter)

    return await measure(call, calls, inflight)


async def bench_toolbridge(folder: Path, calls: int, inflight: int) -> dict[str, float]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "serve", str(folder), "--max-concurrency", "64"],
    )
    async with Client(params) as client:
        await client.list_tools()
        for _ in range(20):
            await client.call_tool("echo_json", PAYLOAD)

        async def call() -> None:
            result = await client.call_tool("echo_json", PAYLOAD)
            if result.is_error:
                raise RuntimeError(result.content)

        return await measure(call, calls, inflight)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    rows: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        tool = make_catalog(folder)
        for _rep in range(args.reps):
            for inflight in CONCURRENCY:
                benches = {
                    "spawn/anyio": bench_spawn_anyio(tool, args.calls, inflight),
                    "spawn/subprocess": bench_spawn_subprocess(tool, args.calls, inflight),
                    "toolbridge": bench_toolbridge(folder, args.calls, inflight),
                }
                for name, coro in benches.items():
                    rows.setdefault((name, inflight), []).append(await coro)

    print(f"calls per cell: {args.calls}, repetitions: {args.reps} (median of reps shown)")
    print(f"{'kind':<18} {'in flight':>9} {'p50 ms':>8} {'p99 ms':>8} {'calls/s':>8}")
    for (name, inflight), reps in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        p50 = statistics.median(r["p50"] for r in reps)
        p99 = statistics.median(r["p99"] for r in reps)
        rate = statistics.median(r["rate"] for r in reps)
        print(f"{name:<18} {inflight:>9} {p50:>8.2f} {p99:>8.2f} {rate:>8.0f}")
    print()
    print("toolbridge p50 minus spawn/anyio p50, paired per repetition:")
    for inflight in CONCURRENCY:
        diffs = [
            t["p50"] - s["p50"]
            for t, s in zip(
                rows[("toolbridge", inflight)], rows[("spawn/anyio", inflight)], strict=True
            )
        ]
        ratio = statistics.median(
            t["rate"] / s["rate"]
            for t, s in zip(
                rows[("toolbridge", inflight)], rows[("spawn/anyio", inflight)], strict=True
            )
        )
        print(
            f"  {inflight:>2} in flight: {statistics.median(diffs):+.2f} ms "
            f"[{min(diffs):+.2f} to {max(diffs):+.2f}], calls/s ratio {ratio:.2f}"
        )


if __name__ == "__main__":
    anyio.run(main)
