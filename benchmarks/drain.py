"""The CPU of draining a finished tool's stdout, against one read per wait (the baseline).

A warm call's stdout drain waits for the pipe, reads the tool's answer and, when the tool has
exited by then, finds the pipe's end. ``executors.streams.drain`` reads once more before
waiting again, so that end costs no second wait; the baseline here is the loop it replaced
(wait, read, wait, read), run in the same process on the same loop. Each drain gets a fresh
pipe holding one short answer with its writing end closed, as a trivial tool leaves it.

    PYTHONPATH=. .venv/bin/python benchmarks/drain.py [--drains 20000] [--reps 5] \
        [--loop uvloop|asyncio]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Awaitable, Callable

import anyio

from mcp_toolbridge.executors.streams import READ_SIZE, Sink, drain

ANSWER = b'{"ok": true}\n'


async def one_read_per_wait(fd: int, sink: Sink) -> None:
    """The baseline: the drain before it read once more."""
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, READ_SIZE)
        except BlockingIOError:
            continue
        if not chunk:
            return
        sink.take(chunk)


async def product(fd: int, sink: Sink) -> None:
    await drain(fd, sink)


async def cpu_per_drain(way: Callable[[int, Sink], Awaitable[None]], drains: int) -> float:
    """Microseconds of this thread's CPU per drain, pipe set-up included."""
    start = time.thread_time()
    for _ in range(drains):
        read, write = os.pipe()
        os.set_blocking(read, False)
        os.write(write, ANSWER)
        os.close(write)
        sink = Sink(1 << 20, keep_tail=False)
        await way(read, sink)
        os.close(read)
        assert bytes(sink.data) == ANSWER
    return (time.thread_time() - start) / drains * 1e6


async def run(drains: int, reps: int) -> None:
    ways = {"one read per wait (baseline)": one_read_per_wait, "streams.drain": product}
    best = {name: float("inf") for name in ways}
    for _ in range(reps):  # interleaved, so that drift reaches both alike
        for name, way in ways.items():
            best[name] = min(best[name], await cpu_per_drain(way, drains))
    base = best["one read per wait (baseline)"]
    print(f"{drains} drains x {reps} repetitions (least of the repetitions)\n")
    print("| way | µs of CPU a drain | ratio |")
    print("|---|---|---|")
    for name, value in best.items():
        print(f"| {name} | {value:.1f} | {value / base:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--drains", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--loop", choices=("uvloop", "asyncio"), default="uvloop")
    args = parser.parse_args()
    options = {"use_uvloop": args.loop == "uvloop"}
    anyio.run(run, args.drains, args.reps, backend_options=options)


if __name__ == "__main__":
    main()
