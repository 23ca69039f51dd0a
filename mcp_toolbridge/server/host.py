"""The ports of ``mcp_toolbridge.host`` over MCP: asking the person (elicitation, sampling),
the log messages of a call and of the server (MCP logging), who calls
(:func:`caller_of`: the identity of a request's validated access token, see auth.py), and
whose state a request uses (:func:`is_modern`, :func:`scope_of`).

**Asking**, in both protocol eras. 2025 era: a server-initiated ``elicitation/create`` request
on the connection (needs the client's elicitation capability and a back channel). A client
that declared the capability may still answer the request with a JSON-RPC error (-32601, its
own failure), or with something that is not an elicitation result, and the connection may
close while the question waits (stdin ended: the stdio transport refuses the request with
"Connection closed"). Each raises :class:`~mcp_toolbridge.host.CouldNotAsk` with the reason,
never an answer; a sampling request that fails the same ways raises
:class:`~mcp_toolbridge.host.CouldNotSample`.

2026-07-28 era: no server-initiated requests. The call returns ``InputRequiredResult`` and the
client retries it with ``inputResponses`` and the echoed ``requestState``. The state is sealed
by the SDK's RequestStateBoundary (encrypted, bound to the tool, the arguments and a TTL), and
an answer counts only when it arrives together with that sealed state: an unsolicited
``inputResponses`` never runs a tool. The sealed state also carries the answers of earlier
rounds, since every round re-runs the call from the start.

**Logging** (:class:`ClientLog`, :class:`RequestLog`).

2025 handshake era: the server declares the ``logging`` capability, and ``logging/setLevel``
sets the level of the connection (a stdio process, one HTTP session); until the client sets
one it is ``warning``. Nothing below it is sent. A call's messages (a running tool's lines,
the server's events about the call) ride that call's own stream, related to its request; the
server's events outside a call (a reload) go to each connection's own stream, and the start-up
notices (tools not served) once to each connection, with its first request after
``initialize``. A sessionless HTTP request (``--stateless``) is a connection of its own: a
level it sets does not outlive it.

2026-07-28: ``logging/setLevel`` is gone and the capability is not declared. A request opts in
with ``io.modelcontextprotocol/logLevel`` in its ``_meta`` and gets the messages of its call at
that level or above, on its own stream; a request that did not opt in gets none, and nothing
is sent outside a request.

The messages are plain text (``data`` is a string); the SDK's deprecated logging helpers are
not used (they warn on every call), the notification is sent as any other.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import MessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_toolbridge.host import (
    LOCAL,
    LOG_LEVELS,
    SERVER_LOGGER,
    Answer,
    Caller,
    Confirmation,
    CouldNotAsk,
    CouldNotSample,
    InputPending,
    LogLevel,
    SamplingRequest,
    SamplingResult,
    at_least,
)
from mcp_toolbridge.server import sampling as server_sampling

STATE_VERSION = 1
MAX_CLIENT_TEXT = 200
"""How much of a client's error message a reason quotes."""


def _answer_from(result: Any) -> Answer | None:
    if isinstance(result, types.ElicitResult):
        content = dict(result.content) if result.content is not None else None
        return Answer(result.action, content)
    return None


def _answers_in_state(request_state: str | None) -> dict[str, dict[str, Any]]:
    """Answers carried by our own (already unsealed) state; anything else is ignored."""
    if request_state is None:
        return {}
    try:
        state = json.loads(request_state)
    except ValueError:
        return {}
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return {}
    answers = state.get("answers")
    return answers if isinstance(answers, dict) else {}


def _why_not_asked(error: MCPError, what: str = "the question") -> str:
    """Why ``elicitation/create`` failed, for the model: the error's code and words, clipped.
    The code alone does not tell a closed connection from the client's own error (-32000 is
    both), so the words say which."""
    text = " ".join(error.message.split())
    if len(text) > MAX_CLIENT_TEXT:
        text = text[:MAX_CLIENT_TEXT] + " …"
    return f"{what} ended with error {error.code}: {text or 'no message'}"


