"""One replica of a service whose replicas share a Redis (``serve --state redis://…``):
its name, its lease, the calls it runs, the bus its clients' listen streams hear, and the
keys that seal 2026-07-28 request state.

- **Keys.** ``requestState`` is sealed with keys every replica has (``TOOLBRIDGE_STATE_KEYS``,
  comma-separated, newest first: the first seals, all open; or the secrets store), so a retry
  that lands on another replica is accepted. A replica with shared state refuses to start
  without them: an ephemeral key would make every such retry fail elsewhere.
- **Lease.** The replica renews ``replica:NAME`` every :data:`RENEW_S` (it lives
  :data:`LEASE_S`); each call it runs is recorded under ``calls:NAME`` from the moment its
  gate allows it (one write, with the decision and the budget it holds) until it ends, and
  each 2025-era session it holds under ``sessions:NAME``. Every :data:`SWEEP_S` each replica
  looks for replicas whose lease expired and claims their calls and sessions (one claimer
  wins, atomically): each call's outcome ``lost`` is audited by the claimer (its budget hold
  released), and every unfinished request stream of each session gets an error as its final
  message, so a client that resumes it hears that the call's replica stopped instead of
  waiting.
- **Bus.** ``tools/list_changed`` for 2026-07-28 listen streams: delivered to this replica's
  listeners at once and published on Redis; a replica that hears another's reload whose
  listing differs from its own reloads now (``on_remote_change``), then tells its own
  listeners. The listing's digest ends the echo.
- **Password.** When Redis takes this replica's commands though it gave no password, the
  replica says once, at its first renewal, that anything reaching Redis may read and change
  the shared state (:data:`OPEN_REDIS`).
- **Ready.** True while the last renewal reached Redis (``/readyz``).
"""

from __future__ import annotations

import logging
import os
import re
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.request_state import RequestStateSecurity
from mcp.server.subscriptions import ServerEvent, ToolsListChanged

from mcp_toolbridge.errors import ConfigError, ErrorCode
from mcp_toolbridge.host import CallContext, CallLease
from mcp_toolbridge.state import StateUnavailable

if TYPE_CHECKING:  # a replica's: not imported by a server without shared state
    from mcp_toolbridge.state import SharedStore

log = logging.getLogger("mcp_toolbridge")

KEYS_ENV = "TOOLBRIDGE_STATE_KEYS"
LEASE_S = 6.0
RENEW_S = 1.0
SWEEP_S = 2.0
RETRY_S = 1.0
"""How soon a lost subscription to the bus is made again."""
MIN_KEY_BYTES = 32
_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")

OPEN_REDIS = (
    "the shared state (Redis at %s) asks no password: any process that reaches it, a tool "
    "granted net.hosts = ['*'] or its host included, can read every session's events and write "
    "console passes, always-answers and approvals. Set requirepass in Redis and give it to "
    "every replica in %s (docs/deploy.md, Redis's password)"
)

LostCall = Callable[[dict[str, Any]], Awaitable[None]]
RemoteChange = Callable[[], Awaitable[None]]


def replica_name(given: str | None) -> str:
    """``given``, or the host name made fit (lowercase letters, digits, dashes; 63 at most),
    or a random name."""
    if given is not None:
        if not _NAME.match(given):
            raise ConfigError(
                f"--replica {given!r}: use 1 to 63 lowercase letters, digits and dashes, "
                "starting with a letter or digit (it is written in session ids)",
                code=ErrorCode.CONFIG_INVALID,
            )
        return given
    host = re.sub(r"[^a-z0-9-]+", "-", socket.gethostname().lower()).strip("-")[:63]
    return host if _NAME.match(host) else f"r-{uuid.uuid4().hex[:8]}"


