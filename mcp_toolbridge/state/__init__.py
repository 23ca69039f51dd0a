"""What a caller keeps between calls, behind a port: a person's (or, for an anonymous
caller, a session's) "always" answers, the usage summed for tool budgets, and the values the
built-in tools keep (the todo list, the web_search count). ``port.py`` is the :class:`State`
protocol and its records; ``memory.py`` the in-process implementation every server uses by
default, which bounds what it keeps of people (idle expiry, a cap); ``forgetting.py`` forgets
an ended session's entries in the background. Another implementation (a shared store for many
replicas) goes beside it.

May import: the vocabulary only (it is part of it)."""

from mcp_toolbridge.state.forgetting import forgetting
from mcp_toolbridge.state.memory import MAX_PEOPLE, PERSON_IDLE_S, MemoryState
from mcp_toolbridge.state.port import PERSON_PREFIX, Grant, GrantAction, JsonValue, State, Usage

__all__ = [
    "MAX_PEOPLE",
    "PERSON_IDLE_S",
    "PERSON_PREFIX",
    "Grant",
    "GrantAction",
    "JsonValue",
    "MemoryState",
    "State",
    "Usage",
    "forgetting",
]