class McpHost:
    """The Host of one tools/call request."""

    def __init__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self._modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._known = self._collect(params)

    def _collect(self, params: types.CallToolRequestParams) -> dict[str, Answer]:
        """Answers this round may use: only with our sealed state present."""
        if not self._modern or params.request_state is None:
            return {}
        known: dict[str, Answer] = {}
        for key, raw in _answers_in_state(params.request_state).items():
            if isinstance(raw, dict) and raw.get("action") in ("accept", "decline", "cancel"):
                content = raw.get("content")
                known[key] = Answer(raw["action"], content if isinstance(content, dict) else None)
        for key, response in (params.input_responses or {}).items():
            answer = _answer_from(response)
            if answer is not None:
                known[key] = answer
        return known

    @property
    def can_elicit(self) -> bool:
        caps = self._ctx.session.client_capabilities
        if caps is None or caps.elicitation is None:
            return False
        return self._modern or self._ctx.session.can_send_request

    async def elicit(
        self,
        key: str,
        message: str,
        schema: dict[str, Any],
        about: Confirmation | None = None,
    ) -> Answer:
        if not self._modern:
            try:
                result = await self._ctx.session.elicit_form(
                    message, schema, related_request_id=self._ctx.request_id
                )
            except MCPError as exc:
                raise CouldNotAsk(_why_not_asked(exc)) from exc
            except ValidationError as exc:
                reason = "the client's reply to the question is not an elicitation result"
                raise CouldNotAsk(reason) from exc
            return Answer(result.action, dict(result.content) if result.content else None)
        known = self._known.get(key)
        if known is not None:
            return known
        raise InputPending(key, message, schema)

    @property
    def can_sample(self) -> bool:
        return server_sampling.can_sample(self._ctx)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        try:
            return await server_sampling.sample(self._ctx, request)
        except MCPError as exc:  # the client's own error, or the connection closed
            raise CouldNotSample(_why_not_asked(exc, "the request for a message")) from exc
        except ValidationError as exc:
            raise CouldNotSample("the client's reply is not a sampling result") from exc

    def input_required(self, pending: InputPending) -> types.InputRequiredResult:
        """The result that asks the client for ``pending`` and carries earlier answers."""
        answers = {
            key: {"action": a.action, "content": a.content} for key, a in self._known.items()
        }
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=pending.message, requested_schema=pending.schema
            )
        )
        return types.InputRequiredResult(
            input_requests={pending.key: request},
            request_state=json.dumps({"v": STATE_VERSION, "answers": answers}),
        )


log = logging.getLogger("mcp_toolbridge")

DEFAULT_LEVEL: LogLevel = "warning"


class _NoRequest:
    """The request channel (the SDK's ``DispatchContext``) of a session kept outside any
    request: there is none; what it would send goes on the connection's own channel."""

    transport = TransportContext(kind="standing", can_send_request=False)
    can_send_request = False
    request_id: types.RequestId | None = None
    message_metadata: MessageMetadata = None

    def __init__(self, connection: Connection) -> None:
        self._connection = connection

    @property
    def cancel_requested(self) -> anyio.Event:
        return anyio.Event()

    async def send_raw_request(
        self, method: str, params: Any, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Any, opts: CallOptions | None = None) -> None:
        await self._connection.notify(method, params, opts)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """No request, no progress."""


def standing_session(connection: Connection) -> ServerSession:
    """A ServerSession of ``connection`` that holds no request (a request's ServerSession
    holds the request, its body and its parsed params, until the session ends if kept):
    what it sends goes on the connection's own channel (released.py)."""
    return ServerSession(_NoRequest(connection), connection)


def _connection(session: ServerSession) -> Any:
    """The SDK's connection behind a request's session (no public handle exists)."""
    return getattr(session, "_connection", None)


def _requested(meta: types.RequestParamsMeta | None) -> LogLevel | None:
    given = (meta or {}).get(types.LOG_LEVEL_META_KEY)
    return next((level for level in LOG_LEVELS if level == given), None)


async def _notify(
    session: ServerSession,
    level: LogLevel,
    text: str,
    logger: str,
    related: types.RequestId | None,
) -> None:
    message = types.LoggingMessageNotification(
        params=types.LoggingMessageNotificationParams(level=level, data=text, logger=logger)
    )
    try:
        await session.send_notification(message, related_request_id=related)
    except Exception:  # a client gone away must not fail a call or a reload
        log.debug("could not send a log message to a client", exc_info=True)


