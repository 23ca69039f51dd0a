"""What a caller keeps between calls, behind a port: a person's (or, for an anonymous
caller, a session's) "always" answers, the usage summed for tool budgets and what running
calls hold against them, rate-limit windows, and the values the built-in tools keep (the
todo list, the web_search count). ``port.py`` is the :class:`State` protocol and its records;
``memory.py`` the in-process implementation every server uses by default, which bounds what
it keeps of people (idle expiry, a cap); ``redis_state.py`` the one in a Redis server that
replicas share, over ``redis_client.py`` (the only module that imports the Redis client);
``shared.py`` what replicas share there beyond a person's state (sessions' resumable streams,
truncated outputs, events, leases); ``console_share.py`` what the replicas' web consoles share
there (questions waiting for a person and their answers, the audit stream, who is connected,
sign-in passes); ``forgetting.py`` forgets an ended session's entries in
the background.

May import: the vocabulary only (it is part of it)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use
from mcp_toolbridge.state.forgetting import forgetting  # as its module is named: not lazy

if TYPE_CHECKING:
    from mcp_toolbridge.state.console_share import AuditEntry, ConsoleShare
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
    from mcp_toolbridge.state.redis_client import PASSWORD_ENV, RedisLink, check_url, where
    from mcp_toolbridge.state.redis_state import RedisState
    from mcp_toolbridge.state.shared import SharedStore, StreamEvent

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.state.console_share": (
            "AuditEntry",
            "ConsoleShare",
        ),
        "mcp_toolbridge.state.memory": (
            "MAX_PEOPLE",
            "PERSON_IDLE_S",
            "MemoryState",
        ),
        "mcp_toolbridge.state.port": (
            "PERSON_PREFIX",
            "UNKNOWN_CALL_USAGE",
            "Admission",
            "Grant",
            "GrantAction",
            "JsonValue",
            "State",
            "StateUnavailable",
            "Usage",
        ),
        "mcp_toolbridge.state.redis_client": (
            "PASSWORD_ENV",
            "RedisLink",
            "check_url",
            "where",
        ),
        "mcp_toolbridge.state.redis_state": ("RedisState",),
        "mcp_toolbridge.state.shared": (
            "SharedStore",
            "StreamEvent",
        ),
    },
)

__all__ = [
    "MAX_PEOPLE",
    "PASSWORD_ENV",
    "PERSON_IDLE_S",
    "PERSON_PREFIX",
    "UNKNOWN_CALL_USAGE",
    "Admission",
    "AuditEntry",
    "ConsoleShare",
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
