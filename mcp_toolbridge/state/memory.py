"""The State port in this process's memory: the default, for stdio and a single server.

Nothing is awaited inside a method, so each is atomic with respect to the event loop's other
tasks. An owner's entries live until :meth:`MemoryState.forget` (a session that ended) or the
end of the process; a person's state therefore lasts as long as the server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence

from mcp_toolbridge.state.port import Grant, JsonValue, Usage


class MemoryState:
    """:class:`~mcp_toolbridge.state.port.State` in dictionaries, by owner."""

    def __init__(self) -> None:
        self._grants: dict[str, dict[Grant, None]] = {}
        self._usage: dict[str, dict[str, Usage]] = {}
        self._values: dict[str, dict[str, JsonValue]] = {}
        self._counters: dict[str, dict[str, int]] = {}

    async def grants(self, owner: str) -> tuple[Grant, ...]:
        return tuple(self._grants.get(owner, ()))

    async def add_grants(self, owner: str, grants: Sequence[Grant]) -> None:
        kept = self._grants.setdefault(owner, {})
        kept.update(dict.fromkeys(grants))

    async def usage(self, owner: str, tool: str) -> Usage:
        return self._usage.get(owner, {}).get(tool, Usage())

    async def add_usage(self, owner: str, tool: str, usage: Usage) -> Usage:
        sums = self._usage.setdefault(owner, {})
        total = sums[tool] = sums.get(tool, Usage()) + usage
        return total

    async def load(self, owner: str, name: str) -> JsonValue | None:
        value = self._values.get(owner, {}).get(name)
        return copy.deepcopy(value)

    async def save(self, owner: str, name: str, value: JsonValue) -> None:
        json.dumps(value)  # what a shared store could not keep is refused here too
        self._values.setdefault(owner, {})[name] = copy.deepcopy(value)

    async def take(self, owner: str, counter: str, limit: int) -> bool:
        counts = self._counters.setdefault(owner, {})
        used = counts.get(counter, 0)
        if used >= limit:
            return False
        counts[counter] = used + 1
        return True

    async def forget(self, owner: str) -> None:
        for table in (self._grants, self._usage, self._values, self._counters):
            table.pop(owner, None)

    def owners(self) -> int:
        """How many owners have something kept (for tests and figures)."""
        return len({*self._grants, *self._usage, *self._values, *self._counters})
