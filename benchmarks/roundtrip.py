"""Round trip of a trivial exec tool through `mcp-toolbridge serve` over stdio, against spawning
the same tool directly from Python in the same run.

    .venv/bin/python benchmarks/roundtrip.py [--calls 500] [--reps 3] [--max-concurrency N]

The tool is `#!/bin/sh` + `exec cat` (it echoes the JSON arguments), declared in an agentcli
tools.json. The drivers, each timed per call from issue to result, at 1, 8 and 32 calls in
flight (that many tasks calling back to back):

- spawn/anyio: `anyio.run_process(tool, input=...)` in this process. What an async server pays
  at minimum for one spawn; the baseline of the overhead figures (as in the performance anchors).
- spawn/subprocess: `subprocess.run(tool, input=...)` in worker threads (one per call in flight).
- spawn/product: `mcp_toolbridge.executors.subprocess.run_process` called directly: the spawn
  the server does for each call (own session, pidfd exit watch, bounded drains), without MCP,
  validation, policy or audit.
- spawn/sandboxed: the same `run_process` inside the OS sandbox the tool gets from the default
  policy (bubblewrap: user, mount, PID, network, IPC and UTS namespaces): what the sandbox adds
  to one spawn. The tool is called again and again, so from its third call on it runs in a
  warm sandbox (set up before the call; the warm-up calls see to that).
- spawn/sandboxed-fresh: the same with warm sandboxes off (`[sandbox] warm = false`): a sandbox
  made for each call, waiting for its PID namespace to end.
- bridge: `Bridge.call` in this process, built as `serve` builds it (locked tools, the default
  policy, the audit log in a temporary file, the telemetry span): the whole pipeline of a call
  without MCP.
- sdk/no-spawn: the SDK `Client` over stdio to benchmarks/sdk_server.py, a hand-written SDK
  low-level server that answers without spawning: what MCP over stdio costs by itself.
- sdk/spawn: the same server running the tool per call with the product's `run_process`
  (`--spawn`): MCP plus the spawn, done from a server process, with nothing else.
- sdk/anchor: the same server running the tool with `anyio.open_process` (`--anchor`): the
  hand-written server of the performance anchors, call for call; the floor issue 29 measures
  `serve` against (`toolbridge` against it is printed in a table of its own).
- toolbridge: the SDK's `Client` (mcp 2.3, the default mode, which negotiates 2026-07-28) over
  stdio to `python -m mcp_toolbridge serve DIR --audit FILE`: a real child process, real pipes,
  the JSON-RPC framing, validation, the default policy, the audit log (written to a temporary
  file instead of the user data directory) and the telemetry span. Tools are listed once first.
  A fresh server per cell; its start-up is not timed. `serve` runs on uvloop (its default
  where installed). The tool runs in its OS sandbox (`--sandbox auto`, the default), as it does
  in bridge.
- toolbridge/unsandboxed: the same with `serve --sandbox off`: the sandbox's cost through the
  whole product is toolbridge - toolbridge/unsandboxed.
- toolbridge/fresh-sandbox: the same with a policy that turns warm sandboxes off
  (`[sandbox] warm = false`): a sandbox made for each call, through the whole product.
- toolbridge/asyncio: the same with `serve --loop asyncio` (asyncio's own event loop).
- toolbridge/base: `toolbridge` served from another copy of the code (``--base DIR``, a folder
  holding an ``mcp_toolbridge`` package, e.g. ``git archive REV mcp_toolbridge | tar -x -C
  DIR``): before and after a change, paired in the same run.

At 1 in flight the overhead over spawn/anyio splits into four parts (computed from the median
p50 of each driver, so they add up to the total exactly):
spawn/product - spawn/anyio (the product's spawn against the baseline's), sdk/no-spawn (MCP over
stdio), sdk/spawn - sdk/no-spawn - spawn/product (what the same spawn costs more when it is made
by a server process between the client and the tool) and toolbridge - sdk/spawn (everything the
product adds to a bare SDK server: transport, adapter, validation, policy, audit, span, argv/env
and output handling). bridge - spawn/product shows the in-process part of the last one.

Each repetition runs every driver once per concurrency, in an order rotated per repetition; a
cell starts with 20 warm-up calls. Cells show the median over repetitions with [min-max].
"CPU ms/call" is the CPU the server used per timed call, counting every process it started:
its tools, and the OS sandbox's bubblewrap and zygote processes, which live across calls and
are not reaped by it (benchmarks/cpu_meter.py: a cgroup per server when this runs as root,
else the live process tree from /proc); for the in-process drivers it is this process's. The
client's own CPU is not in it (it is the same SDK client for every stdio driver).
"others %" is the CPU that processes outside this benchmark used during the timed calls (from
/proc/stat, minus this process's rusage and the server's CPU above) as a share of all cores.
On a shared machine, each cell first waits (up to --patience seconds) for a second in which
others use less than --quiet percent, and a cell during which they used more is run again (up
to --attempts times in all; the least disturbed attempt is kept). Figures from cells above
about 10 % are disturbed: the p50 of a spawn doubles when another process keeps a core busy.
Kernel work for a sandbox done in kernel threads (a fresh sandbox's network namespace torn
down) still counts as others'.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.to_thread
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import mcp_toolbridge
from benchmarks.cpu_meter import LAUNCHER, Cgroup, tree_cpu
from mcp_toolbridge.bridge import PolicyGate
from mcp_toolbridge.executors import probe_sandbox, run_process
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.runtime import Settings, load_catalog, open_bridge
from mcp_toolbridge.sandbox import Confinement

PAYLOAD = {"text": "hello from the benchmark"}
CONCURRENCY = (1, 8, 32)
WARMUP = 20
DRIVERS = (
    "spawn/anyio",
    "spawn/subprocess",
    "spawn/product",
    "spawn/sandboxed",
    "spawn/sandboxed-fresh",
    "bridge",
    "sdk/no-spawn",
    "sdk/spawn",
    "sdk/anchor",
    "toolbridge",
    "toolbridge/unsandboxed",
    "toolbridge/fresh-sandbox",
    "toolbridge/asyncio",
    "toolbridge/base",
)
SANDBOX_PAIRS = (
    ("spawn/sandboxed", "spawn/product"),
    ("spawn/sandboxed-fresh", "spawn/product"),
    ("toolbridge", "toolbridge/unsandboxed"),
    ("toolbridge/fresh-sandbox", "toolbridge/unsandboxed"),
)
SPAWNS = ("spawn/anyio", "spawn/subprocess", "spawn/product")
FLOORS = ("sdk/anchor", "sdk/spawn")
"""Hand-written SDK servers `toolbridge` is compared with, call for call and CPU for CPU."""
SDK_SERVER = Path(__file__).with_name("sdk_server.py")

Call = Callable[[], Awaitable[None]]


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
                # It changes nothing, and says so: the fail-closed default would ask otherwise.
                "annotations": {"readOnlyHint": True},
            }
        ]
    }
    (folder / "tools.json").write_text(json.dumps(manifest), encoding="utf-8")
    return tool


@dataclass
class Cell:
    p50: float
    p99: float
    rate: float
    others: float
    """CPU share (0-1 of all cores) used by processes outside this run during the cell."""
    cpu_ms: float = 0.0
    """CPU per call of the server and everything it started (see cpu_meter.py)."""


ServerCpu = Callable[[], float]
"""CPU seconds used so far by the server of a cell and what it started (0: none)."""


def _no_server() -> float:
    return 0.0


class OthersMeter:
    """CPU used on the machine by anything but this process, its reaped children and the
    server of the cell (``server``: its CPU so far)."""

    def __init__(self, server: ServerCpu = _no_server) -> None:
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.server = server
        self.start = self._sample()

    def _ours(self) -> tuple[float, float]:
        own = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, self.server()

    def _sample(self) -> tuple[float, float, float, float]:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        busy = sum(fields[:8]) - idle  # up to steal; guest time is already in user
        return busy / self.ticks, sum(fields[:8]) / self.ticks, *self._ours()

    def share(self) -> float:
        return self.stop()[0]

    def stop(self) -> tuple[float, float]:
        """(others' share of the machine, the server's CPU seconds) since the start."""
        busy0, total0, ours0, server0 = self.start
        busy1, total1, ours1, server1 = self._sample()
        elapsed = total1 - total0
        server = max(0.0, server1 - server0)
        if elapsed <= 0:
            return 0.0, server
        return max(0.0, (busy1 - busy0) - (ours1 - ours0) - server) / elapsed, server


@dataclass
class Quiet:
    percent: float
    patience: float
    attempts: int

    async def wait(self) -> None:
        """Return after a second in which others used less than ``percent`` of the machine, or
        after ``patience`` seconds."""
        deadline = time.monotonic() + self.patience
        while time.monotonic() < deadline:
            meter = OthersMeter()
            await anyio.sleep(1.0)
            if meter.share() * 100 < self.percent:
                return


def _own_tree() -> float:
    return tree_cpu(os.getpid(), include_root=True)


async def measure(call: Call, calls: int, inflight: int, server: ServerCpu = _own_tree) -> Cell:
    """The cell of ``calls`` calls, ``inflight`` at a time, after the warm-up calls; the
    machine's load and ``server``'s CPU are measured over the timed calls only."""
    for _ in range(WARMUP):
        await call()
    latencies: list[float] = []
    per_task = max(1, calls // inflight)

    async def worker() -> None:
        for _ in range(per_task):
            start = time.perf_counter()
            await call()
            latencies.append((time.perf_counter() - start) * 1000)

    meter = OthersMeter(server)
    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for _ in range(inflight):
            tg.start_soon(worker)
    rate = len(latencies) / (time.perf_counter() - started)
    others, cpu = meter.stop()
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Cell(statistics.median(ordered), p99, rate, others, cpu * 1000 / len(latencies))


class Bench:
    def __init__(self, folder: Path, tool: Path, calls: int, max_concurrency: int | None) -> None:
        self.folder = folder
        self.tool = tool
        self.calls = calls
        self.max_concurrency = max_concurrency
        self.data = json.dumps(PAYLOAD).encode()
        self.env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
        self.protocol = "?"
        self.base: str | None = None
        """--base: the code of the toolbridge/base driver."""
        self.cpu_source = "cgroup"
        """How the servers' CPU is counted: a cgroup per server, or the process tree."""
        # The servers import the same mcp_toolbridge as this process (a checkout or a copy).
        self.child_env = {"PYTHONPATH": str(Path(mcp_toolbridge.__file__).parent.parent)}
        # The servers' stderr (their start-up banner) goes to a file, not between the tables.
        self.errlog = open(folder / "server-stderr.log", "a", encoding="utf-8")

    async def run(self, driver: str, inflight: int, quiet: Quiet) -> Cell:
        best: Cell | None = None
        for _ in range(quiet.attempts):
            await quiet.wait()
            cell = await self.run_once(driver, inflight)
            if best is None or cell.others < best.others:
                best = cell
            if cell.others * 100 <= quiet.percent:
                break
        assert best is not None
        return best

    async def run_once(self, driver: str, inflight: int) -> Cell:
        if driver == "toolbridge":
            return await self._over_stdio(self._serve_args(), inflight)
        if driver == "toolbridge/base":
            if self.base is None:
                raise SystemExit("toolbridge/base needs --base DIR")
            return await self._over_stdio(self._serve_args(), inflight, pythonpath=self.base)
        if driver == "toolbridge/asyncio":
            return await self._over_stdio([*self._serve_args(), "--loop", "asyncio"], inflight)
        if driver == "toolbridge/unsandboxed":
            return await self._over_stdio([*self._serve_args(), "--sandbox", "off"], inflight)
        if driver == "toolbridge/fresh-sandbox":
            policy = self.folder / "fresh-sandbox.toml"
            policy.write_text("[sandbox]\nwarm = false\n", encoding="utf-8")
            args = [*self._serve_args(), "--policy", str(policy)]
            return await self._over_stdio(args, inflight)
        if driver in ("spawn/sandboxed", "spawn/sandboxed-fresh"):
            sandbox = await self._confinement(warm=driver == "spawn/sandboxed")
            try:
                return await measure(self._product(sandbox), self.calls, inflight)
            finally:
                sandbox.sandbox.close()
        if driver == "sdk/no-spawn":
            return await self._over_stdio([str(SDK_SERVER)], inflight)
        if driver == "sdk/spawn":
            return await self._over_stdio([str(SDK_SERVER), "--spawn", str(self.tool)], inflight)
        if driver == "sdk/anchor":
            return await self._over_stdio([str(SDK_SERVER), "--anchor", str(self.tool)], inflight)
        if driver == "bridge":
            return await self._bridge(inflight)
        return await measure(self._spawner(driver, inflight), self.calls, inflight)

    def _settings(self) -> Settings:
        return Settings(
            paths=[self.folder],
            audit_path=self.folder / "audit.ndjson",
            max_concurrency=self.max_concurrency,
            workspace=self.folder,
        )

    def _serve_args(self) -> list[str]:
        args = ["-m", "mcp_toolbridge", "serve", str(self.folder)]
        args += ["--audit", str(self.folder / "audit.ndjson")]
        if self.max_concurrency is not None:
            args += ["--max-concurrency", str(self.max_concurrency)]
        return args

    async def _bridge(self, inflight: int) -> Cell:
        settings = self._settings()
        loaded = load_catalog(settings, locked=True)
        async with open_bridge(settings, loaded) as bridge:

            async def call() -> None:
                outcome = await bridge.call("echo_json", PAYLOAD, CallContext(session_id="bench"))
                if not outcome.ok:
                    raise RuntimeError(outcome.error)

            return await measure(call, self.calls, inflight)

    def _spawner(self, driver: str, inflight: int) -> Call:
        argv = [str(self.tool)]
        if driver == "spawn/anyio":

            async def spawn_anyio() -> None:
                await anyio.run_process(argv, input=self.data)

            return spawn_anyio
        if driver == "spawn/subprocess":
            limiter = anyio.CapacityLimiter(inflight)

            def blocking() -> None:
                subprocess.run(argv, input=self.data, capture_output=True, check=True)

            async def spawn_thread() -> None:
                await anyio.to_thread.run_sync(blocking, limiter=limiter)

            return spawn_thread

        return self._product(None)

    def _product(self, sandbox: Confinement | None) -> Call:
        argv = [str(self.tool)]

        async def spawn_product() -> None:
            outcome = await run_process(
                argv,
                stdin=self.data,
                cwd=str(self.folder),
                env=self.env,
                timeout_s=60,
                sandbox=sandbox,
            )
            if outcome.exit_code != 0 or outcome.sandboxed is not (sandbox is not None):
                raise RuntimeError(outcome.stderr_tail)

        return spawn_product

    async def _confinement(self, *, warm: bool) -> Confinement:
        """The sandbox `serve` gives the tool (the default policy, this folder as workspace)."""
        settings = self._settings()
        loaded = load_catalog(settings)
        gate = PolicyGate.configured(loaded.policy, settings.sandbox, environ=settings.environ)
        assert gate.sandbox is not None
        gate.sandbox.warm.enabled = warm
        if not (await probe_sandbox(gate.sandbox)).ok:
            raise RuntimeError(f"no sandbox here: {gate.sandbox.support}")
        entry = loaded.catalog.resolve("echo_json")
        assert entry is not None
        confinement = gate.confinement(entry.spec)
        assert confinement is not None
        return confinement

    async def _over_stdio(
        self, args: list[str], inflight: int, *, pythonpath: str | None = None
    ) -> Cell:
        """A fresh server over stdio; its CPU (and its sandboxes') counted in a cgroup of its
        own where one can be made, else from the process tree."""
        cgroup = Cgroup.make() if self.cpu_source != "tree" else None
        server: ServerCpu
        if cgroup is not None:
            self.cpu_source = f"cgroup {cgroup.version}"
            args = ["-c", LAUNCHER, str(cgroup.procs), *args]
            server = cgroup.cpu
        else:
            self.cpu_source = "tree"
            server = lambda: tree_cpu(os.getpid(), include_root=False)  # noqa: E731
        env = self.child_env if pythonpath is None else {"PYTHONPATH": pythonpath}
        params = StdioServerParameters(
            command=sys.executable, args=args, cwd=str(self.folder), env=env
        )
        try:
            async with Client(stdio_client(params, errlog=self.errlog)) as client:
                self.protocol = client.protocol_version
                await client.list_tools()

                async def call() -> None:
                    result = await client.call_tool("echo_json", PAYLOAD)
                    if result.is_error:
                        raise RuntimeError(result.content)

                return await measure(call, self.calls, inflight, server)
        finally:
            if cgroup is not None:
                cgroup.remove()


