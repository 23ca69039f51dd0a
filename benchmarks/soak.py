"""Soak: thousands of calls over real stdio, 32 in flight, mixing tools that misbehave.

    .venv/bin/python -m benchmarks.soak [--calls 5000] [--inflight 32] [--bomb-mib 50]
                                        [--max-rss-growth-mib 64]

One `python -m mcp_toolbridge serve` process, driven by the SDK client, gets a seeded mix of
calls to the tools of tests/support/faulty_tools.py: successes, non-zero exits, SIGSEGV,
hangs past the deadline, garbage and non-UTF-8 stdout, an output bomb (--bomb-mib MiB against
--max-output), children that would outlive the call, and slow calls the client cancels
midway. It checks and prints: every call answered as its kind demands (an echo carries the
call's own nonce, so an answer matched to the wrong request fails), no process left behind
(a marker token on every tool's command line, found in /proc), the server's resident memory
before and after, p50/p99 latency per kind, and that the server still answers afterwards.
tests/e2e/test_soak.py runs a short version of the same driver.

The exit status is 0 only when every check passed: every call answered as its kind demands,
no process left behind (while serving or after the client closed), the server answering
afterwards and exiting on EOF, and its resident memory grown by at most
``--max-rss-growth-mib`` (default 64 MiB) between the warm-up and the end of the run. The
failed checks are printed last.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from tests.support.faulty_tools import Fault, faults, write_catalog
from tests.support.procs import alive_with, is_running, memory_kib, parent_of

CANCEL = "cancel"
"""A call to the ``slow`` tool that the client cancels midway."""
MIX: dict[str, int] = {
    "ok": 40,
    "fail": 8,
    "crash": 5,
    "hang": 2,
    "garbage": 6,
    "nonutf8": 5,
    "bomb": 1,
    "forker": 8,
    "whoami": 5,
    CANCEL: 6,
}
MAX_RSS_GROWTH_MIB = 64.0
"""The default bound on the server's resident memory growth over a run. Each call keeps at
most ``--max-output`` of stdout, so what is still resident afterwards is allocator slack and
caches; a leak of a few KiB per call exceeds it within a 5000-call run."""
CALL_LIMIT_S = 30.0
"""A call not answered within this long counts as unanswered (a hang in the server)."""


@dataclass(frozen=True)
class SoakConfig:
    calls: int = 5000
    inflight: int = 32
    bomb_bytes: int = 50 << 20
    max_output: int = 10 << 20
    hang_timeout_s: float = 1.0
    max_concurrency: int = 32
    """The server's --max-concurrency: as many executing as the client keeps in flight."""
    seed: int = 20260728
    max_rss_growth_mib: float = MAX_RSS_GROWTH_MIB


