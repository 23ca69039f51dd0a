"""Server start-up as a client sees it: spawn -> initialized -> first tools/list answered.

    .venv/bin/python benchmarks/startup.py [PATH ...] [--reps 5]

Rows, each a fresh process per repetition, timed with the SDK `Client` over stdio (the
client's own start is in every row alike):

- sdk-server: benchmarks/sdk_server.py, a hand-written SDK low-level server with one tool: the
  baseline, what importing the SDK and starting its server costs;
- toolbridge (bundled): `python -m mcp_toolbridge serve --no-audit` with the bundled manifests,
  warm (its start-up cache filled by an untimed start first) and cold (`--no-index-cache`);
- toolbridge PATH: the same serving each PATH given (e.g. a catalog made by catalog_gen.py),
  cold (loading, validating and indexing it) and warm (from the start-up cache);
- with ``--base DIR`` (a folder holding another ``mcp_toolbridge``, e.g. ``git archive REV
  mcp_toolbridge | tar -x -C DIR``), the bundled rows again served from that code: before and
  after a change, in the same run.

The servers' cache folder is a temporary one (``TOOLBRIDGE_CACHE_DIR``), filled before the
first repetition; the user's own cache is never touched. Cells show the median over
repetitions with [min-max]; repetitions rotate the row order. "CPU s" is the CPU the server
(and any process it started) had used when its first ``tools/list`` answer arrived, read from
``/proc`` (benchmarks/cpu_meter.py, the process tree): on a shared machine the wall times move
with the load, the CPU far less.

With ``--first-call``, each session then calls one tool (the hand-written server's echo, the
bundled catalog's word_count, which runs a process in the sandbox) and "first call s" is the
time from spawn to that answer: a warm start answers its opening from the start-up cache
while its modules are still importing (cache/front.py), and this shows what a call right
after waits for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.cpu_meter import tree_cpu

ROOT = Path(__file__).resolve().parent.parent
SDK_SERVER = Path(__file__).with_name("sdk_server.py")


Row = tuple[list[str], str]
"""A server's arguments and the PYTHONPATH it runs with."""


Start = tuple[float, float, int, float, float]
"""Seconds to initialized, seconds to the first tools/list, tools listed, CPU seconds, seconds
to the first call's answer (0: not called)."""
FIRST_CALLS = {"echo_json": {}, "word_count": {"text": "one two"}}
"""The tool a --first-call session calls, whichever of these it lists."""


async def start_once(row: Row, quiet: TextIO, cwd: str, call: bool = False) -> Start:
    args, pythonpath = row
    env = {k: os.environ[k] for k in ("PATH", "HOME", "TOOLBRIDGE_CACHE_DIR") if k in os.environ}
    env["PYTHONPATH"] = pythonpath
    # Started in a folder of their own: `python -m` puts the working directory first on
    # sys.path, so started in this checkout every row would run this checkout's code.
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=cwd)
    begun = time.perf_counter()
    async with Client(stdio_client(params, errlog=quiet)) as client:
        ready = time.perf_counter() - begun
        tools = (await client.list_tools()).tools
        first_list = time.perf_counter() - begun
        cpu = tree_cpu(os.getpid(), include_root=False)
        first_call = 0.0
        callable_ = [t.name for t in tools if t.name in FIRST_CALLS]
        if call and callable_:
            result = await client.call_tool(callable_[0], FIRST_CALLS[callable_[0]])
            assert not result.is_error, result
            first_call = time.perf_counter() - begun
    return ready, first_list, len(tools), cpu, first_call


async def settled(cache: Path) -> None:
    """Wait for the cache writers a start forked to finish (no temporary file for 2 s)."""
    quiet_since = time.monotonic()
    deadline = quiet_since + 300
    while time.monotonic() < deadline:
        if any(await anyio.to_thread.run_sync(lambda: list(cache.glob("*.tmp")))):
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 2:
            return
        await anyio.sleep(0.2)


def span(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


async def measure(options: argparse.Namespace, quiet: TextIO, cwd: str) -> None:
    serve = ["-m", "mcp_toolbridge", "serve", "--no-audit"]
    cold = [*serve, "--no-index-cache"]
    here = str(ROOT)
    rows: dict[str, Row] = {
        "sdk-server": ([str(SDK_SERVER)], here),
        "toolbridge (bundled), warm": (serve, here),
        "toolbridge (bundled), cold": (cold, here),
    }
    if options.base is not None:
        base = str(options.base.resolve())
        rows["base: toolbridge (bundled), warm"] = (serve, base)
        rows["base: toolbridge (bundled), cold"] = (cold, base)
    for p in options.paths:
        rows[f"toolbridge {p}, cold"] = ([*cold, str(p.resolve())], here)
        rows[f"toolbridge {p}, warm"] = ([*serve, str(p.resolve())], here)
    for name, args in rows.items():  # fill the cache (and the page cache): not timed
        if name.endswith("warm"):
            await start_once(args, quiet, cwd)
            await settled(Path(os.environ["TOOLBRIDGE_CACHE_DIR"]))
    times: dict[str, list[Start]] = {name: [] for name in rows}
    names = list(rows)
    for rep in range(options.reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            times[name].append(await start_once(rows[name], quiet, cwd, options.first_call))
    print(f"repetitions: {options.reps}; Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    print()
    called = " first call s |" if options.first_call else ""
    print(f"| server | initialized s | first tools/list s | CPU s | tools listed |{called}")
    print("|---|---|---|---|---|" + ("---|" if called else ""))
    for name, cells in times.items():
        ready = [c[0] for c in cells]
        listed = [c[1] for c in cells]
        cpu = [c[3] for c in cells]
        row = f"| {name} | {span(ready)} | {span(listed)} | {span(cpu)} | {cells[-1][2]} |"
        if called:
            row += f" {span([c[4] for c in cells])} |"
        print(row)
    print()
    print("first tools/list against the hand-written server's in the same repetition:")
    print()
    print("| server | ratio | difference s | CPU ratio | CPU difference s |")
    print("|---|---|---|---|---|")
    hand = times["sdk-server"]
    for name, cells in times.items():
        if name != "sdk-server":
            pairs = list(zip(cells, hand, strict=True))
            ratios = [c[1] / b[1] for c, b in pairs]
            diffs = [c[1] - b[1] for c, b in pairs]
            cpu_ratios = [c[3] / b[3] for c, b in pairs if b[3] > 0]
            cpu_diffs = [c[3] - b[3] for c, b in pairs]
            print(
                f"| {name} | {span(ratios)} | {span(diffs)} | {span(cpu_ratios or [0.0])} "
                f"| {span(cpu_diffs)} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("paths", nargs="*", type=Path, help="manifest files or folders to serve")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of every row")
    parser.add_argument(
        "--base", type=Path, default=None, help="a folder holding another mcp_toolbridge"
    )
    parser.add_argument(
        "--first-call", action="store_true", help="call a tool after the first list, timed"
    )
    options = parser.parse_args()
    with (
        open(os.devnull, "w", encoding="utf-8") as quiet,  # the servers' stderr
        tempfile.TemporaryDirectory(prefix="tb-startup-cache-") as cache,
        tempfile.TemporaryDirectory(prefix="tb-startup-cwd-") as cwd,
    ):
        os.environ["TOOLBRIDGE_CACHE_DIR"] = cache
        anyio.run(measure, options, quiet, cwd)


if __name__ == "__main__":
    main()
