"""What a caller keeps between calls, behind a port: a person's (or, for an anonymous
caller, a session's) "always" answers, the usage summed for tool budgets and what running
calls hold against them, rate-limit windows, and the values the built-in tools keep (the
todo list, the web_search count). ``port.py`` is the :class:`State` protocol and its records;
``memory.py`` the in-process implementation every server uses by default, which bounds what
it keeps of people (idle expiry, a cap); ``redis_state.py`` the one in a Redis server that
replicas share, over ``redis_client.py`` (the only module that imports the Redis client);
``shared.py`` what replicas share there beyond a person's state (sessions' resumable streams,
truncated outputs, events, leases); ``forgetting.py`` forgets an ended session's entries in
the background.

May import: the vocabulary only (it is part of it)."""

from mcp_toolbridge.state.forgetting import forgetting
from mcp_toolbridge.state.memory import MAX_PEOPLE, PERSON_IDLE_S, MemoryState
from mcp_toolbridge.state.port import (
    PERSON_PREFIX,
    UNKNOWN_CALL_USAGE,
    Admission,
    Grant,
    GrantAction,
    JsonValue,
    State,
    StateUnavailable,
    Usage,
)
from mcp_toolbridge.state.redis_client import RedisLink, check_url, where
from mcp_toolbridge.state.redis_state import RedisState
from mcp_toolbridge.state.shared import SharedStore, StreamEvent

__all__ = [
    "MAX_PEOPLE",
    "PERSON_IDLE_S",
    "PERSON_PREFIX",
    "UNKNOWN_CALL_USAGE",
    "Admission",
    "Grant",
    "GrantAction",
    "JsonValue",
    "MemoryState",
    "RedisLink",
    "RedisState",
    "SharedStore",
    "State",
    "StateUnavailable",
    "StreamEvent",
    "Usage",
    "check_url",
    "forgetting",
    "where",
]