def span(values: list[float], fmt: str) -> str:
    mid = format(statistics.median(values), fmt)
    if len(values) == 1:
        return mid
    return f"{mid} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def signed_span(values: list[float]) -> str:
    mid = statistics.median(values)
    if len(values) == 1:
        return f"{mid:+.2f}"
    return f"{mid:+.2f} [{min(values):+.2f} to {max(values):+.2f}]"


def report(rows: dict[tuple[str, int], list[Cell]], args: argparse.Namespace, bench: Bench) -> None:
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} cores, {platform.machine()}, Linux {platform.release()}, "
        f"Python {platform.python_version()}; load average at the end {load[0]:.2f}"
    )
    limit = args.max_concurrency or "default (2 x cores)"
    print(
        f"calls per cell: {args.calls}, repetitions: {args.reps}, toolbridge client: mcp SDK "
        f"Client over stdio, protocol {bench.protocol}, --max-concurrency {limit}; "
        f"servers' CPU counted by {bench.cpu_source}"
    )
    print()
    print("| driver | in flight | p50 ms | p99 ms | calls/s | CPU ms/call | others % |")
    print("|---|---|---|---|---|---|---|")
    drivers = [d for d in DRIVERS if any(key[0] == d for key in rows)]
    levels = [n for n in CONCURRENCY if any(key[1] == n for key in rows)]
    for inflight in levels:
        for driver in drivers:
            cells = rows[(driver, inflight)]
            print(
                f"| {driver} | {inflight} | {span([c.p50 for c in cells], '.2f')} | "
                f"{span([c.p99 for c in cells], '.2f')} | {span([c.rate for c in cells], '.0f')} | "
                f"{span([c.cpu_ms for c in cells], '.2f')} | "
                f"{span([c.others * 100 for c in cells], '.0f')} |"
            )
    compared = [("toolbridge", base) for base in (*FLOORS, "toolbridge/base")]
    compared += [("toolbridge/base", base) for base in FLOORS]
    lines = []
    for product, base in compared:
        for inflight in levels:
            if (product, inflight) not in rows or (base, inflight) not in rows:
                continue
            pairs = list(zip(rows[(product, inflight)], rows[(base, inflight)], strict=True))
            lines.append(
                f"| {product} | {base} | {inflight} | "
                f"{signed_span([t.p50 - s.p50 for t, s in pairs])} | "
                f"{span([t.p50 / s.p50 for t, s in pairs], '.2f')} | "
                f"{span([t.rate / s.rate for t, s in pairs], '.2f')} | "
                f"{span([t.cpu_ms / s.cpu_ms for t, s in pairs if s.cpu_ms], '.2f')} |"
            )
    table(
        "toolbridge against the hand-written SDK servers (and toolbridge/base), paired per\n"
        "repetition (median [min to max]; CPU per call: the server's and everything it started,\n"
        "its sandboxes included):",
        "| server | against | in flight | p50 overhead ms | p50 ratio | calls/s ratio"
        " | CPU ratio |",
        lines,
    )
    lines = []
    for base in SPAWNS:
        for inflight in levels:
            if ("toolbridge", inflight) not in rows or (base, inflight) not in rows:
                continue
            pairs = list(zip(rows[("toolbridge", inflight)], rows[(base, inflight)], strict=True))
            p50 = [t.p50 - s.p50 for t, s in pairs]
            ratio = [t.p50 / s.p50 for t, s in pairs]
            p99 = [t.p99 - s.p99 for t, s in pairs]
            rate = [t.rate / s.rate for t, s in pairs]
            lines.append(
                f"| {base} | {inflight} | {signed_span(p50)} | {span(ratio, '.2f')} | "
                f"{signed_span(p99)} | {span(rate, '.2f')} |"
            )
    table(
        "toolbridge against each spawn, paired per repetition (median [min to max]):",
        "| against | in flight | p50 overhead ms | p50 ratio | p99 overhead ms | calls/s ratio |",
        lines,
    )
    lines = []
    for sandboxed, plain in SANDBOX_PAIRS:
        for inflight in levels:
            if (sandboxed, inflight) not in rows or (plain, inflight) not in rows:
                continue
            pairs = list(zip(rows[(sandboxed, inflight)], rows[(plain, inflight)], strict=True))
            lines.append(
                f"| {sandboxed} | {plain} | {inflight} | "
                f"{signed_span([s.p50 - p.p50 for s, p in pairs])} | "
                f"{signed_span([s.p99 - p.p99 for s, p in pairs])} | "
                f"{span([s.rate / p.rate for s, p in pairs], '.2f')} |"
            )
    table(
        "what the OS sandbox adds, paired per repetition (median [min to max]):",
        "| sandboxed | against | in flight | p50 overhead ms | p99 overhead ms | calls/s ratio |",
        lines,
    )
    if set(DRIVERS) - set(drivers) - {"sdk/anchor", "toolbridge/base"} or 1 not in levels:
        return  # the breakdown needs every driver at 1 in flight
    at1 = {driver: statistics.median(c.p50 for c in rows[(driver, 1)]) for driver in DRIVERS}
    parts: tuple[tuple[str, list[str], list[str]], ...] = (
        ("spawn/product - spawn/anyio: the product's spawn", ["spawn/product"], ["spawn/anyio"]),
        ("sdk/no-spawn: MCP over stdio", ["sdk/no-spawn"], []),
        (
            "sdk/spawn - sdk/no-spawn - spawn/product: spawning from a server process",
            ["sdk/spawn"],
            ["sdk/no-spawn", "spawn/product"],
        ),
        ("toolbridge - sdk/spawn: what the product adds", ["toolbridge"], ["sdk/spawn"]),
        ("(of which in process: bridge - spawn/product)", ["bridge"], ["spawn/product"]),
        ("total: toolbridge - spawn/anyio", ["toolbridge"], ["spawn/anyio"]),
    )
    table(
        "where the p50 at 1 in flight goes, from the median p50s of the first table:",
        "| part | ms |",
        [
            f"| {label} | {sum(at1[d] for d in plus) - sum(at1[d] for d in minus):+.2f} |"
            for label, plus, minus in parts
        ],
    )


