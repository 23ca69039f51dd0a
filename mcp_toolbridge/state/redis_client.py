"""The one module that imports the Redis client (redis-py's asyncio client, run under anyio's
asyncio backend): a pool of connections to one Redis server, and a deadline on every command.

Everything else speaks Redis commands through :class:`RedisLink` (``run``, ``script``,
``blocking``, ``subscribe``), so the client library could be swapped here alone.

- **Pooling.** One blocking pool of :data:`MAX_CONNECTIONS` connections per link; a command
  waits for a free connection within its own deadline. A subscription holds a connection of
  its own while it lasts.
- **Deadlines.** Every command has :data:`COMMAND_TIMEOUT_S` (the socket's, and anyio's
  around it: a command that waits for a connection counts too); a blocking read has its block
  time plus that.
- **No retries.** redis-py retries a command on a connection error by default; here nothing
  is retried, so a write that timed out is never applied twice (an ``INCRBY`` that reached the
  server and lost its answer is reported unavailable, and not sent again).
- **Password.** Redis's own (``requirepass``, or an ACL user's): in the URL
  (``redis://:PASSWORD@HOST``, ``redis://USER:PASSWORD@HOST``, redis-py's ``?password=``),
  or, kept off the command line that ``ps`` shows every user of the machine, in
  :data:`PASSWORD_ENV` (the URL's wins). Never in a message: :func:`where` shows the URL
  without it (and without its query).
- **Errors.** A refused or lost connection, a timeout, and a command Redis refuses (still
  loading its data, out of memory, read-only) are
  :class:`~mcp_toolbridge.state.port.StateUnavailable`, naming the server (never a password).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio

from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.state.port import StateUnavailable

COMMAND_TIMEOUT_S = 2.0
"""The most one command may take, waiting for a pooled connection included."""
CONNECT_TIMEOUT_S = 2.0
MAX_CONNECTIONS = 64
"""Connections to Redis per process (commands beyond wait for one, within their deadline)."""
PASSWORD_ENV = "TOOLBRIDGE_STATE_PASSWORD"
"""The Redis password, when the ``--state`` URL carries none."""
POLL_S = 1.0
"""How often a subscription checks its connection when no message comes."""

Reply = Any
"""What Redis answered, as redis-py gives it (bytes, int, list, None)."""


def check_url(url: str) -> str:
    """``redis://[user:password@]HOST[:PORT][/DB]`` (or ``rediss://`` for TLS, ``unix://``):
    the URL, or ConfigError saying what is wrong."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss", "unix") or not (parts.hostname or parts.path):
        raise ConfigError(
            f"--state {where(url)}: expected redis://HOST:PORT/DB (rediss:// for TLS, "
            "unix:///path/to/socket), or 'memory'",
            code=ErrorCode.CONFIG_INVALID,
        )
    db = parts.path.strip("/") if parts.scheme != "unix" else ""
    if db and not db.isdigit():
        raise ConfigError(
            f"--state {where(url)}: the database is a number (redis://HOST:PORT/0)",
            code=ErrorCode.CONFIG_INVALID,
        )
    return url


def where(url: str) -> str:
    """The URL without its password, for messages and logs: ``:***`` in place of one in the
    user part, and no query string, where redis-py takes one too (``?password=``)."""
    bare = url.split("#", 1)[0].split("?", 1)[0]
    parts = urlsplit(bare)
    if parts.password is None:
        return bare
    user = parts.username or ""
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{user}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