@dataclass
class SoakReport:
    command: list[str]
    config: SoakConfig
    kinds: Counter[str] = field(default_factory=Counter)
    expected: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    """Calls not answered as their kind demands, one line each."""
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    cancelled: int = 0
    left_behind: list[int] = field(default_factory=list)
    left_after_exit: list[int] = field(default_factory=list)
    server_pid: int = 0
    memory_before: dict[str, int] = field(default_factory=dict)
    memory_after: dict[str, int] = field(default_factory=dict)
    still_answering: bool = False
    server_exited: bool = False
    wall_s: float = 0.0

    @property
    def rss_growth_kib(self) -> int:
        return self.memory_after.get("VmRSS", 0) - self.memory_before.get("VmRSS", 0)

    def failures(self) -> list[str]:
        """The checks this run failed, one line each; empty when it passed."""
        cfg = self.config
        found = []
        answered = sum(self.expected.values())
        if answered != cfg.calls or self.problems:
            found.append(f"{cfg.calls - answered} of {cfg.calls} calls not answered as expected")
        if self.left_behind or self.left_after_exit:
            found.append(
                f"processes left behind: {len(self.left_behind)} while serving, "
                f"{len(self.left_after_exit)} after the client closed"
            )
        if not self.still_answering:
            found.append("the server did not answer after the run")
        if not self.server_exited:
            found.append("the server did not exit on EOF")
        if self.rss_growth_kib > cfg.max_rss_growth_mib * 1024:
            found.append(
                f"server RSS grew {self.rss_growth_kib / 1024:.1f} MiB, over the "
                f"{cfg.max_rss_growth_mib:g} MiB bound (--max-rss-growth-mib)"
            )
        return found

    def all_latencies(self) -> list[float]:
        return [ms for values in self.latencies_ms.values() for ms in values]

    def table(self) -> str:
        cfg = self.config
        rate = sum(self.kinds.values()) / max(self.wall_s, 1e-9)
        lines = [
            f"command: {' '.join(self.command)}",
            f"calls: {sum(self.kinds.values())}, {cfg.inflight} in flight, seed {cfg.seed}, "
            f"wall {self.wall_s:.1f} s, {rate:.0f} calls/s",
            "",
            f"| {'kind':<8} | {'calls':>6} | {'as expected':>11} | {'p50 ms':>7} | {'p99 ms':>7} |",
            f"|{'-' * 10}|{'-' * 8}|{'-' * 13}|{'-' * 9}|{'-' * 9}|",
        ]
        for kind in [*MIX, "total"]:
            values = self.all_latencies() if kind == "total" else self.latencies_ms.get(kind, [])
            count = sum(self.kinds.values()) if kind == "total" else self.kinds[kind]
            good = sum(self.expected.values()) if kind == "total" else self.expected[kind]
            p50, p99 = (f"{_pct(values, q):.1f}" for q in (0.5, 0.99)) if values else ("-", "-")
            lines.append(f"| {kind:<8} | {count:>6} | {good:>11} | {p50:>7} | {p99:>7} |")
        before, after = self.memory_before, self.memory_after
        lines += [
            "",
            f"calls not answered as expected: {len(self.problems)}",
            f"cancelled by the client midway: {self.cancelled}",
            f"server RSS: {before.get('VmRSS', 0) / 1024:.1f} MiB before, "
            f"{after.get('VmRSS', 0) / 1024:.1f} MiB after "
            f"(growth {self.rss_growth_kib / 1024:+.1f} MiB), "
            f"peak {after.get('VmHWM', 0) / 1024:.1f} MiB",
            f"processes left behind while serving: {len(self.left_behind)}; "
            f"after the client closed: {len(self.left_after_exit)}",
            f"server answering afterwards: {'yes' if self.still_answering else 'NO'}; "
            f"exited on EOF: {'yes' if self.server_exited else 'NO'}",
        ]
        lines += [f"  problem: {p}" for p in self.problems[:20]]
        failed = self.failures()
        lines.append(f"verdict: {'FAIL' if failed else 'pass'}")
        lines += [f"  failed: {f}" for f in failed]
        return "\n".join(lines)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def server_command(folder: Path, config: SoakConfig) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mcp_toolbridge",
        "serve",
        str(folder),
        "--no-audit",
        "--max-concurrency",
        str(config.max_concurrency),
        "--max-output",
        str(config.max_output),
    ]


def _check(fault: Fault, nonce: str, result: Any) -> str | None:
    """None when ``result`` is what ``fault`` must answer, else what is wrong."""
    meta = result.meta or {}
    code = meta.get("toolbridge/code")
    if fault.code is not None:
        if result.is_error and code == fault.code:
            return None
        return f"expected an error {fault.code}, got is_error={result.is_error} code={code}"
    if result.is_error:
        return f"expected success, got the error {result.structured_content}"
    value = result.structured_content
    if fault.name == "ok" and value != {"echo": {"nonce": nonce}}:
        return f"the echo of another call came back: {value}"
    if fault.name == "whoami" and not isinstance((value or {}).get("server_pid"), int):
        return f"no server pid in {value}"
    return None


async def _wait_until(predicate: Any, within_s: float) -> bool:
    """Poll ``predicate`` (process state in /proc: no event announces it) until it holds."""
    deadline = time.monotonic() + within_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await anyio.sleep(0.02)
    return True


