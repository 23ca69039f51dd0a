"""How many streams one caller may hold open on the MCP endpoint at once (ASGI middleware).

Once a request has arrived nothing times it (deadlines.py): a 2026-07-28
``subscriptions/listen``, a 2025-11-25 session's GET stream, a call waiting on its deadline
hold their connection, and a file descriptor, for as long as they last. So an identified
caller (OAuth) holds at most :data:`MAX_STREAMS_PER_CALLER` of them at once, and everyone
together at most :func:`total_streams` (half the process's file descriptors, ``ulimit -n``):
one person or agent cannot use up the descriptors every other caller, the tools' pipes and
the server itself need. Each replica counts its own: the descriptors are its own.

- A GET, and a POST that carries a request, takes a place when it arrives; a response that
  turns out not to be a stream (a JSON answer, an error, ``202`` for a notification) gives
  it back with its first bytes, a stream with its last ones, and any request that ends
  otherwise (the client gone, a cancellation, the shutdown, an error) when it ends.
- Past a share, a GET or a request is answered as the SDK answers a session beyond its limit:
  ``503`` with a JSON-RPC error (no ``Retry-After``: a place frees when one of the caller's
  streams ends, not at a time the server knows). A POST of a caller at its share is read
  first (the SDK reads it whole anyway, up to 4 MiB): notifications and responses (an
  answer to the server's question, ``notifications/cancelled``) still pass, or a caller at
  its share could neither answer nor cancel the calls that hold it there.
- The static token, and no credential on loopback, are one caller: the total alone holds.

What a request costs here is a dict lookup and two increments.
"""

from __future__ import annotations

import json
import logging
import resource

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware

from mcp_toolbridge.edge import ASGIApp, Message, Receive, Scope, Send, send_json_reply

log = logging.getLogger("mcp_toolbridge")

Who = tuple[object, str | None, str | None]

MAX_STREAMS_PER_CALLER = 64
"""Streams one identified caller may hold open at once on a process: its GET streams,
listen streams and requests in flight together."""
MAX_STREAMS = 10_000
"""The most streams of everyone at once, however many descriptors the process may open."""
INTERNAL_ERROR = -32603
"""The JSON-RPC code the SDK answers a session beyond its limit with (503)."""


def total_streams() -> int:
    """Half the process's file descriptors (its soft ``RLIMIT_NOFILE``), the other half kept
    for the tools' pipes, sandboxes, logs, Redis and new connections; at most
    :data:`MAX_STREAMS`, at least one caller's share."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_STREAMS
    return max(MAX_STREAMS_PER_CALLER, min(MAX_STREAMS, soft // 2))


def _who(scope: Scope) -> Who | None:
    """The identified caller of a request (its issuer, subject and client), else None."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    client = token.client_id or None
    if token.subject is None and client is None:
        return None
    return ((token.claims or {}).get("iss"), token.subject, client)


def _is_stream(start: Message) -> bool:
    for name, value in start.get("headers") or ():
        if name.lower() == b"content-type":
            return bool(value.startswith(b"text/event-stream"))
    return False


def _carries_request(body: bytes) -> bool:
    """Whether a POST's body is a JSON-RPC request (not a notification or a response; what
    does not parse is answered by the SDK as ever)."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    return isinstance(message, dict) and "method" in message and "id" in message


class StreamShares:
    """ASGI middleware of the MCP endpoint: the caller's share of streams, and the total."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        per_caller: int = MAX_STREAMS_PER_CALLER,
        total: int | None = None,
    ) -> None:
        self._app = app
        self.per_caller = per_caller
        self.total = total_streams() if total is None else total
        self.open = 0
        """Streams (and requests that may become one) held open now."""
        self._held: dict[Who, int] = {}
        self._warned: set[Who | None] = set()

    def held_by(self, who: Who) -> int:
        return self._held.get(who, 0)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") not in ("GET", "POST"):
            await self._app(scope, receive, send)
            return
        who = _who(scope)
        if not self._take(who):
            if scope["method"] == "POST":
                passing = self._peeked(who)
                await RequestBodyLimitMiddleware(passing, DEFAULT_MAX_REQUEST_BODY_SIZE)(
                    scope, receive, send
                )
            else:
                await self._refuse(who, send)
            return
        held = True

        def give_back() -> None:
            nonlocal held
            if held:
                held = False
                self._give(who)

        async def sending(message: Message) -> None:
            kind = message["type"]
            if kind == "http.response.start" and not _is_stream(message):
                give_back()
            elif kind == "http.response.body" and not message.get("more_body", False):
                give_back()  # before its last bytes leave: a client that saw it end may reopen
            await send(message)

        try:
            await self._app(scope, receive, sending)
        finally:
            give_back()

    def _take(self, who: Who | None) -> bool:
        if self.open >= self.total:
            return False
        if who is not None:
            held = self._held.get(who, 0)
            if held >= self.per_caller:
                return False
            self._held[who] = held + 1
        self.open += 1
        return True

    def _give(self, who: Who | None) -> None:
        self.open -= 1
        if self.open < self.total:
            self._warned.discard(None)
        if who is not None:
            held = self._held[who] - 1
            if held:
                self._held[who] = held
            else:
                del self._held[who]
            self._warned.discard(who)

    def _peeked(self, who: Who | None) -> ASGIApp:
        """A POST beyond a share: refused when it carries a request, else passed on."""

        async def passing(scope: Scope, receive: Receive, send: Send) -> None:
            first = await receive()
            whole = first["type"] == "http.request" and not first.get("more_body", False)
            if whole and _carries_request(first.get("body", b"")):
                await self._refuse(who, send)
                return
            replayed = False

            async def again() -> Message:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return first

            await self._app(scope, again, send)

        return passing

    async def _refuse(self, who: Who | None, send: Send) -> None:
        mine = who is not None and self._held.get(who, 0) >= self.per_caller
        if mine:
            message = (
                f"Too many open streams: this caller holds {self.per_caller} already (GET "
                "streams, subscriptions and calls in flight); close one, or wait for a call "
                "to end, first"
            )
        else:
            message = f"Too many open streams: the server holds {self.total} already"
        key = who if mine else None
        if key not in self._warned:  # once until the share frees again: no log flood
            self._warned.add(key)
            subject = who[1] or who[2] if mine and who is not None else "everyone"
            log.warning("HTTP: refused a stream of %s: %s", subject, message)
        error = {"code": INTERNAL_ERROR, "message": message}
        await send_json_reply(send, 503, {"jsonrpc": "2.0", "id": None, "error": error})
