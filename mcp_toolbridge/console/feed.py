"""The audit stream as the console sees it: every finished call's audit record, kept for the
last hour (at most :data:`MAX_RECORDS`), filtered for the timeline, summed per minute for
the chart, and a change counter the live pages wait on.

It is one more observer of :class:`~mcp_toolbridge.bridge.Bridge` beside the audit log,
building the same record (``record_of``), so the page never shows what the log would not
write: arguments never, argv and URLs redacted, environment variables by name.
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge.bridge import AuditRecord, CallOutcome, record_of
from mcp_toolbridge.console.views import Someone
from mcp_toolbridge.host import CallContext, Caller, visible
from mcp_toolbridge.model import ToolSpec

MAX_RECORDS = 10_000
WINDOW_S = 3600.0
"""The chart's span: the last hour, one bar per minute."""
MINUTES = 60
MAX_PEOPLE = 1000
MAX_HISTORY_BYTES = 4 * 1024 * 1024
"""How much of the audit log's end :meth:`AuditFeed.history` reads at start."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One call on the timeline: its sequence number, when it ended, its audit record, and
    the replica that ran it ("" with no replicas)."""

    seq: int
    at: float
    """Seconds since the epoch."""
    record: AuditRecord
    replica: str = ""

    @property
    def caller(self) -> str:
        """Who called, as the timeline shows and filters it."""
        r = self.record
        if r.subject and r.client_id:
            return f"{r.subject} ({r.client_id})"
        return r.subject or (f"client {r.client_id}" if r.client_id else "local")


@dataclass(frozen=True, slots=True)
class Filter:
    """What the timeline shows: calls of ``tool``, with ``outcome``, by ``caller``, on
    ``replica`` (each empty: any)."""

    tool: str = ""
    outcome: str = ""
    caller: str = ""
    replica: str = ""

    @classmethod
    def of(cls, query: Mapping[str, str]) -> Filter:
        return cls(
            tool=query.get("tool", "").strip()[:200],
            outcome=query.get("outcome", "").strip()[:40],
            caller=query.get("caller", "").strip()[:200],
            replica=query.get("replica", "").strip()[:63],
        )

    @property
    def any(self) -> bool:
        """Whether anything is filtered out."""
        return bool(self.tool or self.outcome or self.caller or self.replica)

    def keeps(self, entry: Entry) -> bool:
        r = entry.record
        if self.tool and self.tool not in (r.tool, r.via):
            return False
        if self.outcome and self.outcome != r.outcome.value:
            return False
        if self.replica and self.replica != entry.replica:
            return False
        return not self.caller or self.caller in (entry.caller, visible(entry.caller))


@dataclass(frozen=True, slots=True)
class Minute:
    """One bar of the chart: calls that ended in that minute and their latency."""

    start: float
    calls: int
    p50_ms: float | None
    p95_ms: float | None


def percentile(values: list[float], share: float) -> float | None:
    """The nearest-rank percentile (``share`` 0.5 for p50) of ``values``; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(share * len(ordered)))
    return ordered[rank - 1]


class AuditFeed:
    """The recent audit records, newest last."""

    shared = False
    """True when the records are every replica's (replicated.py)."""

    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        self._entries: deque[Entry] = deque(maxlen=max_records)
        self._changed = anyio.Event()
        self.version = 0
        self.people: dict[str, Someone] = {}
        """Each caller seen, by the label the timeline shows (the catalog page's choices)."""

    async def observe(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        """The Bridge observer: add the call's record, and remember its caller."""
        entry = self.add(record_of(spec, ctx, outcome))
        self.remember(entry.caller, ctx.caller, ctx.owner, ctx.budget_scope)

    def remember(self, label: str, caller: Caller, owner: str, budget_owner: str) -> None:
        if label in self.people or len(self.people) < MAX_PEOPLE:
            self.people[label] = Someone(label, caller, owner, budget_owner)

    def history(self, path: Path, now: float) -> int:
        """Fill the feed with the last hour of the audit log at ``path`` (its last
        :data:`MAX_HISTORY_BYTES`; lines this version cannot read are skipped), so a restart
        keeps the timeline. Blocking file I/O: run it in a worker thread. How many were read."""
        try:
            with path.open("rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(0, size - MAX_HISTORY_BYTES))
                tail = log.read(MAX_HISTORY_BYTES)
        except OSError:
            return 0
        lines = tail.split(b"\n")
        if size > MAX_HISTORY_BYTES:
            lines = lines[1:]  # the first may be cut
        read = 0
        for line in lines:
            try:
                record = AuditRecord.model_validate_json(line)
            except ValueError:
                continue
            if now - epoch(record.ts) < WINDOW_S:
                self.add(record)
                read += 1
        return read

    def add(self, record: AuditRecord, replica: str = "") -> Entry:
        at = epoch(record.ts)
        self.version += 1
        entry = Entry(self.version, at, record, replica)
        self._entries.append(entry)
        self._changed.set()
        self._changed = anyio.Event()
        return entry

    async def changed(self, seen: int) -> int:
        """Wait until a record newer than version ``seen`` arrives; the new version."""
        while self.version == seen:
            await self._changed.wait()
        return self.version

    def entries(self, keep: Filter = Filter(), limit: int = 200) -> list[Entry]:
        """The newest ``limit`` entries ``keep`` lets through, newest first."""
        found: list[Entry] = []
        for entry in reversed(self._entries):
            if keep.keeps(entry):
                found.append(entry)
                if len(found) >= limit:
                    break
        return found

    def callers(self) -> list[str]:
        return sorted({e.caller for e in self._entries})

    def tools(self) -> list[str]:
        return sorted({e.record.tool for e in self._entries})

    def replicas(self) -> list[str]:
        return sorted({e.replica for e in self._entries if e.replica})

    def recent(self, now: float, keep: Filter = Filter()) -> Iterable[Entry]:
        return (e for e in self._entries if now - e.at < WINDOW_S and keep.keeps(e))

    def minutes(self, now: float, keep: Filter = Filter()) -> list[Minute]:
        """The last hour, one :class:`Minute` per minute, oldest first."""
        first = (math.floor(now / 60.0) - (MINUTES - 1)) * 60.0
        latencies: list[list[float]] = [[] for _ in range(MINUTES)]
        for entry in self.recent(now, keep):
            slot = int((entry.at - first) // 60.0)
            if 0 <= slot < MINUTES:
                latencies[slot].append(entry.record.ms)
        return [
            Minute(first + 60.0 * i, len(ms), percentile(ms, 0.5), percentile(ms, 0.95))
            for i, ms in enumerate(latencies)
        ]


def epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
