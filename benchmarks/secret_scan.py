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
   (``#!/bin/sh`` + ``exec cat``). The added p50 is on - off, paired per repetition; cells
   show the median [min-max] over repetitions. Beside it, the scan's own work for the same
   call (its arguments and its result) timed in process, which no load can blur much.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import betterleaks
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.secrets_corpus import FAMILIES, clean_texts, planted
from mcp_toolbridge.leaks import ENGINE, SecretScan, SecretScanSettings

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


CALLS = {"read": {"file_path": "notes.txt"}, "echo_json": {"text": "hello from the benchmark"}}


async def _rep(folders: dict[bool, Path], calls: int, rep: int) -> dict[tuple[bool, str], float]:
    """Both servers at once, their calls alternating one by one (the order flipped every
    call), so that both see the same load: the p50 of each."""
    times: dict[tuple[bool, str], list[float]] = {}
    with open(folders[True].parent / "stderr.log", "a", encoding="utf-8") as errlog:  # noqa: ASYNC230
        async with _client(folders[True], errlog) as on, _client(folders[False], errlog) as off:
            clients = {True: on, False: off}
            for tool, arguments in CALLS.items():
                for i in range(calls + 20):
                    for scan in (True, False) if (i + rep) % 2 == 0 else (False, True):
                        started = time.perf_counter()
                        result = await clients[scan].call_tool(tool, arguments)
                        if result.is_error:
                            raise RuntimeError(result.content)
                        if i >= 20:
                            elapsed = (time.perf_counter() - started) * 1000
                            times.setdefault((scan, tool), []).append(elapsed)
    return {key: statistics.median(values) for key, values in times.items()}


def _in_process(iterations: int = 2000) -> dict[str, float]:
    """The scan's own work for each trivial call (arguments, then result), in microseconds."""
    scan = SecretScan(SecretScanSettings())
    notes = "a line of notes, nothing secret\n" * 32
    result = {"content": notes, "path": "notes.txt"}
    out: dict[str, float] = {}
    for tool, arguments in CALLS.items():
        value: Any = result if tool == "read" else {"echo": arguments}
        scan.in_arguments(arguments, tool)
        started = time.perf_counter()
        for _ in range(iterations):
            scan.in_arguments(arguments, tool)
            scan.redact_value(value, tool)
            if tool == "read":
                scan.redact_text(notes, tool)
        out[tool] = (time.perf_counter() - started) / iterations * 1e6
    return out


async def latency_table(reps: int, calls: int) -> None:
    print(f"## Added p50 through `serve` over stdio ({reps} reps x {calls} calls per cell)")
    print()
    with tempfile.TemporaryDirectory() as tmp:
        folders = {scan: _folder(Path(tmp), scan) for scan in (True, False)}
        runs = [await _rep(folders, calls, rep) for rep in range(reps)]
    work = _in_process()
    head = "| call | p50 scan off ms | p50 scan on ms | added p50 ms (paired) |"
    print(head + " scan work in process µs |")
    print("|---|---|---|---|---|")
    for tool in CALLS:
        off = [r[(False, tool)] for r in runs]
        on = [r[(True, tool)] for r in runs]
        added = [a - b for a, b in zip(on, off, strict=True)]
        print(
            f"| {tool} | {_cell(off)} | {_cell(on)} | {statistics.median(added):+.3f} "
            f"[{min(added):+.3f} to {max(added):+.3f}] | {work[tool]:.0f} |"
        )
    print()


def _cell(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--engines", action="store_true", help="also measure detect-secrets")
    parser.add_argument("--no-server", action="store_true", help="skip the latency table")
    options = parser.parse_args()
    engine_table(options.reps, options.engines)
    if not options.no_server:
        anyio.run(latency_table, options.reps, options.calls)


if __name__ == "__main__":
    main()
