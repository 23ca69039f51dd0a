"""Loading a big catalog on two cores: a forked worker process loads manifests alongside this one.

Reading, parsing and validating manifests is pure Python work (≈ 120 µs a tool), so one
process uses one core. The files are cut into chunks of about equal size; the worker takes
chunks from the end, this process from the front, until they meet: each chunk this process
reaches is withdrawn from the worker first (a chunk the worker has begun cannot be), so both
stay busy to the end whatever the formats cost, and each of the worker's chunks comes back
pickled as soon as it is done (taking in a pickled tool costs ≈ 15 µs). The worker is used
where forking is safe (``forking.fork_allowed``) and for at least ``MIN_BYTES`` of manifests:
below that its start costs what it saves.

A worker that dies or whose result cannot be sent back changes nothing: its chunks are then
loaded here. An exception raised by loading itself is raised here as it would be in process.
"""

from __future__ import annotations

import logging
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from mcp_toolbridge.forking import before_fork, fork_allowed, in_child
from mcp_toolbridge.progress import Meter

log = logging.getLogger("mcp_toolbridge")

T = TypeVar("T")
LoadOne = Callable[[Path, str], T]
"""Load one manifest file (its path, and how problems name it): a LoadReport, or what a
caller keeps beside it (a cached load)."""

MIN_BYTES = 1_000_000
"""Manifests smaller than this in all (about 1,300 typical tools) load in process."""
CHUNKS = 64
"""At most this many chunks: few enough that handing them over costs little (≈ 0.2 ms each),
many enough that the last chunks, which decide who waits for whom, are small."""
FILE_COST = 2_500
"""What opening and checking one more file costs, in bytes of manifest that load in the same
time (an AgentPM agent.json of one tool takes as long as ≈ 3 KB of agentcli tools)."""


def _cost(path: Path) -> int:
    """The work of loading ``path``, in bytes: its size (a bundle's manifest.toml stands for
    the tools.json beside it) and ``FILE_COST``."""
    if path.name == "manifest.toml":
        path = path.with_name("tools.json")
    try:
        return path.stat().st_size + FILE_COST
    except OSError:
        return FILE_COST


def chunk(costs: Sequence[int]) -> list[range]:
    """Consecutive index ranges of about equal total cost, at most ``CHUNKS``; one range (no
    worker) when the total is below ``MIN_BYTES``."""
    total = sum(costs)
    if total < MIN_BYTES or len(costs) < 2:
        return [range(len(costs))]
    count = min(CHUNKS, len(costs))
    out: list[range] = []
    start = running = 0
    for i, cost in enumerate(costs):
        running += cost
        if running * count >= total * (len(out) + 1) and len(out) < count - 1:
            out.append(range(start, i + 1))
            start = i + 1
    out.append(range(start, len(costs)))
    return [r for r in out if r]


Tick = Callable[[int], None]
"""Called with the index (in ``files``) of each file this process finished."""


def _load_all(
    load_one: LoadOne[T],
    files: Sequence[tuple[Path, str]],
    first: int = 0,
    tick: Tick | None = None,
) -> list[T]:
    if tick is None:
        return [load_one(path, shown) for path, shown in files]
    out = []
    for i, (path, shown) in enumerate(files, first):
        out.append(load_one(path, shown))
        tick(i)
    return out


def _ticker(
    meter: Meter | None, costs: Sequence[int] | None, elsewhere: Callable[[], tuple[int, int]]
) -> Tick | None:
    """Progress per file done here; ``elsewhere()`` adds what the worker finished (asked only
    when a line is due)."""
    if meter is None:
        return None
    done = [0, 0]

    def tick(i: int) -> None:
        done[0] += 1
        done[1] += costs[i] if costs is not None else 1
        if meter.due():
            files, work = elsewhere()
            meter.update(done[0] + files, done[1] + work)

    return tick


def load_in_shares(
    files: Sequence[tuple[Path, str]], load_one: LoadOne[T], meter: Meter | None = None
) -> list[T]:
    """``load_one`` over ``files``, results in the order of ``files``; part of them in a
    forked worker when that is allowed and pays. ``meter`` shows the progress (files, and the
    work by bytes when the files were measured)."""
    costs = [_cost(path) for path, _ in files] if fork_allowed() else None
    if meter is not None and costs is not None:
        meter.total_work = float(sum(costs))
    chunks = chunk(costs) if costs is not None else []
    if len(chunks) < 2:
        return _load_all(load_one, files, 0, _ticker(meter, costs, lambda: (0, 0)))
    parts = [files[r.start : r.stop] for r in chunks]
    import multiprocessing  # a big load's: not imported by a start that loads in one process
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    before_fork()
    fork = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=1, mp_context=fork, initializer=in_child)
    try:
        # Submitted last chunk first: the worker works from the end.
        futures = [pool.submit(_load_all, load_one, part) for part in reversed(parts)][::-1]
    except (OSError, BrokenProcessPool) as exc:
        # Could not fork (out of processes or memory), or the worker died before every chunk
        # was handed over: nothing of it is used.
        pool.shutdown(cancel_futures=True)
        log.warning("loading the manifests in one process: no worker (%s)", exc)
        return _load_all(load_one, files, 0, _ticker(meter, costs, lambda: (0, 0)))
    done: list[list[T]] = []

    def in_worker() -> tuple[int, int]:
        assert costs is not None
        finished = [
            r for r, f in zip(chunks, futures, strict=True) if f.done() and not f.cancelled()
        ]
        return sum(map(len, finished)), sum(sum(costs[i] for i in r) for r in finished)

    tick = _ticker(meter, costs, in_worker)
    try:
        for r, part, future in zip(chunks, parts, futures, strict=True):
            if not future.cancel():
                break  # the worker has this chunk and every one after it
            done.append(_load_all(load_one, part, r.start, tick))
        for part, future in zip(parts[len(done) :], futures[len(done) :], strict=True):
            try:
                done.append(future.result())
            except (BrokenProcessPool, pickle.PickleError):
                done.append(_load_all(load_one, part))
    finally:
        pool.shutdown(cancel_futures=True)  # on an error here, the worker's chunks are moot
    return [report for reports in done for report in reports]