def table(title: str, header: str, lines: list[str]) -> None:
    """A titled Markdown table, or nothing when the run has no row for it (its drivers were
    not run)."""
    if not lines:
        return
    print()
    print(title)
    print()
    print(header)
    print("|" + "---|" * header.count(" | ") + "---|")
    for line in lines:
        print(line)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=500, help="timed calls per cell")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of every cell")
    parser.add_argument(
        "--max-concurrency", type=int, default=None, help="passed to serve (default: its own)"
    )
    parser.add_argument(
        "--quiet", type=float, default=10.0, help="others' CPU %% a cell should stay under"
    )
    parser.add_argument(
        "--patience", type=float, default=20.0, help="seconds to wait for a quiet machine"
    )
    parser.add_argument("--attempts", type=int, default=3, help="runs of a disturbed cell")
    parser.add_argument(
        "--base",
        type=Path,
        default=None,
        help="a folder holding another mcp_toolbridge, served by the toolbridge/base driver",
    )
    parser.add_argument(
        "--cpu",
        choices=("cgroup", "tree"),
        default="cgroup",
        help="count the servers' CPU in a cgroup each (root; the default where possible) or "
        "from the process tree",
    )
    parser.add_argument(
        "--drivers",
        type=lambda text: tuple(d for d in DRIVERS if d in text.split(",")),
        default=DRIVERS,
        help="a comma-separated subset of the drivers (default: all)",
    )
    parser.add_argument(
        "--concurrency",
        type=lambda text: tuple(int(n) for n in text.split(",")),
        default=CONCURRENCY,
        help="calls in flight per cell, comma-separated (default 1,8,32)",
    )
    args = parser.parse_args()
    quiet = Quiet(args.quiet, args.patience, max(1, args.attempts))
    rows: dict[tuple[str, int], list[Cell]] = {}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench = Bench(folder, make_catalog(folder), args.calls, args.max_concurrency)
        bench.cpu_source = args.cpu
        bench.base = str(args.base.resolve()) if args.base is not None else None
        for rep in range(args.reps):
            turn = rep % len(args.drivers)
            order = args.drivers[turn:] + args.drivers[:turn]
            for inflight in args.concurrency:
                for driver in order:
                    cell = await bench.run(driver, inflight, quiet)
                    rows.setdefault((driver, inflight), []).append(cell)
                    print(
                        f"rep {rep + 1} {driver} x{inflight}: p50 {cell.p50:.2f} ms, "
                        f"{cell.rate:.0f}/s, {cell.cpu_ms:.2f} ms CPU/call, "
                        f"others {cell.others * 100:.0f} %",
                        file=sys.stderr,
                    )
        bench.errlog.close()
        report(rows, args, bench)
    disturbed = sum(c.others * 100 > args.quiet for cells in rows.values() for c in cells)
    print()
    print(
        f"{disturbed} of {sum(len(c) for c in rows.values())} cells kept above {args.quiet:g} % "
        f"others; the run took {time.monotonic() - started:.0f} s"
    )


if __name__ == "__main__":
    anyio.run(main)
