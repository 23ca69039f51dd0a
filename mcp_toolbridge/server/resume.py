"""Resumable SSE streams for stateful streamable HTTP sessions (2025-11-25 clients).

In a session a dropped connection is not a cancellation: the call runs on, and what it sends
(its progress, a question, its result) is kept in the session's event store. A client that
lost the response stream of a call reconnects with ``GET`` and ``Last-Event-ID`` and gets
everything after that event, then the rest of the call as it happens, up to its result: the
tool is not run again. The 2026-07-28 era and ``--stateless`` keep no store: there a closed
stream is the cancellation.

- One store per session (:class:`SessionEvents`): the SDK names a stream by its request id,
  which is only unique within a session, so a store shared by sessions would mix them up.
  The store is made when the session is admitted and dropped (its waiters woken) when the
  session ends: DELETE, idle expiry or shutdown.
- Bounded by count and bytes (:data:`MAX_EVENTS`, :data:`MAX_BYTES`): past either, the oldest
  events go first. A resumed call whose result went that way is answered with error
  :data:`RESULT_LOST` instead of being left waiting. All the sessions of a process together
  keep at most :data:`MAX_TOTAL_BYTES` (:class:`EventBudget`): past it, the session that
  stores drops its own oldest events. Before, 10,000 sessions of 4 MiB each (the SDK's
  limit; an anonymous caller's alone) could keep 40 GB, each filled by one call echoing its
  arguments.
- Every SSE stream to a 2025-11-25 client starts with a priming event (an event id, empty data
  and ``retry``): the SDK primes each POST's stream; ``http_sessions.PrimedStreams`` primes
  the GET streams (the standalone one, and each resumed one with the id it resumes from).

With shared state (``--state redis://…``) sessions keep their events in Redis instead
(shared_events.py); http_sessions.py gives each session its store.
"""

from __future__ import annotations

import base64
import binascii
from collections import deque
from dataclasses import dataclass, field

import anyio
from mcp.server.streamable_http import (
    GET_STREAM_KEY,
    EventCallback,
    EventMessage,
    EventStore,
)
from mcp_types import (
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from mcp_toolbridge.server.released import PASSING

MAX_EVENTS = 1000
"""Events kept per session (progress notifications, questions, results, priming events)."""
MAX_BYTES = 4 << 20
"""Bytes of serialized messages kept per session. A single message larger than this (a tool
result of more than 4 MiB) is sent but not kept: that call cannot be resumed."""
MAX_TOTAL_BYTES = 256 << 20
"""Bytes kept by all the sessions of a process together."""
RETRY_MS = 1000
"""The reconnection delay suggested to clients (the SSE ``retry`` field)."""
FOLLOW_IDLE_S = 300.0
"""A resumed stream waiting for the rest of a call closes after this long without an event;
the client reconnects with the last event id it saw (SSE polling)."""
RESULT_LOST = -32000
"""The error answering a resumed request whose result is no longer kept."""
RESUMABLE_SINCE = "2025-11-25"


@dataclass(eq=False, slots=True)
class _Event:
    seq: int
    stream_id: str
    data: bytes | None
    """The serialized JSON-RPC message; None for a priming event."""
    final: bool
    """The response (or error) that ends a request's stream."""

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else 0


@dataclass(slots=True)
class _Stream:
    start: int
    """The seq of this stream's first event (a request id used again starts a new one)."""
    events: deque[_Event] = field(default_factory=deque)
    finished: bool = False
    """Its final message was stored (whether or not it is still kept)."""


def event_token(stream_id: str) -> str:
    return base64.urlsafe_b64encode(stream_id.encode()).decode().rstrip("=")


def parse_event_id(event_id: str) -> tuple[int, str] | None:
    """``<seq>-<base64url stream id>`` -> (seq, stream id); None for anything else."""
    seq, sep, token = event_id.partition("-")
    if not sep or not (seq.isascii() and seq.isdigit()) or not token or len(event_id) > 512:
        return None
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=True)
        stream_id = raw.decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    return (int(seq), stream_id) if event_token(stream_id) == token else None


def request_id_of(stream_id: str) -> str | int:
    """The JSON-RPC id a request's stream is named after: an integer id's decimal text is that
    integer again, any other text the string id it is. A client names its ids: ``"--1"``,
    ``"\u00b2"`` (a digit to ``str.isdigit``, not to ``int``) or 5,000 digits made ``int()`` raise
    in the sweep of the replica that ended a dead replica's streams, which ended that replica
    too (red-team pass of 2026-11-29, 6th)."""
    try:
        value = int(stream_id)
    except ValueError:
        return stream_id
    return value if str(value) == stream_id else stream_id


def lost_result(stream_id: str) -> EventMessage:
    error = ErrorData(
        code=RESULT_LOST,
        message=(
            "the result of this request is no longer kept (a session keeps its last "
            f"{MAX_EVENTS} events, {MAX_BYTES >> 20} MiB); it cannot be resumed"
        ),
    )
    request_id = request_id_of(stream_id)
    return EventMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


