"""The console of one replica among several sharing a Redis (``serve --http --state
redis://… --console``): whichever replica serves a person's page, it shows the whole service.

- **Approvals** (:class:`SharedDesk`): a headless call still waits on its own replica, as
  on one process (desk.py), and its question is also posted in Redis for every console; an
  answer given on any replica is taken there once, atomically (a second answer, one for a
  question whose wait ended, or one whose replica's lease lapsed, is refused), and reaches
  the waiting replica over the console channel (pub/sub), or, had it missed the message, when
  its wait ends (an answer taken in time counts). Questions of a dead replica are never
  listed. When Redis does not answer, a headless call is refused at once (fail closed).
- **Timeline** (:class:`SharedFeed`): each replica appends its calls' audit records (the
  audit log's own, redacted) to one bounded Redis stream, from a queue so a call never waits
  for Redis, and every replica follows the stream (``XREAD BLOCK``), so each timeline, its
  filters and its chart hold every replica's calls, with the replica that ran each.
- **Sessions** (:class:`SharedConnections`): each replica writes its connections to Redis
  every :data:`REGISTRY_S` with a TTL of a few seconds, and the page lists the rows of the
  replicas whose lease is alive: a dead replica's sessions leave the page within seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio
from anyio.abc import TaskStatus

from mcp_toolbridge.bridge import AuditRecord, CallOutcome, record_of
from mcp_toolbridge.console.desk import NOTHING_WAITS, Desk, Waiting
from mcp_toolbridge.console.feed import WINDOW_S, AuditFeed, epoch
from mcp_toolbridge.console.sessions import Connections
from mcp_toolbridge.host import Answer, CallContext, Caller, Confirmation, Connected, CouldNotAsk
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.state import AuditEntry, ConsoleShare, StateUnavailable

log = logging.getLogger("mcp_toolbridge")

REGISTRY_S = 1.0
"""How often a replica writes its connections (and reads everyone's, for the live page)."""
REGISTRY_TTL_S = 3.0
BLOCK_S = 1.0
"""How long one read of the audit stream waits for a new record."""
RETRY_S = 1.0
OUTBOX = 1000
"""Audit records waiting to be written to Redis; past that, kept on this replica only."""
MAX_FORM_S = 24 * 3600.0
_REPLICA = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def _caller_json(caller: Caller, *, full: bool = False) -> dict[str, Any]:
    facts: dict[str, Any] = {
        "subject": caller.subject,
        "client_id": caller.client_id,
        "issuer": caller.issuer,
    }
    if full:  # who the catalog page shows the policy for: groups and scopes matter there
        facts |= {"groups": sorted(caller.groups), "scopes": sorted(caller.scopes)}
    return facts


def _caller(facts: Any) -> Caller:
    if not isinstance(facts, dict):
        return Caller()

    def text(name: str) -> str | None:
        value = facts.get(name)
        return value if isinstance(value, str) else None

    def names(name: str) -> frozenset[str]:
        value = facts.get(name)
        return frozenset(str(v) for v in value) if isinstance(value, list) else frozenset()

    return Caller(
        subject=text("subject"),
        client_id=text("client_id"),
        issuer=text("issuer"),
        groups=names("groups"),
        scopes=names("scopes"),
    )


def waiting_json(waiting: Waiting) -> dict[str, Any]:
    """What every console shows of a question (redacted as the page shows it)."""
    about = None
    if (a := waiting.about) is not None:
        about = dataclasses.asdict(a) | {"caller": _caller_json(a.caller)}
    return {
        "id": waiting.id,
        "replica": waiting.replica,
        "since": waiting.since,
        "message": waiting.message if about is None else "",
        "schema": waiting.schema,
        "about": about,
        "caller": _caller_json(waiting.caller),
    }


def waiting_from(entry: Mapping[str, Any]) -> Waiting | None:
    """A question as another replica posted it; None when it is not one."""
    try:
        about = None
        if isinstance(raw := entry.get("about"), dict):
            about = Confirmation(**(raw | {"caller": _caller(raw.get("caller"))}))
        return Waiting(
            str(entry["id"]),
            about,
            float(entry["since"]),
            str(entry.get("message") or ""),
            dict(entry.get("schema") or {}),
            replica=str(entry["replica"]),
            caller=about.caller if about is not None else _caller(entry.get("caller")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _answer_json(answer: Answer) -> dict[str, Any]:
    return {"action": answer.action, "content": answer.content, "by": answer.by}


def _answer(given: Any) -> Answer | None:
    if not isinstance(given, dict) or given.get("action") not in ("accept", "decline", "cancel"):
        return None
    content = given.get("content")
    by = given.get("by")
    return Answer(
        given["action"],
        content if isinstance(content, dict) else None,
        by=by if isinstance(by, str) else None,
    )


class SharedDesk(Desk):
    """The desk of one replica, showing and answering every replica's questions."""

    def __init__(self, share: ConsoleShare, replica: str) -> None:
        super().__init__()
        self.share = share
        self.replica = replica

    def _new_id(self) -> str:
        return f"{self.replica}.{secrets.token_urlsafe(12)}"

    async def _posted(self, waiting: Waiting) -> None:
        wait_s = waiting.about.wait_s if waiting.about is not None else MAX_FORM_S
        try:
            await self.share.post(self.replica, waiting.id, waiting_json(waiting), wait_s)
        except StateUnavailable as exc:
            raise CouldNotAsk(
                f"the console could not show the question to the other replicas: {exc.reason}"
            ) from exc

    async def _closed(self, waiting: Waiting) -> Answer | None:
        try:
            return _answer(await self.share.close(self.replica, waiting.id))
        except StateUnavailable as exc:
            log.warning("a question stays listed until its entry expires: %s", exc.reason)
            return None

    async def listing(self) -> list[Waiting]:
        try:
            found = [waiting_from(e) for e in await self.share.waiting()]
        except StateUnavailable:
            return list(self)  # this replica's own, while Redis does not answer
        return sorted((w for w in found if w is not None), key=lambda w: w.since)

    async def count(self) -> int:
        return len(await self.listing())

    async def find(self, waiting_id: str) -> Waiting | None:
        replica = waiting_id.split(".", 1)[0]
        if not _REPLICA.match(replica):
            return None
        try:
            entry = await self.share.question(replica, waiting_id)
        except StateUnavailable:
            return None
        return waiting_from(entry) if entry is not None else None

    async def give(self, waiting: Waiting, answer: Answer) -> str | None:
        try:
            taken = await self.share.answer(waiting.replica, waiting.id, _answer_json(answer))
        except StateUnavailable as exc:
            return f"The answer was not given: {exc.reason}. Try again."
        if taken == -1:
            return (
                f"The replica running this call ({waiting.replica}) stopped: the call is gone, "
                "so there is nothing to answer."
            )
        if taken != 1:
            return NOTHING_WAITS
        self.heard({"k": "answer", "id": waiting.id, "a": _answer_json(answer)})
        return None

    def heard(self, message: Mapping[str, Any]) -> None:
        """A message of the console channel: an answer for a call waiting here, or a
        question came or went somewhere."""
        if message.get("k") == "answer":
            local = self._waiting.get(str(message.get("id")))
            answer = _answer(message.get("a"))
            if local is not None and local.answer is None and answer is not None:
                self._answered(local, answer)
        self.touch()

    async def recover(self) -> None:
        """Answers given while this replica did not hear the channel."""
        for waiting in list(self._waiting.values()):
            if waiting.answer is None:
                answer = _answer(await self.share.given(waiting.id))
                if answer is not None:
                    self._answered(waiting, answer)
        self.touch()


class SharedFeed(AuditFeed):
    """The timeline of every replica's calls, from the shared audit stream."""

    shared = True

    def __init__(self, share: ConsoleShare, replica: str) -> None:
        super().__init__()
        self.share = share
        self.replica = replica
        self._outbox_in, self._outbox = anyio.create_memory_object_stream[
            tuple[AuditRecord, dict[str, Any]]
        ](OUTBOX)
        self._warned = False

    async def observe(
        self, spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        record = record_of(spec, ctx, outcome)
        who = {
            "caller": _caller_json(ctx.caller, full=True),
            "owner": ctx.owner,
            "budget": ctx.budget_scope,
        }
        try:
            self._outbox_in.send_nowait((record, who))
        except anyio.WouldBlock:  # Redis is behind: this replica's timeline keeps it
            self._keep(record, self.replica, who)

    def history(self, path: Any, now: float) -> int:
        """The shared stream is the history (read by :meth:`follow`), not this file."""
        return 0

    def _keep(self, record: AuditRecord, replica: str, who: Mapping[str, Any]) -> None:
        entry = self.add(record, replica)
        owner, budget = who.get("owner"), who.get("budget")
        if isinstance(owner, str) and isinstance(budget, str):
            self.remember(entry.caller, _caller(who.get("caller")), owner, budget)

    def _take(self, entry: AuditEntry, now: float | None = None) -> None:
        try:
            record = AuditRecord.model_validate_json(entry.record)
        except ValueError:
            return  # written by another version: skipped, as the log's history does
        if now is None or now - epoch(record.ts) < WINDOW_S:
            self._keep(record, entry.replica, entry.who)

    async def push(self) -> None:
        """Write this replica's records to the stream, in order."""
        async for record, who in self._outbox:
            line = record.model_dump_json(by_alias=True).encode()
            try:
                await self.share.append_audit(self.replica, line, who)
                self._warned = False
            except StateUnavailable as exc:
                if not self._warned:
                    log.warning("the timeline of other replicas misses calls: %s", exc.reason)
                    self._warned = True
                self._keep(record, self.replica, who)

    async def follow(self) -> None:
        """Read the stream: its last hour first, then each record as it is appended."""
        last: str | None = None
        while True:
            try:
                if last is None:
                    tail = await self.share.audit_tail()
                    now = time.time()
                    for entry in tail:
                        self._take(entry, now)
                    last = tail[-1].id if tail else "0-0"
                for entry in await self.share.audit_after(last, BLOCK_S):
                    self._take(entry)
                    last = entry.id
            except StateUnavailable:
                await anyio.sleep(RETRY_S)


def _connected(row: Any) -> Connected | None:
    if not isinstance(row, dict):
        return None
    names = {f.name for f in dataclasses.fields(Connected)}
    try:
        return Connected(**{k: v for k, v in row.items() if k in names})
    except TypeError:
        return None


class SharedConnections(Connections):
    """Who is connected to any live replica, from the registry in Redis."""

    def __init__(
        self,
        source: Callable[[], Sequence[Connected]] | None,
        share: ConsoleShare,
        replica: str,
        *,
        on_replicas: Callable[[], None] = lambda: None,
    ) -> None:
        """``on_replicas``: told when the set of live replicas changed (their questions
        come or go with them)."""
        super().__init__(source)
        self.share = share
        self.replica = replica
        self._on_replicas = on_replicas
        self._seen = ""
        self._live: list[str] = []

    async def listing(self) -> list[Connected]:
        try:
            found = [_connected(row) for row in await self.share.connections()]
        except StateUnavailable:
            return self.rows()  # this replica's own, while Redis does not answer
        rows = [c for c in found if c is not None]
        return sorted(rows, key=lambda c: c.last, reverse=True)

    async def publish(self) -> None:
        """Write this replica's rows every :data:`REGISTRY_S`; tell the live page when the
        service's rows changed."""
        while True:
            rows = [dataclasses.asdict(c) for c in self.rows()]
            live = self._live
            try:
                await self.share.put_connections(self.replica, rows, REGISTRY_TTL_S)
                listed = await self.share.connections()
                live = await self.share.live()
            except StateUnavailable:
                listed = rows
            if live != self._live:
                self._live = live
                self._on_replicas()
            seen = hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()
            if seen != self._seen:
                self._seen = seen
                self.touch()
            await anyio.sleep(REGISTRY_S)


class Replicated:
    """The console's background work on a replica: the channel, the stream, the registry."""

    def __init__(self, desk: SharedDesk, feed: SharedFeed, connections: SharedConnections) -> None:
        self.desk = desk
        self.feed = feed
        self.connections = connections

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            await self.desk.share.clear(self.desk.replica)
        except StateUnavailable:
            pass
        async with anyio.create_task_group() as group:
            group.start_soon(self._listen)
            group.start_soon(self.feed.push)
            group.start_soon(self.feed.follow)
            group.start_soon(self.connections.publish)
            task_status.started()

    async def _listen(self) -> None:
        while True:
            try:
                async with self.desk.share.messages() as messages:
                    await self.desk.recover()
                    async for message in messages:
                        self.desk.heard(message)
            except StateUnavailable:
                await anyio.sleep(RETRY_S)
