"""The State port in Redis (``serve --state redis://HOST:PORT/DB``): what a person keeps
between calls, seen alike by every replica of the service.

Keys (under the prefix, ``tb:`` by default; an owner's keys share the hash tag ``{owner}``,
so a Redis Cluster keeps them in one slot and each script touches one slot):

- ``{owner}:grants``: list, "always" answers as JSON, oldest first, each once;
- ``{owner}:usage``, ``:running``, ``:largest``: hashes of ``TOOL:tokens`` and ``TOOL:usd``,
  the budget sums, what running calls hold, the largest usage one call reported;
- ``{owner}:values``: hash, the built-in tools' values (JSON);
- ``{owner}:counters``: hash, ``take`` counters;
- ``{owner}:hits:COUNTER``: sorted set, the uses in a rate limit's window, scored by Redis's
  clock (ms); ``{owner}:hitkeys`` names them.

Every check-and-change is one Lua script, so it is atomic however many replicas call it, and
time is Redis's own (``TIME``), never a replica's. Every owner key lives ``person_ttl_s`` (a
person: ``caller:…``; the policy's ``[auth] person_idle_s``, a day by default, as in memory) or
:data:`SESSION_TTL_S` (an anonymous session, whose replica may die before it can forget it)
after its last change or the owner's last call (each call's gate reads the "always" answers,
and that read renews every key of the owner, as any call does in memory). That TTL bounds the
people kept: ``[auth] max_people`` caps one process's memory (state/memory.py), not Redis,
whose own cap is its ``maxmemory`` (deploy/redis.conf: a full Redis refuses writes, and calls
that need one fail closed).
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from typing import Any, get_args

from mcp_toolbridge.state.port import (
    UNKNOWN_CALL_USAGE,
    Admission,
    Grant,
    GrantAction,
    JsonValue,
    Usage,
)
from mcp_toolbridge.state.redis_client import RedisLink, Reply, json_value, number

PERSON_TTL_S = 24 * 3600
"""A person's keys' TTL when none is given (the policy's ``[auth] person_idle_s`` default)."""
SESSION_TTL_S = 24 * 3600
DEFAULT_PREFIX = "tb:"

_GRANTS = """
for i = 1, #KEYS do redis.call('EXPIRE', KEYS[i], ARGV[1]) end
return redis.call('LRANGE', KEYS[1], 0, -1)
"""
"""The "always" answers, read at every call's gate: that call is activity, so every key of the
owner (but a rate-limit window, which has its own length) lives its whole TTL again, as a
person in memory does after any call."""

_ADD_GRANTS = """
for i = 2, #ARGV do
  if not redis.call('LPOS', KEYS[1], ARGV[i]) then redis.call('RPUSH', KEYS[1], ARGV[i]) end
end
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
"""

_ADD_USAGE = """
local t = redis.call('HINCRBY', KEYS[1], ARGV[1] .. ':tokens', ARGV[2])
local u = redis.call('HINCRBYFLOAT', KEYS[1], ARGV[1] .. ':usd', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {t, u}
"""

_TAKE = """
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if used >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""

_HIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window)
redis.call('SADD', KEYS[2], KEYS[1])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 0
"""

_ADMIT = """
local function get(key, field) return tonumber(redis.call('HGET', key, field) or '0') end
local tool = ARGV[1]
local ut, uu = get(KEYS[1], tool .. ':tokens'), get(KEYS[1], tool .. ':usd')
local rt, ru = get(KEYS[2], tool .. ':tokens'), get(KEYS[2], tool .. ':usd')
local over = (ARGV[2] ~= '' and ut + rt >= tonumber(ARGV[2]))
  or (ARGV[3] ~= '' and uu + ru >= tonumber(ARGV[3]))
if over then return {0, ut, tostring(uu), rt, tostring(ru), 0, '0'} end
local ht, hu = tonumber(ARGV[4]), tonumber(ARGV[5])
if redis.call('HEXISTS', KEYS[3], tool .. ':tokens') == 1 then
  ht, hu = get(KEYS[3], tool .. ':tokens'), get(KEYS[3], tool .. ':usd')
end
redis.call('HINCRBY', KEYS[2], tool .. ':tokens', ht)
redis.call('HINCRBYFLOAT', KEYS[2], tool .. ':usd', tostring(hu))
redis.call('EXPIRE', KEYS[2], ARGV[6])
return {1, ut, tostring(uu), rt, tostring(ru), ht, tostring(hu)}
"""

_SETTLE = """
local function get(key, field) return tonumber(redis.call('HGET', key, field) or '0') end
local tool = ARGV[1]
local rt = math.max(0, get(KEYS[2], tool .. ':tokens') - tonumber(ARGV[2]))
local ru = math.max(0, get(KEYS[2], tool .. ':usd') - tonumber(ARGV[3]))
redis.call('HSET', KEYS[2], tool .. ':tokens', rt, tool .. ':usd', tostring(ru))
if ARGV[4] == '' then
  return {get(KEYS[1], tool .. ':tokens'), tostring(get(KEYS[1], tool .. ':usd'))}
end
local t = redis.call('HINCRBY', KEYS[1], tool .. ':tokens', ARGV[4])
local u = redis.call('HINCRBYFLOAT', KEYS[1], tool .. ':usd', ARGV[5])
local lt = math.max(get(KEYS[3], tool .. ':tokens'), tonumber(ARGV[4]))
local lu = math.max(get(KEYS[3], tool .. ':usd'), tonumber(ARGV[5]))
redis.call('HSET', KEYS[3], tool .. ':tokens', lt, tool .. ':usd', tostring(lu))
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[6]) end
return {t, u}
"""

_FORGET = """
local hits = redis.call('SMEMBERS', KEYS[1])
for _, key in ipairs(hits) do redis.call('DEL', key) end
for i = 1, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""


def _grant_text(grant: Grant) -> str:
    return json.dumps([grant.permission, grant.pattern, grant.action])


def _grant(raw: bytes) -> Grant | None:
    """An "always" answer as stored; None for anything else (a stale or hostile value, which
    grants nothing and fails no call)."""
    value = json_value(raw)
    if not isinstance(value, list) or len(value) != 3:
        return None
    permission, pattern, action = value
    if not isinstance(permission, str) or not isinstance(pattern, str | None):
        return None
    if action not in get_args(GrantAction):
        return None
    return Grant(permission, pattern, action)


def _usage(reply: Reply, at: int = 0) -> Usage:
    return Usage(int(number(reply[at])), number(reply[at + 1]))


class RedisState:
    """:class:`~mcp_toolbridge.state.port.State` in a Redis server shared by replicas."""

    def __init__(
        self, link: RedisLink, *, prefix: str = DEFAULT_PREFIX, person_ttl_s: float = PERSON_TTL_S
    ) -> None:
        if not person_ttl_s >= 1:
            raise ValueError("person_ttl_s must be at least a second")
        self.link = link
        self.prefix = prefix
        self.person_ttl_s = math.ceil(person_ttl_s)

    def _ttl(self, owner: str) -> int:
        return self.person_ttl_s if owner.startswith("caller:") else SESSION_TTL_S

    def _key(self, owner: str, what: str) -> str:
        return f"{self.prefix}{{{owner}}}:{what}"

    async def grants(self, owner: str) -> tuple[Grant, ...]:
        kept = ("grants", "usage", "running", "largest", "values", "counters", "hitkeys")
        keys = [self._key(owner, what) for what in kept]
        raw = await self.link.script(_GRANTS, keys, [self._ttl(owner)])
        found = (_grant(item) for item in raw or ())
        return tuple(g for g in found if g is not None)

    async def add_grants(self, owner: str, grants: Sequence[Grant]) -> None:
        if grants:
            texts = [_grant_text(g) for g in grants]
            args: list[Any] = [self._ttl(owner), *texts]
            await self.link.script(_ADD_GRANTS, [self._key(owner, "grants")], args)

    async def usage(self, owner: str, tool: str) -> Usage:
        reply = await self.link.run(
            "HMGET", self._key(owner, "usage"), f"{tool}:tokens", f"{tool}:usd"
        )
        return _usage(reply)

    async def add_usage(self, owner: str, tool: str, usage: Usage) -> Usage:
        args: list[Any] = [tool, usage.tokens, repr(usage.usd), self._ttl(owner)]
        return _usage(await self.link.script(_ADD_USAGE, [self._key(owner, "usage")], args))

    async def load(self, owner: str, name: str) -> JsonValue | None:
        value: JsonValue | None = json_value(
            await self.link.run("HGET", self._key(owner, "values"), name)
        )
        return value

    async def save(self, owner: str, name: str, value: JsonValue) -> None:
        key = self._key(owner, "values")
        await self.link.transaction(
            [("HSET", key, name, json.dumps(value)), ("EXPIRE", key, self._ttl(owner))]
        )

    async def take(self, owner: str, counter: str, limit: int) -> bool:
        key = self._key(owner, "counters")
        return bool(await self.link.script(_TAKE, [key], [counter, limit, self._ttl(owner)]))

    async def hit(self, owner: str, counter: str, limit: int, window_s: float) -> float:
        keys = [self._key(owner, f"hits:{counter}"), self._key(owner, "hitkeys")]
        window_ms = max(1, round(window_s * 1000))
        args: list[Any] = [limit, window_ms, uuid.uuid4().hex, self._ttl(owner)]
        wait_ms = number(await self.link.script(_HIT, keys, args))
        return wait_ms / 1000

    def _budget_keys(self, owner: str) -> list[str]:
        return [self._key(owner, what) for what in ("usage", "running", "largest")]

    async def admit(
        self, owner: str, tool: str, tokens: float | None, usd: float | None
    ) -> Admission:
        args: list[Any] = [
            tool,
            "" if tokens is None else repr(tokens),
            "" if usd is None else repr(usd),
            UNKNOWN_CALL_USAGE.tokens,
            repr(UNKNOWN_CALL_USAGE.usd),
            self._ttl(owner),
        ]
        reply = await self.link.script(_ADMIT, self._budget_keys(owner), args)
        used, running, held = _usage(reply, 1), _usage(reply, 3), _usage(reply, 5)
        return Admission(bool(reply[0]), used, running, held if reply[0] else Usage())

    async def settle(self, owner: str, tool: str, held: Usage, used: Usage | None) -> Usage:
        args: list[str | int] = [tool, held.tokens, repr(held.usd)]
        args += ["", ""] if used is None else [used.tokens, repr(used.usd)]
        args.append(self._ttl(owner))
        return _usage(await self.link.script(_SETTLE, self._budget_keys(owner), args))

    async def forget(self, owner: str) -> None:
        whats = ("hitkeys", "grants", "usage", "running", "largest", "values", "counters")
        await self.link.script(_FORGET, [self._key(owner, w) for w in whats], [])