@dataclass(slots=True)
class EventBudget:
    """The bytes every session store of a process keeps, together."""

    limit: int = MAX_TOTAL_BYTES
    kept: int = 0

    @property
    def over(self) -> bool:
        return self.kept > self.limit


PROCESS_EVENTS = EventBudget()


class SessionEvents(EventStore):
    """The event store of one session: every message sent on its streams, oldest dropped
    first past :data:`MAX_EVENTS` or :data:`MAX_BYTES`, or while the process's stores
    together keep more than their ``budget``."""

    def __init__(
        self,
        *,
        max_events: int = MAX_EVENTS,
        max_bytes: int = MAX_BYTES,
        budget: EventBudget = PROCESS_EVENTS,
    ) -> None:
        self._max_events = max_events
        self._max_bytes = max_bytes
        self._budget = budget
        self._seq = 0
        self._events: deque[_Event] = deque()
        self._bytes = 0
        self._streams: dict[str, _Stream] = {}
        self._changed = anyio.Event()
        self._closed = False

    @property
    def kept(self) -> tuple[int, int]:
        """(events, bytes) kept now."""
        return len(self._events), self._bytes

    def close(self) -> None:
        """The session ended: drop everything and end every resumed stream."""
        self._closed = True
        self._events.clear()
        self._streams.clear()
        self._budget.kept -= self._bytes
        self._bytes = 0
        self._changed.set()

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        if message is PASSING.message:  # holds nothing, goes nowhere (released.py)
            return ""
        self._seq += 1
        if self._closed:
            return f"{self._seq}-{event_token(stream_id)}"
        data = (
            None
            if message is None
            else message.model_dump_json(by_alias=True, exclude_unset=True).encode()
        )
        final = isinstance(message, JSONRPCResponse | JSONRPCError)
        event = _Event(self._seq, stream_id, data, final)
        stream = self._streams.get(stream_id)
        if stream is None or (stream.finished and message is None):
            stream = self._streams[stream_id] = _Stream(start=event.seq)
        stream.finished = stream.finished or final
        if event.size <= self._max_bytes:
            stream.events.append(event)
            self._events.append(event)
            self._bytes += event.size
            self._budget.kept += event.size
            self._evict()
        elif stream.finished and not stream.events:
            del self._streams[stream_id]
        self._changed.set()
        self._changed = anyio.Event()
        return f"{event.seq}-{event_token(stream_id)}"

    def _evict(self) -> None:
        while self._events and (
            len(self._events) > self._max_events
            or self._bytes > self._max_bytes
            or self._budget.over
        ):
            oldest = self._events.popleft()
            self._bytes -= oldest.size
            self._budget.kept -= oldest.size
            stream = self._streams.get(oldest.stream_id)
            if stream is None:
                continue
            if stream.events and stream.events[0] is oldest:
                stream.events.popleft()
            if stream.finished and not stream.events:
                del self._streams[oldest.stream_id]

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        """Send what followed ``last_event_id`` on its stream. For the standalone GET stream
        that is all, and the SDK follows it from there. A request's stream is followed here,
        event by event, until its final message: a result stored between this replay and the
        SDK's own follow-up could otherwise be missed."""
        parsed = parse_event_id(last_event_id)
        if parsed is None:
            return None
        seq, stream_id = parsed
        stream = self._streams.get(stream_id)
        if stream is None or seq < stream.start:
            if stream_id != GET_STREAM_KEY and not self._closed:
                await send_callback(lost_result(stream_id))
            return None
        if stream_id == GET_STREAM_KEY:
            for event in _after(stream, seq):
                await send_callback(_message(event))
            return stream_id
        await self._follow(stream_id, stream, seq, send_callback)
        return None

    async def _follow(self, stream_id: str, stream: _Stream, seq: int, send: EventCallback) -> None:
        sent = seq
        while not self._closed:
            changed = self._changed
            finished = stream.finished  # before the events are taken: a final stored while
            for event in _after(stream, sent):  # they are sent is taken on the next round
                await send(_message(event))
                sent = event.seq
                if event.final:
                    return
            if finished:  # its final message was stored before and is no longer kept
                await send(lost_result(stream_id))
                return
            with anyio.move_on_after(FOLLOW_IDLE_S) as idle:
                await changed.wait()
            if idle.cancelled_caught:
                return


def _after(stream: _Stream, seq: int) -> list[_Event]:
    """The stream's kept messages after ``seq`` (priming events carry none)."""
    return [e for e in stream.events if e.seq > seq and e.data is not None]


def _message(event: _Event) -> EventMessage:
    assert event.data is not None
    message = jsonrpc_message_adapter.validate_json(event.data, by_name=False)
    return EventMessage(message, f"{event.seq}-{event_token(event.stream_id)}")