class RedisLink:
    """Pooled, deadline-bound access to one Redis server."""

    def __init__(
        self, url: str, *, timeout_s: float = COMMAND_TIMEOUT_S, password: str | None = None
    ) -> None:
        # Imported here, not with this module: redis-py (with the OpenTelemetry SDK it brings)
        # takes about 0.2 s to import, and only a server given --state redis://... needs it.
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff
        from redis.exceptions import RedisError

        self.url = check_url(url)
        self.where = where(url)
        self.timeout_s = timeout_s
        parts = urlsplit(url)
        given = parts.password or parse_qs(parts.query).get("password", [""])[0]
        self.authenticated = bool(given or password)
        """Whether this link gives Redis a password (when it does not, and Redis answers, Redis
        asks none: anything that reaches it may read and change the shared state)."""
        extra: dict[str, Any] = {} if given or not password else {"password": password}
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            **extra,
            max_connections=MAX_CONNECTIONS,
            timeout=timeout_s,
            socket_timeout=timeout_s,
            socket_connect_timeout=CONNECT_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=30,
        )
        self._redis: Any = aioredis.Redis(connection_pool=pool, retry=Retry(NoBackoff(), 0))
        """Typed Any: redis-py's asyncio methods are partly unannotated."""
        self._scripts: dict[str, Any] = {}
        self._failures: tuple[type[BaseException], ...] = (RedisError, TimeoutError, OSError)
        """A lost or refused connection, a timeout, and Redis refusing the command (loading
        its data, out of memory, read-only): the store cannot do it now, so the caller fails
        closed."""

    def _unavailable(self, exc: BaseException) -> StateUnavailable:
        what = (str(exc).strip() or type(exc).__name__).rstrip(".")
        return StateUnavailable(f"the shared state (Redis at {self.where}) did not answer: {what}")

    async def run(self, *args: str | bytes | int | float) -> Reply:
        """One command, e.g. ``run("HGET", key, field)``."""
        try:
            with anyio.fail_after(self.timeout_s):
                return await self._redis.execute_command(*args)
        except self._failures as exc:
            raise self._unavailable(exc) from exc

    async def script(
        self, text: str, keys: Sequence[str], args: Sequence[str | bytes | int | float]
    ) -> Reply:
        """Run a Lua script (sent once, then called by its SHA): atomic on the server."""
        script = self._scripts.get(text)
        if script is None:
            script = self._scripts[text] = self._redis.register_script(text)
        try:
            with anyio.fail_after(self.timeout_s):
                return await script(keys=list(keys), args=list(args))
        except self._failures as exc:
            raise self._unavailable(exc) from exc

    async def transaction(self, commands: Sequence[Sequence[str | bytes | int | float]]) -> Reply:
        """Commands in one MULTI/EXEC (all or none); their replies."""
        try:
            with anyio.fail_after(self.timeout_s):
                async with self._redis.pipeline(transaction=True) as pipe:
                    for command in commands:
                        pipe.execute_command(*command)
                    return await pipe.execute()
        except self._failures as exc:
            raise self._unavailable(exc) from exc

    async def blocking(self, block_s: float, *args: str | bytes | int | float) -> Reply:
        """A command that blocks on the server (``XREAD BLOCK``) for up to ``block_s``, which
        must stay under the command deadline (the socket's timeout)."""
        if block_s >= self.timeout_s:
            raise ValueError(
                f"a blocking read of {block_s} s outlasts the {self.timeout_s} s deadline"
            )
        try:
            with anyio.fail_after(block_s + self.timeout_s):
                return await self._redis.execute_command(*args)
        except self._failures as exc:
            raise self._unavailable(exc) from exc

    @asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[AsyncIterator[bytes]]:
        """The messages published on ``channel`` from now on. The iterator raises
        StateUnavailable when the connection is lost (subscribe again to go on)."""
        pubsub: Any = self._redis.pubsub(ignore_subscribe_messages=True)
        try:
            with anyio.fail_after(self.timeout_s):
                await pubsub.subscribe(channel)
        except self._failures as exc:
            with anyio.CancelScope(shield=True):
                await pubsub.aclose()
            raise self._unavailable(exc) from exc

        async def messages() -> AsyncIterator[bytes]:
            while True:
                try:
                    message = await pubsub.get_message(timeout=POLL_S)
                    if message is None:
                        with anyio.fail_after(self.timeout_s):
                            await pubsub.ping()
                        continue
                except self._failures as exc:
                    raise self._unavailable(exc) from exc
                if message.get("type") == "message":
                    data = message.get("data")
                    if isinstance(data, bytes):
                        yield data

        try:
            yield messages()
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout_s):
                await pubsub.aclose()

    async def ping(self) -> bool:
        """True when the server answers now."""
        try:
            return bool(await self.run("PING"))
        except StateUnavailable:  # also LOADING: up, but not ready
            return False

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.timeout_s):
            try:
                await self._redis.aclose()
                await self._redis.connection_pool.disconnect()
            except self._failures[0]:
                pass


def json_value(raw: Reply) -> Any:
    """A stored JSON text's value; None for none, and for a value that is not JSON or is nested
    too deep to read (``[[[...``: a RecursionError). Every JSON read from Redis goes through it,
    so a stale or hostile value is skipped where it is read, never an exception in a replica's
    background loops (found by the red-team pass of 2026-11-29 (6th): one such value published
    ended every replica)."""
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def text(raw: Reply) -> str | None:
    """A stored name as text; None for one that is not UTF-8 (a name the server never wrote)."""
    if isinstance(raw, str):
        return raw
    try:
        return bytes(raw).decode()
    except (TypeError, ValueError):
        return None


def texts(raw: Reply) -> list[str]:
    """The UTF-8 names of a list or set reply, any other skipped."""
    return [t for item in raw or () if (t := text(item)) is not None]


def number(reply: Reply) -> float:
    """A numeric reply (an int, or a float sent as bulk text); 0 for none."""
    if reply is None:
        return 0.0
    value = float(reply.decode() if isinstance(reply, bytes) else reply)
    return value if math.isfinite(value) else 0.0
