"""Who is connected, for the sessions page: the server's edge reports its connections
(:class:`~mcp_toolbridge.host.Connected`); the console only lists them, newest activity
first. Each row names its replica; with replicas sharing a Redis the page lists every live
replica's rows from their registry (replicated.py), one process its own."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import anyio

from mcp_toolbridge.host import Connected


class Connections:
    """The connections the server reports, through ``source`` (none: an empty list), and a
    change counter the live page waits on (with replicas: the registry changed)."""

    def __init__(self, source: Callable[[], Sequence[Connected]] | None = None) -> None:
        self._source = source
        self._changed = anyio.Event()
        self.version = 0

    def rows(self) -> list[Connected]:
        """This process's connections, newest activity first."""
        found = list(self._source()) if self._source is not None else []
        return sorted(found, key=lambda c: c.last, reverse=True)

    async def listing(self) -> list[Connected]:
        """What the page lists."""
        return self.rows()

    def touch(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def changed(self, seen: int) -> int:
        """Wait until the rows differ from version ``seen``; the new version."""
        while self.version == seen:
            await self._changed.wait()
        return self.version
