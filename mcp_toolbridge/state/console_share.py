"""What the web console of every replica shares in Redis, so a person's page shows the whole
service whichever replica serves it: the questions waiting for a person (and their answers,
given once), the audit records of every replica's calls, who is connected where, the
one-time sign-in passes and the browser sign-ins completed.

Keys (under the prefix, ``tb:`` by default; a single Redis, as for the rest of shared.py):

- ``desk:NAME``: hash, the questions waiting on replica NAME (id -> JSON), each removed when
  its wait ends or when it is answered; the hash expires after the longest wait posted, so a
  dead replica leaves nothing behind for long;
- ``answer:ID``: string, the answer given for question ID (JSON), until its replica collects
  it (a TTL bounds it);
- ``audit``: stream of audit records, at most :data:`AUDIT_MAX` (approximately: trimmed as it
  grows), fields ``r`` the replica, ``a`` the record (JSON, as the audit log writes it:
  redacted), ``w`` who called (JSON: the caller's identity facts, never a credential);
- ``conns:NAME``: string, replica NAME's connections (JSON list), with a short TTL it renews;
- ``console:pass:DIGEST``: string, who a one-time sign-in pass stands for (its SHA-256);
- ``console:login:DIGEST``: string, a browser sign-in completed (its ``state``'s SHA-256),
  until the attempt's deadline: the same callback again is refused;
- channel ``console``: JSON ``{"k": "desk"}`` (a question came or went) and
  ``{"k": "answer", "id": ID, "a": ANSWER}`` (the waiting replica takes it).

Liveness is the replicas' lease (``replica:NAME``, ``replicas``: shared.py): questions and
connections of a replica whose lease lapsed are never listed, and an answer for a question of
such a replica is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp_toolbridge.state.redis_client import RedisLink, Reply, json_value, text, texts

AUDIT_MAX = 10_000
"""Audit records the stream keeps (every replica's together)."""
ANSWER_TTL_MS = 10 * 60 * 1000
"""How long an answer waits for its replica to collect it."""
DESK_TTL_MARGIN_MS = 60_000
MAX_WAIT_MS = 24 * 3600 * 1000
"""The longest a question's entry is kept (a question tool's form waits as long as its call)."""

_LIVE_HASHES = """
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. 'replica:' .. name) == 1 then
    for _, v in ipairs(redis.call('HVALS', ARGV[1] .. ARGV[2] .. name)) do out[#out + 1] = v end
  end
end
return out
"""

_LIVE_STRINGS = """
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. 'replica:' .. name) == 1 then
    local v = redis.call('GET', ARGV[1] .. ARGV[2] .. name)
    if v then out[#out + 1] = v end
  end
end
return out
"""

_LIVE = """
local out = {}
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if redis.call('EXISTS', ARGV[1] .. 'replica:' .. name) == 1 then out[#out + 1] = name end
end
return out
"""

_POST = """
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local ttl = tonumber(ARGV[3])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
"""

_ANSWER = """
if redis.call('EXISTS', KEYS[3]) == 0 then return -1 end
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
redis.call('PUBLISH', ARGV[4], ARGV[5])
return 1
"""

_CLOSE = """
if redis.call('HDEL', KEYS[1], ARGV[1]) == 1 then
  redis.call('PUBLISH', ARGV[2], ARGV[3])
  return false
end
local given = redis.call('GET', KEYS[2])
redis.call('DEL', KEYS[2])
return given
"""

DESK_CHANGED = json.dumps({"k": "desk"})


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One record of the shared audit stream: its stream id, replica, record and caller."""

    id: str
    replica: str
    record: bytes
    who: dict[str, Any]


def _entries(raw: Reply) -> list[AuditEntry]:
    found = []
    for entry_id, fields in raw or ():
        if not isinstance(fields, dict):
            items = list(fields)
            fields = {items[i]: items[i + 1] for i in range(0, len(items), 2)}
        who = json_value(fields.get(b"w") or b"{}")
        found.append(
            AuditEntry(
                entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
                text(fields.get(b"r") or b"") or "",
                fields.get(b"a") or b"",
                who if isinstance(who, dict) else {},
            )
        )
    return found


def _json_list(raw: Reply) -> list[Any]:
    return [value for item in raw or () if (value := json_value(item)) is not None]


class ConsoleShare:
    """The console's shared keys in one Redis (see the module doc)."""

    def __init__(self, link: RedisLink, *, prefix: str = "tb:") -> None:
        self.link = link
        self.prefix = prefix
        self.channel = f"{prefix}console"

    # -- questions waiting for a person ----------------------------------------------------

    async def post(
        self, replica: str, question_id: str, entry: dict[str, Any], wait_s: float
    ) -> None:
        """Show a question of ``replica`` on every console (until :meth:`close`)."""
        ttl = min(MAX_WAIT_MS, round(wait_s * 1000)) + DESK_TTL_MARGIN_MS
        args: list[Any] = [question_id, json.dumps(entry), ttl, self.channel, DESK_CHANGED]
        await self.link.script(_POST, [f"{self.prefix}desk:{replica}"], args)

    async def waiting(self) -> list[dict[str, Any]]:
        """The questions of every live replica (unordered)."""
        keys = [f"{self.prefix}replicas"]
        raw = await self.link.script(_LIVE_HASHES, keys, [self.prefix, "desk:"])
        return [e for e in _json_list(raw) if isinstance(e, dict)]

    async def question(self, replica: str, question_id: str) -> dict[str, Any] | None:
        """One question still waiting (None: answered, ended, or never asked)."""
        entry = json_value(await self.link.run("HGET", f"{self.prefix}desk:{replica}", question_id))
        return entry if isinstance(entry, dict) else None

    async def answer(self, replica: str, question_id: str, answer: dict[str, Any]) -> int:
        """Give the answer to a question: 1 taken (the question leaves every console, its
        replica hears it), 0 refused (already answered, or its wait ended), -1 refused (its
        replica stopped). Atomic: of answers given at once on any replicas, one is taken."""
        text = json.dumps(answer)
        message = json.dumps({"k": "answer", "id": question_id, "a": answer})
        keys = [
            f"{self.prefix}desk:{replica}",
            f"{self.prefix}answer:{question_id}",
            f"{self.prefix}replica:{replica}",
        ]
        args: list[Any] = [question_id, text, ANSWER_TTL_MS, self.channel, message]
        return int(await self.link.script(_ANSWER, keys, args))

    async def close(self, replica: str, question_id: str) -> dict[str, Any] | None:
        """The question's wait ends on its replica: it leaves every console, unless an
        answer was taken first, which is returned (it counts: it came in time)."""
        keys = [f"{self.prefix}desk:{replica}", f"{self.prefix}answer:{question_id}"]
        raw = await self.link.script(_CLOSE, keys, [question_id, self.channel, DESK_CHANGED])
        given = json_value(raw)
        return given if isinstance(given, dict) else None

    async def given(self, question_id: str) -> dict[str, Any] | None:
        """The answer taken for a question, if any (a replica that missed its message)."""
        given = json_value(await self.link.run("GET", f"{self.prefix}answer:{question_id}"))
        return given if isinstance(given, dict) else None

    async def clear(self, replica: str) -> None:
        """A replica starts: nothing of a former process of the same name waits."""
        await self.link.run("DEL", f"{self.prefix}desk:{replica}")

    @asynccontextmanager
    async def messages(self) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """The console channel's messages from now on (StateUnavailable when it is lost)."""
        async with self.link.subscribe(self.channel) as raw:

            async def decoded() -> AsyncIterator[dict[str, Any]]:
                async for item in raw:
                    message = json_value(item)
                    if isinstance(message, dict):
                        yield message

            yield decoded()

    # -- the audit stream --------------------------------------------------------------------

    async def append_audit(self, replica: str, record: bytes, who: dict[str, Any]) -> None:
        await self.link.run(
            "XADD", f"{self.prefix}audit", "MAXLEN", "~", AUDIT_MAX, "*",
            "r", replica, "a", record, "w", json.dumps(who),
        )  # fmt: skip

    async def audit_tail(self, count: int = AUDIT_MAX) -> list[AuditEntry]:
        """The newest ``count`` records, oldest first."""
        raw = await self.link.run("XREVRANGE", f"{self.prefix}audit", "+", "-", "COUNT", count)
        return list(reversed(_entries(raw)))

    async def audit_after(self, last: str, block_s: float) -> list[AuditEntry]:
        """Records after stream id ``last`` once there are any, or none after ``block_s``."""
        block = str(max(1, round(block_s * 1000)))
        reply = await self.link.blocking(
            block_s, "XREAD", "COUNT", 1000, "BLOCK", block, "STREAMS", f"{self.prefix}audit", last
        )
        if not reply:
            return []
        first = reply[0] if isinstance(reply, list) else next(iter(reply.items()))
        return _entries(first[1])

    # -- who is connected --------------------------------------------------------------------

    async def put_connections(self, replica: str, rows: list[dict[str, Any]], ttl_s: float) -> None:
        ttl = max(1, round(ttl_s * 1000))
        await self.link.run("SET", f"{self.prefix}conns:{replica}", json.dumps(rows), "PX", ttl)

    async def connections(self) -> list[dict[str, Any]]:
        """Every live replica's connections."""
        keys = [f"{self.prefix}replicas"]
        raw = await self.link.script(_LIVE_STRINGS, keys, [self.prefix, "conns:"])
        return [row for rows in _json_list(raw) if isinstance(rows, list) for row in rows]

    async def live(self) -> list[str]:
        """The replicas whose lease is alive."""
        raw = await self.link.script(_LIVE, [f"{self.prefix}replicas"], [self.prefix])
        return sorted(texts(raw))

    # -- one-time sign-in passes and browser sign-ins completed ---------------------------------

    def _pass(self, given: str, kind: str) -> str:
        return f"{self.prefix}console:{kind}:{hashlib.sha256(given.encode()).hexdigest()}"

    async def put_pass(self, given: str, who: str, ttl_s: float, *, kind: str = "pass") -> None:
        """Keep ``who`` under ``given`` (its digest) for ``ttl_s``; ``kind`` keeps one-time
        passes (``pass``) and sign-ins completed (``login``) apart."""
        await self.link.run("SET", self._pass(given, kind), who, "PX", max(1, round(ttl_s * 1000)))

    async def has_pass(self, given: str, *, kind: str = "pass") -> bool:
        """Whether something is kept under ``given`` (it stays)."""
        return bool(await self.link.run("EXISTS", self._pass(given, kind)))

    async def keep_pass(self, given: str, ttl_s: float, *, kind: str = "pass") -> bool:
        """Keep what is under ``given`` for ``ttl_s`` from now; False: nothing is (taken, or
        lapsed)."""
        ttl = max(1, round(ttl_s * 1000))
        return bool(await self.link.run("PEXPIRE", self._pass(given, kind), ttl))

    async def take_pass(self, given: str, *, kind: str = "pass") -> str | None:
        """What was kept under ``given``, once (it is gone after); None: unknown or expired."""
        raw = await self.link.run("GETDEL", self._pass(given, kind))
        return text(raw) if isinstance(raw, bytes) else None
