"""What the web console costs: its audit-feed observer per call, against the audit log's own
observer in the same run (the baseline: what every call already pays), and the time to render
the timeline (with its chart) and the catalog with a full feed.

    .venv/bin/python benchmarks/console.py [--calls 20000] [--reps 5]

The observers are called as Bridge.call calls them, with a finished call's outcome (the
audit log writes to a temporary file). The pages are fetched from the real console over
127.0.0.1 (httpx2) once the feed holds what the observer runs left in it (at most 10,000
records are kept): what a person's browser waits for, minus the network.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

from mcp_toolbridge.bridge import AuditLog, CallOutcome, Observer, audit_observer
from mcp_toolbridge.console import Console, ConsoleOptions
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime


def _outcome(name: str) -> CallOutcome:
    return CallOutcome(
        tool=name, ok=True, value={}, duration_ms=3, decision=Decision("allow", "rule", "default")
    )


async def _per_call(observe: Observer, spec: ToolSpec, calls: int) -> float:
    ctx = CallContext()
    outcome = _outcome(spec.name)
    started = time.perf_counter()
    for _ in range(calls):
        await observe(spec, {}, ctx, outcome)
    return (time.perf_counter() - started) / calls * 1e6


async def main(calls: int, reps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        settings = Settings(audit_path=folder / "audit.ndjson", workspace=folder)
        loaded = load_catalog(settings, BUILTIN_SPECS, locked=True)
        spec = next(iter(loaded.catalog)).spec
        console = Console(ConsoleOptions(port=0))
        log = AuditLog.open(folder / "bench.ndjson")
        audit_us, feed_us = [], []
        for _ in range(reps):
            audit_us.append(await _per_call(audit_observer(log), spec, calls))
            feed_us.append(await _per_call(console.feed.observe, spec, calls))
        log.close()
        print(f"observer per call ({calls} calls x {reps} runs, median)")
        print(f"{'observer':<28}{'us/call':>10}{'ratio':>8}")
        base = statistics.median(audit_us)
        for name, values in (("audit log (baseline)", audit_us), ("console feed", feed_us)):
            median = statistics.median(values)
            print(f"{name:<28}{median:>10.1f}{median / base:>8.2f}")
        async with open_runtime(settings, loaded) as runtime:
            console.attach(runtime, connections=None, local_session="bench")
            async with anyio.create_task_group() as group, httpx2.AsyncClient() as http:
                await group.start(console.serve)
                await http.get(console.url)
                base_url = console.url.split("/?", 1)[0]
                print(
                    f"\npages with {len(console.feed.entries(limit=10**6))} records kept, "
                    f"{len(loaded.catalog)} tools (median of {reps} requests)"
                )
                print(f"{'page':<28}{'ms':>10}")
                for path in ("/timeline", "/part/timeline", "/catalog", "/"):
                    took = []
                    for _ in range(reps):
                        started = time.perf_counter()
                        response = await http.get(base_url + path)
                        took.append((time.perf_counter() - started) * 1000)
                        assert response.status_code == 200
                    print(f"{path:<28}{statistics.median(took):>10.1f}")
                console.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=5)
    options = parser.parse_args()
    anyio.run(main, options.calls, options.reps)
