"""The State port in this process's memory: the default, for stdio and a single server.

Nothing is awaited inside a method, so each is atomic with respect to the event loop's other
tasks. An owner's entries live until :meth:`MemoryState.forget` (a session that ended) or the
end of the process; a person's state therefore lasts as long as the server.
"""

from __future__ import annotations

import copy
import json
import time
from collections import deque
from collections.abc import Sequence
from typing import Any

from mcp_toolbridge.state.port import UNKNOWN_CALL_USAGE, Admission, Grant, JsonValue, Usage


class MemoryState:
    """:class:`~mcp_toolbridge.state.port.State` in dictionaries, by owner."""

    def __init__(self) -> None:
        self._grants: dict[str, dict[Grant, None]] = {}
        self._usage: dict[str, dict[str, Usage]] = {}
        self._values: dict[str, dict[str, JsonValue]] = {}
        self._counters: dict[str, dict[str, int]] = {}
        self._hits: dict[str, dict[str, deque[float]]] = {}
        self._running: dict[str, dict[str, Usage]] = {}
        self._largest: dict[str, dict[str, Usage]] = {}

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

    async def hit(self, owner: str, counter: str, limit: int, window_s: float) -> float:
        now = time.monotonic()
        hits = self._hits.setdefault(owner, {}).setdefault(counter, deque())
        while hits and hits[0] <= now - window_s:
            hits.popleft()
        if len(hits) >= limit:
            return max(0.001, hits[0] + window_s - now) if hits else window_s
        hits.append(now)
        return 0.0

    async def admit(
        self, owner: str, tool: str, tokens: float | None, usd: float | None
    ) -> Admission:
        used = self._usage.get(owner, {}).get(tool, Usage())
        running = self._running.get(owner, {}).get(tool, Usage())
        total = used + running
        if (tokens is not None and total.tokens >= tokens) or (
            usd is not None and total.usd >= usd
        ):
            return Admission(False, used, running)
        held = self._largest.get(owner, {}).get(tool, UNKNOWN_CALL_USAGE)
        self._running.setdefault(owner, {})[tool] = running + held
        return Admission(True, used, running, held)

    async def settle(self, owner: str, tool: str, held: Usage, used: Usage | None) -> Usage:
        running = self._running.setdefault(owner, {})
        running[tool] = running.get(tool, Usage()) - held
        if used is None:
            return self._usage.get(owner, {}).get(tool, Usage())
        largest = self._largest.setdefault(owner, {})
        largest[tool] = largest.get(tool, Usage()).most(used)
        return await self.add_usage(owner, tool, used)

    async def forget(self, owner: str) -> None:
        for table in self._tables():
            table.pop(owner, None)

    def _tables(self) -> tuple[dict[str, Any], ...]:
        return (
            self._grants,
            self._usage,
            self._values,
            self._counters,
            self._hits,
            self._running,
            self._largest,
        )

    def owners(self) -> int:
        """How many owners have something kept (for tests and figures)."""
        return len({owner for table in self._tables() for owner in table})
