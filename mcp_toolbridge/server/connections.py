"""Who is connected, as the console's sessions page lists it (:class:`ConnectionLog`, a
server middleware): every 2025-era connection from its first request until it closes (stdio's
one, each stateful HTTP session), and the callers of sessionless requests (every 2026-07-28
request, ``--stateless``) for :data:`SESSIONLESS_KEPT_S` after their last one, one row per
caller and client, since they hold no connection."""

from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, replace
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from mcp_toolbridge.host import Connected
from mcp_toolbridge.server.host import caller_of

SESSIONLESS_KEPT_S = 300.0
MAX_ROWS = 1000
REPLICA = f"{socket.gethostname()}:{os.getpid()}"
"""This server process, as the replica column names it."""


@dataclass
class _Row:
    connected: Connected
    sessionless: bool


def _client(ctx: ServerRequestContext[Any, Any]) -> str:
    info: Any = None
    params = ctx.session.client_params
    if params is not None:
        info = params.client_info
    if info is None:
        raw = (ctx.meta or {}).get(types.CLIENT_INFO_META_KEY)
        info = types.Implementation.model_validate(raw) if isinstance(raw, dict) else None
    return f"{info.name} {info.version}" if info is not None else ""


class ConnectionLog:
    """The server's connections, for :meth:`rows`."""

    def __init__(self, session_of: Any) -> None:
        """``session_of(ctx)``: (the audit session id, the visibility scope) of a request."""
        self._session_of = session_of
        self._rows: dict[Any, _Row] = {}

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        try:
            self._note(ctx)
        except Exception:  # never fail a request for the console's list
            pass
        return await call_next(ctx)

    def _note(self, ctx: ServerRequestContext[Any, Any]) -> None:
        now = time.time()
        session, scope = self._session_of(ctx)
        caller = caller_of(ctx).describe()
        connection = getattr(ctx.session, "_connection", None)
        sessionless = scope is None
        client = _client(ctx)
        key: Any = ("call", caller, client) if sessionless else id(connection)
        row = self._rows.get(key)
        if row is None:
            if len(self._rows) >= MAX_ROWS:
                self._expire(now, everything=True)
            transport = "stdio" if ctx.request is None else "http"
            if sessionless:
                transport = "http, no session"
                session = "(one per request)"
            row = _Row(
                Connected(
                    session,
                    caller,
                    client,
                    ctx.protocol_version or "",
                    transport,
                    now,
                    now,
                    0,
                    REPLICA,
                ),
                sessionless,
            )
            self._rows[key] = row
            if not sessionless and connection is not None:
                connection.exit_stack.callback(self._rows.pop, key, None)
        row.connected = replace(
            row.connected,
            last=now,
            requests=row.connected.requests + 1,
            era=ctx.protocol_version or row.connected.era,
            client=client or row.connected.client,
        )

    def _expire(self, now: float, *, everything: bool = False) -> None:
        for key, row in list(self._rows.items()):
            if row.sessionless and (everything or now - row.connected.last > SESSIONLESS_KEPT_S):
                del self._rows[key]

    def rows(self) -> list[Connected]:
        self._expire(time.time())
        return [row.connected for row in self._rows.values()]