def state_keys(text: str | None) -> tuple[str, ...]:
    """The request-state keys, newest first, from ``TOOLBRIDGE_STATE_KEYS`` (or the secret
    named by ``[state] keys``): ConfigError when there are none or one is too short."""
    keys = tuple(k.strip() for k in (text or "").split(",") if k.strip())
    if not keys:
        raise ConfigError(
            f"shared state needs request-state keys every replica shares: set {KEYS_ENV} "
            "(comma-separated, newest first; each 32 bytes or more, e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`) or name a secret in "
            "the policy's [state] keys. A key made up by each replica would refuse every "
            "2026-07-28 confirmation retried on another replica",
            code=ErrorCode.CONFIG_INVALID,
        )
    short = [i for i, key in enumerate(keys) if len(key.encode()) < MIN_KEY_BYTES]
    if short:
        raise ConfigError(
            f"{KEYS_ENV}: key {short[0] + 1} is shorter than {MIN_KEY_BYTES} bytes; use 32 "
            "random bytes or more (64 hex digits)",
            code=ErrorCode.CONFIG_INVALID,
        )
    return keys


class CallsRunning:
    """How many calls the server is running, and when none is (a drain waits for that); at
    the drain deadline :meth:`end_all` ends those left, each in its own cancel scope (the
    one :meth:`began` gave it), so its handler still answers (the request is not cut)."""

    def __init__(self) -> None:
        self._running: set[anyio.CancelScope] = set()
        self._idle = anyio.Event()
        self._idle.set()

    @property
    def count(self) -> int:
        return len(self._running)

    def began(self) -> anyio.CancelScope:
        """A call began: the scope to run it in (cancelled by :meth:`end_all`)."""
        scope = anyio.CancelScope()
        self._running.add(scope)
        if self._idle.is_set():
            self._idle = anyio.Event()
        return scope

    def ended(self, scope: anyio.CancelScope) -> None:
        self._running.discard(scope)
        if not self._running:
            self._idle.set()

    def end_all(self) -> None:
        """End every call running now (the drain deadline passed)."""
        for scope in self._running:
            scope.cancel()

    async def idle(self) -> None:
        await self._idle.wait()


class SharedBus:
    """The SDK's SubscriptionBus for listen streams, across replicas (see the module doc)."""

    def __init__(self, shared: SharedStore, replica: str) -> None:
        self._shared = shared
        self._replica = replica
        self._listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self.digest: Callable[[], str] = lambda: ""
        """The listing's digest now (set by the server)."""

    async def publish(self, event: ServerEvent) -> None:
        self.deliver(event)
        if isinstance(event, ToolsListChanged):
            try:
                await self._shared.publish(
                    {"kind": "tools", "from": self._replica, "digest": self.digest()}
                )
            except StateUnavailable as exc:
                log.warning("other replicas were not told of this reload: %s", exc.reason)
        await anyio.lowlevel.checkpoint()

    def deliver(self, event: ServerEvent) -> None:
        """To this replica's listen streams only."""
        for listener in list(self._listeners.values()):
            try:
                listener(event)
            except Exception:  # one listener must not starve the others
                log.exception("a listen stream's listener failed")

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        token = object()
        self._listeners[token] = listener

        def unsubscribe() -> None:
            self._listeners.pop(token, None)

        return unsubscribe


