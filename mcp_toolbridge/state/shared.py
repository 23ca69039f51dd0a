"""What replicas of one service share in Redis beyond a person's state: the resumable
streams of 2025-era sessions, which replica holds each session, truncated outputs, the
fan-out of events (list_changed), and leases: which replicas are alive and which calls each
is running.

Keys (under the prefix; one session's keys share the hash tag ``{s:ID}``):

- ``{s:ID}:meta``: hash, the session's replica and its credential's digest;
- ``{s:ID}:ev:STREAM``: stream, the session's SSE events of one stream (entry id
  ``SEQ-0``, fields ``d`` data, ``f`` 1 when final, ``x`` 1 when the message was too large
  to keep); ``{s:ID}:seq`` numbers them; ``{s:ID}:starts`` where each stream began;
- ``out:TOKEN``: hash, a truncated output (owner, tool, MIME type, bytes), with its TTL;
- ``replica:NAME``: string, present while the replica is alive (a TTL it renews);
  ``replicas``: set of names seen; ``calls:NAME``: hash of the calls it runs (JSON) once
  their gate allowed them; ``sessions:NAME``: set of the sessions it holds;
- channel ``events``: JSON events every replica hears.

Every key of a session expires with the session's idle time, renewed by each event: a dead
replica's sessions go by themselves.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mcp_toolbridge.state.redis_client import RedisLink, Reply, json_value, texts

_APPEND = """
local seq = redis.call('INCR', KEYS[1])
local ttl = tonumber(ARGV[5])
redis.call('PEXPIRE', KEYS[1], ttl)
if ARGV[1] == 'p' then
  local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
  local fresh = #last == 0
  if not fresh then
    for i = 1, #last[1][2], 2 do
      if last[1][2][i] == 'f' and last[1][2][i + 1] == '1' then fresh = true end
    end
  end
  if fresh then
    redis.call('DEL', KEYS[2])
    redis.call('HSET', KEYS[3], ARGV[4], seq)
  end
end
if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 0 then redis.call('HSET', KEYS[3], ARGV[4], seq) end
redis.call('PEXPIRE', KEYS[3], ttl)
if ARGV[1] == 'x' then
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[6], seq .. '-0', 'd', '', 'f', ARGV[3], 'x', '1')
else
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[6], seq .. '-0', 'd', ARGV[2], 'f', ARGV[3])
end
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[4], ttl)
return seq
"""

_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 1 then return {{}, {}} end
local calls = redis.call('HVALS', KEYS[2])
local sessions = redis.call('SMEMBERS', KEYS[4])
redis.call('DEL', KEYS[2], KEYS[4])
redis.call('SREM', KEYS[3], ARGV[1])
return {calls, sessions}
"""


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One stored SSE event: its sequence number, message (None: a priming event), whether
    it ends its stream, and whether its message was too large to keep."""

    seq: int
    data: bytes | None
    final: bool
    dropped: bool = False


def _fields(raw: Reply) -> dict[bytes, bytes]:
    """A hash or a stream entry's fields: redis-py parses some replies into a dict."""
    if isinstance(raw, dict):
        return raw
    items = list(raw)
    return {items[i]: items[i + 1] for i in range(0, len(items), 2)}


def _strings(fields: dict[bytes, bytes]) -> dict[str, str]:
    """A hash's fields as text (bytes that are not UTF-8 replaced: they match nothing)."""
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in fields.items()}


def _events(entries: Reply) -> list[StreamEvent]:
    found = []
    for entry_id, raw in entries or ():
        fields = _fields(raw)
        seq = int(entry_id.split(b"-")[0])
        data = fields.get(b"d") or None
        found.append(StreamEvent(seq, data, fields.get(b"f") == b"1", fields.get(b"x") == b"1"))
    return found


