"""The secret scan: what it costs and what it finds, against the engines it was chosen from.

    .venv/bin/python benchmarks/secret_scan.py [--reps 5] [--calls 300] [--engines]

1. **Engines on the corpus** (benchmarks/sets/secrets, see benchmarks/secrets_corpus.py):
   throughput (MB of text per second of wall time, and per second of this process's CPU time,
   which counts every thread the engine uses), findings on the clean corpus (each one a false
   positive), and planted secrets found and gone after redaction, per family. Rows:

   - ``product``: ``SecretScan`` with the default ``[secret_scan]`` (betterleaks in 8 kB
     pieces, generic-api-key off);
   - ``product+generic``: the same with ``generic-api-key`` switched on;
   - ``betterleaks whole``: betterleaks-py's ``scan_string`` on each text whole, its embedded
     default config (what a plain use of the binding gives);
   - with ``--engines`` and detect-secrets installed (``pip install detect-secrets``; not a
     dependency): ``detect-secrets`` with its default plugins, and without its two
     entropy-only plugins, line by line as its ``scan_line`` does. It is slow: it scans the
     first 200 kB of the corpus for throughput and all of it for findings.

2. **Added latency through the real server**: the SDK client over stdio to
   ``python -m mcp_toolbridge serve`` (audit log on, the default policy) with the scan on
   (the default) and with ``[secret_scan] mode = "off"``: both servers run at once and their
   calls alternate one by one, so both see the same load on a shared machine. A trivial call
   of ``read`` (a 1 kB file, no process) and of the manifest tool ``echo_json``
   (``#!/bin/sh`` + ``exec cat``; its arguments differ from call to call, as a model's do).
   The added p50 is on - off, paired per repetition; cells show the median [min-max] over
   repetitions. Beside it, the CPU per call of each server, every thread counted (the
   engine's Go runtime has threads of its own; /proc/PID/task/*/schedstat, Linux), which a
   loaded machine blurs much less than the wall time, and the added CPU per call in this
   process (``Bridge.call`` on both runtimes, alternating, this thread's CPU).
   ``--latency-only`` skips the first table.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import betterleaks
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.secrets_corpus import FAMILIES, clean_texts, planted
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.leaks import ENGINE, SecretScan, SecretScanSettings
from mcp_toolbridge.runtime import Settings, load_catalog, open_runtime

Scanner = Callable[[str], list[str]]
"""text -> the values found."""


def _product(settings: SecretScanSettings) -> Scanner:
    scan = SecretScan(settings)
    return lambda text: [f.value for f in scan.findings(text, "bench")]


def _whole(text: str) -> list[str]:
    return [f.secret for f in betterleaks.scan_string(text)]


def _detect_secrets(entropy: bool) -> Scanner | None:
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import default_settings, transient_settings
    except ImportError:
        return None

    with default_settings() as settings:
        plugins = list(settings.json()["plugins_used"])
    if not entropy:
        plugins = [p for p in plugins if "HighEntropy" not in p["name"]]

    def scan(text: str) -> list[str]:
        found: list[str] = []
        with transient_settings({"plugins_used": plugins}):
            for line in text.splitlines():
                found.extend(s.secret_value or "" for s in scan_line(line))
        return found

    return scan


def _engines(with_detect_secrets: bool) -> list[tuple[str, Scanner, int]]:
    rows: list[tuple[str, Scanner, int]] = [
        ("product (default)", _product(SecretScanSettings()), 0),
        ("product+generic", _product(SecretScanSettings(rules={"generic-api-key": True})), 0),
        ("betterleaks whole", _whole, 0),
    ]
    if with_detect_secrets:
        for entropy in (True, False):
            scanner = _detect_secrets(entropy)
            name = f"detect-secrets ({'default' if entropy else 'no entropy'})"
            if scanner is None:
                print(f"{name}: not installed (pip install detect-secrets)")
            else:
                rows.append((name, scanner, 200_000))
    return rows


def engine_table(reps: int, with_detect_secrets: bool) -> None:
    texts = clean_texts()
    total = sum(len(t.encode()) for t in texts.values())
    plants = planted()
    print(f"## Engines on the corpus ({total / 1e6:.2f} MB clean, {len(plants)} planted; {ENGINE})")
    print()
    head = "| engine | MB/s wall | MB/s CPU | clean findings | planted found |"
    print(head + "".join(f" {f} |" for f in FAMILIES))
    print("|---" * (5 + len(FAMILIES)) + "|")
    for name, scanner, cap in _engines(with_detect_secrets):
        scanner("warm up")
        walls, cpus = [], []
        sample = texts if not cap else {"head": "".join(texts.values())[:cap]}
        size = sum(len(t.encode()) for t in sample.values())
        for _ in range(reps if not cap else 1):
            wall, cpu = time.perf_counter(), time.process_time()
            for text in sample.values():
                scanner(text)
            walls.append(size / (time.perf_counter() - wall) / 1e6)
            cpus.append(size / max(1e-9, time.process_time() - cpu) / 1e6)
        false = sum(len(scanner(text)) for text in texts.values())
        got: Counter[str] = Counter()
        of: Counter[str] = Counter()
        for plant, document in plants:
            of[plant.family] += 1
            if any(plant.secret in v or v in plant.secret for v in scanner(document) if v):
                got[plant.family] += 1
        families = "".join(f" {got[f]}/{of[f]} |" for f in FAMILIES)
        print(
            f"| {name} | {statistics.median(walls):.1f} | {statistics.median(cpus):.1f} | "
            f"{false} | {sum(got.values())}/{len(plants)} |{families}"
        )
    print()


TOOLS = {
    "tools": [
        {
            "name": "echo_json",
            "description": "Echo the arguments back",
            "schema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "command": ["./tools/bin/echo_json"],
            "annotations": {"destructiveHint": False},
        }
    ]
}


def _folder(root: Path, scan: bool) -> Path:
    folder = root / ("on" if scan else "off")
    (folder / "tools" / "bin").mkdir(parents=True)
    tool = folder / "tools" / "bin" / "echo_json"
    tool.write_text("#!/bin/sh\nexec cat\n", encoding="utf-8")
    tool.chmod(0o755)
    (folder / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (folder / "notes.txt").write_text("a line of notes, nothing secret\n" * 32, encoding="utf-8")
    policy = "" if scan else '[secret_scan]\nmode = "off"\n'
    (folder / "policy.toml").write_text(policy, encoding="utf-8")
    return folder


@asynccontextmanager
async def _client(folder: Path, errlog: TextIO) -> AsyncIterator[Client]:
    args = ["-m", "mcp_toolbridge", "serve", str(folder), "--workspace", str(folder)]
    args += ["--audit", str(folder / "audit.ndjson"), "--policy", str(folder / "policy.toml")]
    params = StdioServerParameters(command=sys.executable, args=args, cwd=str(folder))
    async with Client(stdio_client(params, errlog=errlog)) as client:
        await client.list_tools()
        yield client


NOTES = {"file_path": "notes.txt"}


def _arguments(tool: str, i: int) -> dict[str, Any]:
    """Each call's arguments: read's are the same every time (the file is), echo_json's
    differ (as a model's do), so no remembered scan of the arguments serves them."""
    return dict(NOTES) if tool == "read" else {"text": f"hello from the benchmark, call {i}"}


TOOLS_CALLED = ("read", "echo_json")


def _children() -> set[int]:
    """This process's children (Linux: /proc), to find the servers the SDK started."""
    found = set()
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():
            found.add(int(entry.parent.name))
    return found


def _cpu_s(pid: int | None) -> float:
    """The CPU time of every thread of ``pid`` so far (the Go runtime's threads included),
    from /proc/PID/task/*/schedstat; NaN where it cannot be read."""
    if pid is None:
        return math.nan
    total = 0
    for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
        try:
            total += int(stat.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return total / 1e9 if total else math.nan


@asynccontextmanager
async def _server(folder: Path, errlog: TextIO) -> AsyncIterator[tuple[Client, int | None]]:
    before = _children()
    async with _client(folder, errlog) as client:
        started = _children() - before
        yield client, (started.pop() if len(started) == 1 else None)


Cell = dict[tuple[bool, str], float]


async def _rep(folders: dict[bool, Path], calls: int, rep: int) -> tuple[Cell, Cell]:
    """Both servers at once, their calls alternating one by one (the order flipped every
    call), so that both see the same load: the p50 of each, and its CPU per call."""
    times: dict[tuple[bool, str], list[float]] = {}
    cpu: Cell = {}
    with open(folders[True].parent / "stderr.log", "a", encoding="utf-8") as errlog:  # noqa: ASYNC230
        async with _server(folders[True], errlog) as on, _server(folders[False], errlog) as off:
            servers = {True: on, False: off}
            for tool in TOOLS_CALLED:
                for i in range(calls + 20):
                    if i == 20:
                        used = {scan: _cpu_s(servers[scan][1]) for scan in (True, False)}
                    for scan in (True, False) if (i + rep) % 2 == 0 else (False, True):
                        started = time.perf_counter()
                        result = await servers[scan][0].call_tool(tool, _arguments(tool, i))
                        if result.is_error:
                            raise RuntimeError(result.content)
                        if i >= 20:
                            elapsed = (time.perf_counter() - started) * 1000
                            times.setdefault((scan, tool), []).append(elapsed)
                for scan in (True, False):
                    cpu[scan, tool] = (_cpu_s(servers[scan][1]) - used[scan]) / calls * 1e6
    return {key: statistics.median(values) for key, values in times.items()}, cpu


async def _in_process(folders: dict[bool, Path], calls: int) -> dict[str, float]:
    """The scan's added CPU per call in this process, paired: ``Bridge.call`` of the same
    call on the runtime of each folder, alternating, the CPU of this thread (where the scan
    and the engine run) summed for each, with 3 ms of rest after each call (as a server's
    calls have) so that caches cool as they do between calls; µs per call, on - off."""
    used = dict.fromkeys(((scan, tool) for scan in (True, False) for tool in TOOLS_CALLED), 0.0)
    async with AsyncExitStack() as stack:
        bridges = {}
        for scan, folder in folders.items():
            settings = Settings(
                paths=[folder],
                policy_file=folder / "policy.toml",
                workspace=folder,
                audit_path=folder / "audit-in-process.ndjson",
            )
            runtime = await stack.enter_async_context(
                open_runtime(settings, load_catalog(settings, locked=True))
            )
            bridges[scan] = runtime.bridge
        await bridges[True].secret_scan.loaded()
        for tool in TOOLS_CALLED:
            for i in range(calls + 20):
                for scan in (True, False) if i % 2 == 0 else (False, True):
                    started = time.thread_time()
                    outcome = await bridges[scan].call(tool, _arguments(tool, i), CallContext())
                    if i >= 20:
                        used[scan, tool] += time.thread_time() - started
                    if not outcome.ok:
                        raise RuntimeError(outcome.error)
                    await anyio.sleep(0.003)
    return {tool: (used[True, tool] - used[False, tool]) / calls * 1e6 for tool in TOOLS_CALLED}


async def latency_table(reps: int, calls: int) -> None:
    print(f"## Added p50 through `serve` over stdio ({reps} reps x {calls} calls per cell)")
    print()
    with tempfile.TemporaryDirectory() as tmp:
        folders = {scan: _folder(Path(tmp), scan) for scan in (True, False)}
        runs = [await _rep(folders, calls, rep) for rep in range(reps)]
        work = [await _in_process(folders, calls) for _ in range(reps)]
    head = "| call | p50 scan off ms | p50 scan on ms | **added p50 ms (paired)** |"
    print(head + " server CPU µs/call off | on | added CPU µs/call | added CPU in process µs |")
    print("|---|---|---|---|---|---|---|---|")
    for tool in TOOLS_CALLED:
        off = [r[(False, tool)] for r, _ in runs]
        on = [r[(True, tool)] for r, _ in runs]
        added = [a - b for a, b in zip(on, off, strict=True)]
        cpu_off = [c[(False, tool)] for _, c in runs]
        cpu_on = [c[(True, tool)] for _, c in runs]
        cpu_added = [a - b for a, b in zip(cpu_on, cpu_off, strict=True)]
        in_process = [w[tool] for w in work]
        print(
            f"| {tool} | {_cell(off)} | {_cell(on)} | **{_range(added, 3)}** | "
            f"{_cell(cpu_off, 0)} | {_cell(cpu_on, 0)} | {_range(cpu_added, 0)} | "
            f"{_range(in_process, 0)} |"
        )
    print()
    print("Cells: median [min-max] over repetitions; the goal is an added p50 under 0.2 ms.")
    print()


def _range(values: list[float], digits: int) -> str:
    low, high = min(values), max(values)
    return f"{statistics.median(values):+.{digits}f} [{low:+.{digits}f} to {high:+.{digits}f}]"


def _cell(values: list[float], digits: int = 3) -> str:
    low, high = min(values), max(values)
    return f"{statistics.median(values):.{digits}f} [{low:.{digits}f}-{high:.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--engines", action="store_true", help="also measure detect-secrets")
    parser.add_argument("--no-server", action="store_true", help="skip the latency table")
    parser.add_argument("--latency-only", action="store_true", help="only the latency table")
    options = parser.parse_args()
    if not options.latency_only:
        engine_table(options.reps, options.engines)
    if not options.no_server:
        anyio.run(latency_table, options.reps, options.calls)


if __name__ == "__main__":
    main()