class ClientLog:
    """The level of each 2025 connection, and the messages sent to clients."""

    def __init__(self, notices: Sequence[str] = ()) -> None:
        self._levels: dict[int, LogLevel] = {}
        self._notices = tuple(notices)
        self._greeted: set[int] = set()
        self._known: set[int] = set()

    def _key(self, session: ServerSession) -> int | None:
        """The key of the session's connection; what is kept for it goes when it closes."""
        connection = _connection(session)
        if connection is None:
            return None
        key = id(connection)
        if key not in self._known:
            self._known.add(key)
            connection.exit_stack.callback(self._forget, key)
        return key

    def _forget(self, key: int) -> None:
        self._known.discard(key)
        self._levels.pop(key, None)
        self._greeted.discard(key)

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The ``logging/setLevel`` handler (2025 era only: the 2026 method table has none)."""
        key = self._key(ctx.session)
        if key is not None:
            self._levels[key] = params.level
        return types.EmptyResult()

    def level(self, session: ServerSession) -> LogLevel:
        return self._levels.get(id(_connection(session)), DEFAULT_LEVEL)

    def for_call(self, ctx: ServerRequestContext[Any]) -> RequestLog:
        return RequestLog(ctx, self)

    async def greet(self, ctx: ServerRequestContext[Any]) -> None:
        """The start-up notices, once per 2025 connection, on its first request after
        ``initialize`` (related to it, so they ride its stream over HTTP)."""
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        if not self._notices or modern or ctx.method == "initialize":
            return
        key = self._key(ctx.session)
        if key is None or key in self._greeted:
            return
        self._greeted.add(key)
        for text in self._notices:
            if at_least("warning", self.level(ctx.session)):
                await _notify(ctx.session, "warning", text, SERVER_LOGGER, ctx.request_id)

    async def tell(self, sessions: Sequence[ServerSession], level: LogLevel, text: str) -> None:
        """One of the server's events outside any call, to each 2025 connection whose level
        lets it through (on the connection's own stream)."""
        for session in sessions:
            if at_least(level, self.level(session)):
                await _notify(session, level, text, SERVER_LOGGER, None)


class RequestLog:
    """The :class:`~mcp_toolbridge.host.CallLog` of one ``tools/call`` request."""

    def __init__(self, ctx: ServerRequestContext[Any], levels: ClientLog) -> None:
        self._ctx = ctx
        self._levels = levels
        self._modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._requested = _requested(ctx.meta) if self._modern else None

    def wants(self, level: LogLevel) -> bool:
        if self._modern:
            return self._requested is not None and at_least(level, self._requested)
        return at_least(level, self._levels.level(self._ctx.session))

    async def send(self, level: LogLevel, text: str, *, logger: str) -> None:
        if self.wants(level):
            await _notify(self._ctx.session, level, text, logger, self._ctx.request_id)


_UNKNOWN = object()


def asks_progress(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> bool:
    """Whether the caller listens to this call's progress (without a listener the call runs no
    heartbeat): its request carries a progress token, or the SDK's context of the request
    (the dispatcher's, found under the SDK's wrappers) holds a token or a progress callback
    (the in-process dispatcher, which has no tokens). When that context cannot be read, the
    call is taken as listened to."""
    if (params.meta or {}).get("progress_token") is not None:
        return True
    outbound = getattr(ctx.session, "_request_outbound", None)
    while (inner := getattr(outbound, "_inner", None)) is not None:  # the SDK's wrappers
        outbound = inner
    for name in ("_progress_token", "progress_token", "_on_progress"):
        found = getattr(outbound, name, _UNKNOWN)
        if found is not _UNKNOWN:
            return found is not None
    return True


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """Who sends a request: the identity its validated access token names (subject, client,
    issuer, groups, scopes; never the token), else the local caller (stdio, the static
    token)."""
    request = ctx.request
    return caller_in(request.scope) if request is not None else LOCAL


def caller_in(scope: Mapping[str, Any]) -> Caller:
    """The caller of an HTTP request whose access token the edge validated (its ASGI
    ``scope``), else the local caller."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return LOCAL
    return caller_from(user.access_token)


def caller_from(access: AccessToken) -> Caller:
    """The caller a validated access token names (never the token)."""
    claims = access.claims or {}
    issuer = claims.get("iss")
    groups = claims.get("groups") or ()
    return Caller(
        subject=access.subject,
        client_id=access.client_id or None,
        issuer=issuer if isinstance(issuer, str) else None,
        groups=frozenset(g for g in groups if isinstance(g, str)),
        scopes=frozenset(access.scopes),
    )


PROCESS_SCOPE = ""
"""The visibility scope of the process's one connection (stdio, in-memory clients)."""


def is_modern(ctx: ServerRequestContext[Any]) -> bool:
    """The request is of the 2026-07-28 era (no per-connection state)."""
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def scope_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """Whose visible set and session state a request uses: PROCESS_SCOPE for the connection of
    stdio (no HTTP request), the Mcp-Session-Id of a stateful HTTP session, None for a
    sessionless HTTP request (``--stateless``, and every 2026-era request)."""
    if ctx.request is None:
        return PROCESS_SCOPE
    session_id = getattr(getattr(ctx.session, "_connection", None), "session_id", None)
    return session_id if isinstance(session_id, str) and session_id else None