class SharedStore:
    """The replicas' shared keys in one Redis (see the module doc)."""

    def __init__(self, link: RedisLink, *, prefix: str = "tb:") -> None:
        self.link = link
        self.prefix = prefix

    def _session(self, session_id: str, what: str) -> str:
        return f"{self.prefix}{{s:{session_id}}}:{what}"

    # -- sessions and their event streams ---------------------------------------------------

    async def open_session(
        self, session_id: str, replica: str, credential: str, ttl_s: float
    ) -> None:
        key = self._session(session_id, "meta")
        ttl = max(1, round(ttl_s * 1000))
        held = f"{self.prefix}sessions:{replica}"
        await self.link.transaction(
            [
                ("HSET", key, "replica", replica, "credential", credential),
                ("PEXPIRE", key, ttl),
                ("SADD", held, session_id),
            ]
        )

    async def session(self, session_id: str) -> dict[str, str] | None:
        """The replica and credential digest of a session, None when unknown or expired."""
        raw = await self.link.run("HGETALL", self._session(session_id, "meta"))
        if not raw:
            return None
        return _strings(_fields(raw))

    async def close_session(self, session_id: str, replica: str, streams: list[str]) -> None:
        keys = [self._session(session_id, w) for w in ("meta", "seq", "starts")]
        keys += [self._session(session_id, f"ev:{s}") for s in streams]
        await self.link.transaction(
            [("DEL", *keys), ("SREM", f"{self.prefix}sessions:{replica}", session_id)]
        )

    async def unfinished(self, session_id: str) -> list[str]:
        """The session's streams whose last stored event is not their final message."""
        left = []
        for stream in await self.streams(session_id):
            key = self._session(session_id, f"ev:{stream}")
            last = _events(await self.link.run("XREVRANGE", key, "+", "-", "COUNT", 1))
            if not last or not last[0].final:
                left.append(stream)
        return left

    async def streams(self, session_id: str) -> list[str]:
        raw = await self.link.run("HKEYS", self._session(session_id, "starts"))
        return texts(raw)

    async def append(
        self,
        session_id: str,
        stream: str,
        data: bytes | None,
        *,
        final: bool,
        keep: bool,
        max_events: int,
        ttl_s: float,
    ) -> int:
        """Store one event of ``stream`` (``data`` None: a priming event, which starts the
        stream anew when its last one ended); its sequence number in the session. A message
        not ``keep``-able (too large) is recorded as dropped."""
        kind = "p" if data is None else ("m" if keep else "x")
        keys = [
            self._session(session_id, "seq"),
            self._session(session_id, f"ev:{stream}"),
            self._session(session_id, "starts"),
            self._session(session_id, "meta"),
        ]
        args: list[Any] = [kind, data or b"", "1" if final else "0", stream]
        args += [max(1, round(ttl_s * 1000)), max_events]
        return int(await self.link.script(_APPEND, keys, args))

    async def start_of(self, session_id: str, stream: str) -> int | None:
        raw = await self.link.run("HGET", self._session(session_id, "starts"), stream)
        return None if raw is None else int(raw)

    async def events_after(self, session_id: str, stream: str, seq: int) -> list[StreamEvent]:
        key = self._session(session_id, f"ev:{stream}")
        return _events(await self.link.run("XRANGE", key, f"({seq}-0", "+"))

    async def wait_after(
        self, session_id: str, stream: str, seq: int, block_s: float
    ) -> list[StreamEvent]:
        """Events after ``seq`` once there are any, or none after ``block_s``."""
        key = self._session(session_id, f"ev:{stream}")
        block = str(max(1, round(block_s * 1000)))
        reply = await self.link.blocking(
            block_s, "XREAD", "BLOCK", block, "STREAMS", key, f"{seq}-0"
        )
        if not reply:
            return []
        first = reply[0] if isinstance(reply, list) else next(iter(reply.items()))
        return _events(first[1] if isinstance(first, list | tuple) else first)

    # -- truncated outputs --------------------------------------------------------------------

    async def put_output(
        self, token: str, facts: dict[str, str], data: bytes, ttl_s: float
    ) -> None:
        key = f"{self.prefix}out:{token}"
        fields: list[Any] = [x for pair in facts.items() for x in pair]
        await self.link.transaction(
            [("HSET", key, *fields, "data", data), ("PEXPIRE", key, max(1, round(ttl_s * 1000)))]
        )

    async def output(self, token: str) -> tuple[dict[str, str], bytes, float] | None:
        """An output's facts, bytes and seconds left; None when unknown or expired."""
        key = f"{self.prefix}out:{token}"
        replies = await self.link.transaction([("HGETALL", key), ("PTTL", key)])
        raw, ttl_ms = replies
        if not raw or ttl_ms is None or int(ttl_ms) < 0:
            return None
        fields = dict(_fields(raw))
        data = fields.pop(b"data", b"")
        return _strings(fields), data, int(ttl_ms) / 1000

    # -- events every replica hears -----------------------------------------------------------

    async def publish(self, event: dict[str, Any]) -> None:
        await self.link.run("PUBLISH", f"{self.prefix}events", json.dumps(event))

    @asynccontextmanager
    async def events(self) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        async with self.link.subscribe(f"{self.prefix}events") as messages:

            async def decoded() -> AsyncIterator[dict[str, Any]]:
                async for raw in messages:
                    event = json_value(raw)
                    if isinstance(event, dict):
                        yield event

            yield decoded()

    # -- leases -------------------------------------------------------------------------------

    async def alive(self, replica: str, ttl_s: float) -> None:
        """Renew the replica's lease (it is dead once ``ttl_s`` pass without renewal)."""
        await self.link.transaction(
            [
                ("SET", f"{self.prefix}replica:{replica}", "1", "PX", max(1, round(ttl_s * 1000))),
                ("SADD", f"{self.prefix}replicas", replica),
            ]
        )

    async def is_alive(self, replica: str) -> bool:
        return bool(await self.link.run("EXISTS", f"{self.prefix}replica:{replica}"))

    async def retire(self, replica: str) -> None:
        """The replica stops cleanly (its calls have ended): its lease goes now."""
        await self.link.run("DEL", f"{self.prefix}replica:{replica}")
        await self.link.run("SREM", f"{self.prefix}replicas", replica)

    async def begin_call(self, replica: str, call_id: str, record: dict[str, Any]) -> None:
        await self.link.run("HSET", f"{self.prefix}calls:{replica}", call_id, json.dumps(record))

    async def end_call(self, replica: str, call_id: str) -> None:
        await self.link.run("HDEL", f"{self.prefix}calls:{replica}", call_id)

    async def replicas(self) -> list[str]:
        return sorted(texts(await self.link.run("SMEMBERS", f"{self.prefix}replicas")))

    async def claim(self, replica: str) -> tuple[list[dict[str, Any]], list[str]]:
        """The calls and the sessions of a replica whose lease expired, taken by exactly one
        claimer (the others get none); nothing while it is alive."""
        keys = [
            f"{self.prefix}replica:{replica}",
            f"{self.prefix}calls:{replica}",
            f"{self.prefix}replicas",
            f"{self.prefix}sessions:{replica}",
        ]
        raw_calls, raw_sessions = await self.link.script(_CLAIM, keys, [replica])
        found = [r for item in raw_calls or () if isinstance(r := json_value(item), dict)]
        return found, texts(raw_sessions)