async def run_soak(config: SoakConfig, workdir: Path) -> SoakReport:
    """Serve the faulty catalog from ``workdir`` and run the mix; never raises on a finding."""
    marker = f"soak-{uuid.uuid4().hex}"
    catalog = {
        f.name: f
        for f in faults(hang_timeout_s=config.hang_timeout_s, bomb_bytes=config.bomb_bytes)
    }
    folder = write_catalog(workdir / marker, tuple(catalog.values()))
    command = server_command(folder, config)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir)}
    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    report = SoakReport(command, config)
    rng = random.Random(config.seed)
    plan = rng.choices(list(MIX), weights=list(MIX.values()), k=config.calls)
    delays = [rng.uniform(0.02, 0.3) for _ in plan]
    async with Client(params, mode="legacy") as client:
        await client.call_tool("whoami", {})
        # Our own child serving the marked catalog: a sandboxed tool runs in a PID namespace
        # of its own, where its parent's pid is not the server's.
        report.server_pid = next(p for p in alive_with(marker) if parent_of(p) == os.getpid())
        for _ in range(config.inflight):  # warm up before the first memory reading
            await client.call_tool("ok", {"nonce": "warm-up"})
        report.memory_before = memory_kib(report.server_pid)

        async def one(i: int) -> None:
            kind = plan[i]
            fault = catalog["slow" if kind == CANCEL else kind]
            nonce = f"{marker}-{i}"
            started = time.perf_counter()
            if kind == CANCEL:
                with anyio.move_on_after(delays[i]) as scope:
                    await client.call_tool(fault.name, {"nonce": nonce})
                report.kinds[kind] += 1
                if scope.cancelled_caught:
                    report.cancelled += 1
                    report.expected[kind] += 1
                else:
                    report.problems.append(f"call {i} ({kind}): finished before its cancel")
                return
            with anyio.move_on_after(CALL_LIMIT_S) as scope:
                try:
                    result = await client.call_tool(fault.name, {"nonce": nonce})
                except Exception as exc:  # a protocol error is a finding, not a crash
                    result, wrong = None, f"raised {exc!r}"
            report.kinds[kind] += 1
            if scope.cancelled_caught:
                report.problems.append(f"call {i} ({kind}): no answer in {CALL_LIMIT_S:g} s")
                return
            report.latencies_ms.setdefault(kind, []).append((time.perf_counter() - started) * 1000)
            if result is not None:
                wrong = _check(fault, nonce, result) or ""
            if wrong:
                report.problems.append(f"call {i} ({kind}): {wrong}")
            else:
                report.expected[kind] += 1

        next_call = iter(range(config.calls))

        async def worker() -> None:
            for i in next_call:
                await one(i)

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(config.inflight):
                tg.start_soon(worker)
        report.wall_s = time.perf_counter() - started
        await _wait_until(lambda: not alive_with(marker, exclude=[report.server_pid]), 5.0)
        report.left_behind = alive_with(marker, exclude=[report.server_pid])
        report.memory_after = memory_kib(report.server_pid)
        with anyio.move_on_after(10):
            final = await client.call_tool("ok", {"nonce": "after"})
            report.still_answering = final.structured_content == {"echo": {"nonce": "after"}}
    report.server_exited = await _wait_until(lambda: not is_running(report.server_pid), 10.0)
    await _wait_until(lambda: not alive_with(marker, warm=True), 5.0)
    report.left_after_exit = alive_with(marker, warm=True)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--inflight", type=int, default=32)
    parser.add_argument("--bomb-mib", type=int, default=50, help="MiB the output bomb prints")
    parser.add_argument("--max-output", type=int, default=10 << 20, help="serve --max-output")
    parser.add_argument("--hang-timeout", type=float, default=1.0, help="the hang tool's limit")
    parser.add_argument("--seed", type=int, default=SoakConfig.seed)
    parser.add_argument(
        "--max-rss-growth-mib",
        type=float,
        default=MAX_RSS_GROWTH_MIB,
        help="fail when the server's resident memory grows by more than this over the run "
        f"(default {MAX_RSS_GROWTH_MIB:g})",
    )
    args = parser.parse_args(argv)
    if args.max_rss_growth_mib < 0:
        parser.error("--max-rss-growth-mib must be 0 or more")
    config = SoakConfig(
        calls=args.calls,
        inflight=args.inflight,
        bomb_bytes=args.bomb_mib << 20,
        max_output=args.max_output,
        hang_timeout_s=args.hang_timeout,
        max_concurrency=max(args.inflight, 1),
        seed=args.seed,
        max_rss_growth_mib=args.max_rss_growth_mib,
    )
    with tempfile.TemporaryDirectory() as tmp:
        report = anyio.run(run_soak, config, Path(tmp))
    shown = sys.argv[1:] if argv is None else argv
    print(f"soak: .venv/bin/python -m benchmarks.soak {' '.join(shown)}".rstrip())
    print(report.table())
    return 1 if report.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
