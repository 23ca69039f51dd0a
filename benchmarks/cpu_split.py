"""Where a call's CPU goes, process by process: the client, the server, each warm sandbox's
zygote (its own CPU, and the tools it reaped), against the hand-written SDK server.

    .venv/bin/python benchmarks/cpu_split.py [--calls 1000] [--inflight 8] [--reps 2] [--base DIR]

For each server (``sdk/anchor``: benchmarks/sdk_server.py ``--anchor``, the performance
anchors' hand-written server; ``toolbridge``: ``python -m mcp_toolbridge serve`` with the
sandbox on, its default), alternated per repetition: a fresh server over stdio with the SDK
``Client``, 30 untimed calls (the warm sandboxes are made), then ``--calls`` calls of the
trivial exec tool of benchmarks/roundtrip.py with ``--inflight`` in flight. ``--base DIR``
adds ``toolbridge/base``: the same ``serve`` from another copy of the code (before and after
in one run). The CPU of every
live process under this one (``/proc/<pid>/stat``: utime, stime, and cutime + cstime, what
it reaped) is read before and after the timed calls; rows are ms per call. The client's CPU
is this process's. Processes of the same kind (the zygotes, bubblewrap) are summed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.cpu_meter import TICKS
from benchmarks.roundtrip import PAYLOAD, SDK_SERVER, make_catalog

ROOT = Path(__file__).resolve().parent.parent
Snapshot = dict[int, tuple[str, list[float]]]
"""pid: (kind, [utime, stime, cutime + cstime] seconds) of the live processes under this one."""


def _kind(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            words = file.read().split(b"\0")
    except OSError:
        return "gone"
    if os.path.basename(words[0]) == b"bwrap":  # its arguments name the zygote too
        return "bubblewrap"
    return "zygote" if any(w.endswith(b"/zygote.py") for w in words) else "server"


def snapshot() -> Snapshot:
    parents: dict[int, int] = {}
    times: dict[int, list[float]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as file:
                data = file.read()
        except OSError:
            continue
        rest = data[data.rindex(b")") + 2 :].split()
        ticks = [int(x) / TICKS for x in rest[11:15]]
        parents[int(name)] = int(rest[1])
        times[int(name)] = [ticks[0], ticks[1], ticks[2] + ticks[3]]
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: Snapshot = {}
    stack = list(children.get(os.getpid(), []))
    while stack:
        pid = stack.pop()
        found[pid] = (_kind(pid), times[pid])
        stack.extend(children.get(pid, []))
    return found


async def one(
    args: list[str],
    folder: Path,
    calls: int,
    inflight: int,
    quiet: TextIO,
    code: Path = ROOT,
) -> dict[str, float]:
    params = StdioServerParameters(
        command=sys.executable, args=args, cwd=str(folder), env={"PYTHONPATH": str(code)}
    )
    async with Client(stdio_client(params, errlog=quiet)) as client:
        await client.list_tools()
        for _ in range(30):
            await client.call_tool("echo_json", PAYLOAD)
        before = snapshot()
        own = time.process_time()
        begun = time.perf_counter()

        async def worker(count: int) -> None:
            for _ in range(count):
                await client.call_tool("echo_json", PAYLOAD)

        async with anyio.create_task_group() as tg:
            for _ in range(inflight):
                tg.start_soon(worker, calls // inflight)
        wall = time.perf_counter() - begun
        own = time.process_time() - own
        after = snapshot()
    done = calls // inflight * inflight
    rows: dict[str, float] = {"client": own}
    for pid, (kind, now) in after.items():
        was = before.get(pid, (kind, [0.0, 0.0, 0.0]))[1]
        used = [a - b for a, b in zip(now, was, strict=True)]
        for part, value in zip(("own user", "own system", "reaped"), used, strict=True):
            rows[f"{kind}: {part}"] = rows.get(f"{kind}: {part}", 0.0) + value
    per_call = {name: value * 1000 / done for name, value in rows.items()}
    return {**per_call, "calls/s": done / wall}


async def main(quiet: TextIO) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--inflight", type=int, default=8)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument(
        "--base",
        type=Path,
        help="another copy of the code (git archive main mcp_toolbridge manifests | tar -x -C "
        "DIR): a toolbridge/base column, the same serve from there",
    )
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="tb-cpu-split-"))
    tool = make_catalog(folder)
    audit = folder / "audit.jsonl"
    servers = {
        "sdk/anchor": [str(SDK_SERVER), "--anchor", str(tool)],
        "toolbridge": [
            "-m",
            "mcp_toolbridge",
            "serve",
            str(folder),
            "--audit",
            str(audit),
        ],
    }
    codes = dict.fromkeys(servers, ROOT)
    if options.base is not None:
        servers["toolbridge/base"] = servers["toolbridge"]
        codes["toolbridge/base"] = options.base.resolve()
    results: dict[str, list[dict[str, float]]] = {name: [] for name in servers}
    for rep in range(options.reps):
        turn = rep % len(servers)
        for name in list(servers)[turn:] + list(servers)[:turn]:
            results[name].append(
                await one(
                    servers[name], folder, options.calls, options.inflight, quiet, codes[name]
                )
            )
    print(f"{options.calls} calls, {options.inflight} in flight, {options.reps} repetitions; ")
    print(f"load average {os.getloadavg()[0]:.1f} at the end; ms of CPU per call, each repetition")
    print()
    names = sorted({key for runs in results.values() for run in runs for key in run})
    print("| process | " + " | ".join(servers) + " |")
    print("|---|" + "---|" * len(servers))
    for key in names:
        cells = [" / ".join(f"{run.get(key, 0.0):.2f}" for run in results[s]) for s in servers]
        print(f"| {key} | " + " | ".join(cells) + " |")
    totals = [
        " / ".join(f"{sum(v for k, v in run.items() if k != 'calls/s'):.2f}" for run in results[s])
        for s in servers
    ]
    print("| **all, client included** | " + " | ".join(totals) + " |")


if __name__ == "__main__":
    with open(os.devnull, "w", encoding="utf-8") as devnull:  # the servers' stderr
        anyio.run(main, devnull)
