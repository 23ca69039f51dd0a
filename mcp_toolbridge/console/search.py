"""The console's search box: the query goes to the index tool_search serves (the same
ranking a model gets), and each hit comes back with its evidence, leg by leg
(:func:`~mcp_toolbridge.catalog.explain`). Ranking runs in a worker thread: a big catalog's
first search reads the semantic model, and nothing may hold the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import anyio.to_thread

from mcp_toolbridge.builtins import BuiltinExecutor, ToolSearch
from mcp_toolbridge.catalog import Explained, explain
from mcp_toolbridge.console.views import Serving

MAX_HITS = 10


@dataclass(frozen=True, slots=True)
class Hit:
    evidence: Explained
    description: str


@dataclass(frozen=True, slots=True)
class Found:
    """What a search found, or why it could not run."""

    hits: tuple[Hit, ...] = ()
    problem: str | None = None


class Searcher:
    def __init__(self, serving: Serving) -> None:
        self._serving = serving

    async def search(self, query: str) -> Found:
        bridge = self._serving.bridge
        builtins = bridge.executor("builtin")
        tool = (
            builtins.tool(ToolSearch.spec.name) if isinstance(builtins, BuiltinExecutor) else None
        )
        if not isinstance(tool, ToolSearch):
            return Found(problem="this server does not serve tool_search")
        index = await tool.index()
        found = await anyio.to_thread.run_sync(partial(explain, index, query, MAX_HITS))
        hits = []
        for evidence in found:
            entry = bridge.catalog.get(evidence.name)
            hits.append(Hit(evidence, entry.spec.description if entry else ""))
        return Found(tuple(hits))