class Replica:
    """This process as one replica of a service (see the module doc)."""

    def __init__(self, name: str, shared: SharedStore, keys: Sequence[str]) -> None:
        self.name = name
        self.shared = shared
        self.keys = tuple(keys)
        self.bus = SharedBus(shared, name)
        self.ready = False
        self.draining = False
        self.on_lost: LostCall | None = None
        self.on_remote_change: RemoteChange | None = None
        self._told_open = False

    def security(self, ttl_s: float = 600.0) -> RequestStateSecurity:
        return RequestStateSecurity(keys=list(self.keys), ttl=ttl_s)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Renew the lease, sweep for dead replicas and hear the bus, until cancelled; the
        lease goes on the way out (a replica that stops cleanly has no call left)."""
        async with anyio.create_task_group() as group:
            await self._renew()
            group.start_soon(self._keep_alive)
            group.start_soon(self._sweep)
            group.start_soon(self._hear)
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                group.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    try:
                        await self.shared.retire(self.name)
                    except StateUnavailable:
                        pass

    async def _renew(self) -> None:
        try:
            await self.shared.alive(self.name, LEASE_S)
        except StateUnavailable as exc:
            if self.ready:
                log.error("replica %s: the shared state is unreachable: %s", self.name, exc.reason)
            self.ready = False
            return
        if not self.ready:
            log.warning("replica %s: the shared state answers; ready", self.name)
            if not self.shared.link.authenticated and not self._told_open:
                from mcp_toolbridge.state import PASSWORD_ENV  # the Redis client's module

                self._told_open = True
                log.warning(OPEN_REDIS, self.shared.link.where, PASSWORD_ENV)
        self.ready = True

    async def _keep_alive(self) -> None:
        while True:
            await anyio.sleep(RENEW_S)
            await self._renew()

    async def _sweep(self) -> None:
        from mcp_toolbridge.server.shared_events import end_lost_streams

        while True:
            await anyio.sleep(SWEEP_S)
            try:
                for other in await self.shared.replicas():
                    if other != self.name and not await self.shared.is_alive(other):
                        records, sessions = await self.shared.claim(other)
                        for session_id in sessions:
                            await end_lost_streams(self.shared, session_id, other)
                        for record in records:
                            await self._report_lost(other, record)
            except StateUnavailable:
                continue

    async def _report_lost(self, other: str, record: dict[str, Any]) -> None:
        log.warning(
            "replica %s stopped during a call of %s; reporting it lost", other, record.get("tool")
        )
        if self.on_lost is not None:
            try:
                await self.on_lost(record)
            except Exception:  # one record must not stop the sweep
                log.exception("could not report a lost call")

    async def _hear(self) -> None:
        while True:
            try:
                async with self.shared.events() as events:
                    async for event in events:
                        await self._heard(event)
            except StateUnavailable:
                await anyio.sleep(RETRY_S)

    async def _heard(self, event: dict[str, Any]) -> None:
        if event.get("kind") != "tools" or event.get("from") == self.name:
            return
        if event.get("digest") == self.bus.digest() or self.on_remote_change is None:
            return
        try:
            await self.on_remote_change()
        except Exception:
            log.exception("could not follow another replica's reload")

    @asynccontextmanager
    async def lease(self, record: dict[str, Any]) -> AsyncIterator[CallRecord]:
        """A call's record, written once its gate allowed it (its decision noted: one write a
        call) and removed when it ends; a replica that dies holding it has it reported lost
        by another. A store that does not answer leaves the call unrecorded, not refused."""
        call = CallRecord(self, {**record, "replica": self.name, "pid": os.getpid()})
        try:
            yield call
        finally:
            await call.end()


class CallRecord:
    """One call's lease record (a :class:`~mcp_toolbridge.host.CallLease`)."""

    def __init__(self, replica: Replica, record: dict[str, Any]) -> None:
        self._replica = replica
        self._record = record
        self._id = uuid.uuid4().hex
        self._written = False

    async def write(self) -> None:
        try:
            await self._replica.shared.begin_call(self._replica.name, self._id, self._record)
            self._written = True
        except StateUnavailable as exc:
            log.warning("a call runs without its lease: %s", exc.reason)

    async def note(self, **facts: Any) -> None:
        self._record.update(facts)
        if self._written or "decision" in facts:  # from the decision on, it is recorded
            await self.write()

    async def end(self) -> None:
        if not self._written:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(2):
            try:
                await self._replica.shared.end_call(self._replica.name, self._id)
            except StateUnavailable:
                pass


@asynccontextmanager
async def call_lease(
    replica: Replica | None, call_ctx: CallContext, tool: str
) -> AsyncIterator[CallLease | None]:
    """A call's lease while it runs, with replicas (else None)."""
    if replica is None:
        yield None
        return
    caller = call_ctx.caller
    record = {
        "tool": tool,
        "session": call_ctx.session_id,
        "subject": caller.subject,
        "client_id": caller.client_id,
        "issuer": caller.issuer,
        "started": time.time(),
    }
    async with replica.lease(record) as lease:
        yield lease
