"""Who is connected, for the sessions page: the server's edge reports its connections
(:class:`~mcp_toolbridge.host.Connected`); the console only lists them, newest activity
first. With several replicas each row names its replica (the replicas' shared state will
give this page every replica's rows; one process lists its own)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mcp_toolbridge.host import Connected


class Connections:
    """The connections the server reports, through ``source`` (none: an empty list)."""

    def __init__(self, source: Callable[[], Sequence[Connected]] | None = None) -> None:
        self._source = source

    def rows(self) -> list[Connected]:
        found = list(self._source()) if self._source is not None else []
        return sorted(found, key=lambda c: c.last, reverse=True)
