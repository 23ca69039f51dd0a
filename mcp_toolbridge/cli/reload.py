"""Watching manifests and the policy for changes (``serve --watch``).

Polling file metadata (mtime, size, inode) once a second: no extra dependency, the same on
every platform, and cheap for the catalogs this serves (a few thousand files at most). A
change is reported only once the files have been stable for one more interval, so an editor
writing a file in several steps causes one reload, not several.

What a reload did is also told to the clients that listen to log messages (MCP logging, the
``mcp-toolbridge`` logger): a reload applied (``notice``), refused with its problems
(``error``), and the tools it leaves out (``warning``), like the tools left out at start-up
(:func:`not_served`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import anyio
from anyio.abc import TaskStatus

from mcp_toolbridge.errors import Problem
from mcp_toolbridge.host import LogLevel
from mcp_toolbridge.runtime import LeftOut

if TYPE_CHECKING:
    from mcp_toolbridge.bridge import Bridge

log = logging.getLogger("mcp_toolbridge")

MAX_LINES_TOLD = 20
"""Problems or tools listed in one message to clients; the rest are counted."""
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".mypy_cache"})
MAX_FILES = 50_000

Fingerprint = frozenset[tuple[str, int, int, int]]


def _stat(path: Path) -> tuple[str, int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (str(path), st.st_mtime_ns, st.st_size, st.st_ino)


def fingerprint(paths: Sequence[Path]) -> Fingerprint:
    """Metadata of every file under ``paths`` (folders walked, bounded)."""
    seen: list[tuple[str, int, int, int]] = []
    for root in paths:
        if not root.is_dir():
            entry = _stat(root)
            seen.append(entry if entry else (str(root), -1, -1, -1))
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
            for name in sorted(files):
                entry = _stat(Path(folder) / name)
                if entry is not None:
                    seen.append(entry)
                if len(seen) >= MAX_FILES:
                    return frozenset(seen)
    return frozenset(seen)


async def changes(
    paths: Sequence[Path], baseline: Fingerprint, *, interval_s: float = 1.0
) -> AsyncIterator[None]:
    """Yield once per settled change of the files under ``paths`` since ``baseline``."""
    current = baseline
    while True:
        await anyio.sleep(interval_s)
        latest = await anyio.to_thread.run_sync(fingerprint, paths)
        if latest == current:
            continue
        while True:  # let a multi-step write settle
            await anyio.sleep(interval_s)
            settled = await anyio.to_thread.run_sync(fingerprint, paths)
            if settled == latest:
                break
            latest = settled
        current = latest
        yield


class Reloadable(Protocol):
    def watched_paths(self) -> list[Path]: ...

    async def reload(self) -> list[Problem]: ...

    @property
    def bridge(self) -> Bridge: ...

    @property
    def left_out(self) -> tuple[LeftOut, ...]: ...


class Publisher(Protocol):
    async def swap(self, bridge: Bridge) -> None: ...

    async def announce(self, level: LogLevel, text: str) -> None: ...


def _listed(head: str, lines: Sequence[str]) -> str:
    shown = list(lines[:MAX_LINES_TOLD])
    if len(lines) > MAX_LINES_TOLD:
        shown.append(f"... and {len(lines) - MAX_LINES_TOLD} more (mcp-toolbridge lint shows all)")
    return "\n".join([head, *shown])


def left_out_lines(left_out: Sequence[LeftOut]) -> list[str]:
    """One line per reason the policy leaves tools out: how many, a few names, the reason."""
    lines = []
    for reason, count, names in left_out:
        more = count - len(names)
        tail = f" and {more} more" if more > 0 else ""
        tools = f"{count} tool" if count == 1 else f"{count} tools"
        lines.append(f"not served: {tools} ({', '.join(names)}{tail}): {reason}")
    return lines


def not_served(errors: Sequence[Problem], left_out: Sequence[LeftOut]) -> str | None:
    """The message telling clients which tools are not served: the tools left out by their
    errors (``--skip-invalid``), then those the policy refuses whatever their arguments, one
    line per reason (a catalog restored from the start-up cache reads no record for this)."""
    lines = [problem.render() for problem in errors] + left_out_lines(left_out)
    if not lines:
        return None
    hidden = len(errors) + sum(count for _, count, _ in left_out)
    return _listed(f"{hidden} problem(s) leave tools out of what this server serves:", lines)


async def reload_on_change(
    runtime: Reloadable,
    server: Publisher,
    *,
    interval_s: float = 1.0,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run until cancelled: on every settled change, reload; swap in a valid catalog and
    announce it; keep the old one and log every problem otherwise. Reports started (for
    ``TaskGroup.start``) once the current state of the files is known."""
    paths = runtime.watched_paths()
    baseline = await anyio.to_thread.run_sync(fingerprint, paths)
    task_status.started()
    async for _ in changes(paths, baseline, interval_s=interval_s):
        await reload_once(runtime, server)


async def reload_once(runtime: Reloadable, server: Publisher) -> None:
    """Reload now (a change was seen, or another replica reloaded): swap in a valid catalog
    and announce it; keep the old one and log every problem otherwise."""
    problems = await runtime.reload()
    if problems:
        for problem in problems:
            log.error("reload: %s", problem.render())
        log.error("reload: %d problem(s); still serving the previous catalog", len(problems))
        head = f"reload refused: {len(problems)} problem(s); still serving the previous catalog"
        await server.announce("error", _listed(head, [p.render() for p in problems]))
        return
    await server.swap(runtime.bridge)
    log.warning("reload: serving %d tools", len(runtime.bridge.catalog))
    await server.announce("notice", f"reload: serving {len(runtime.bridge.catalog)} tools")
    left_out = not_served((), runtime.left_out)
    if left_out is not None:
        await server.announce("warning", left_out)
