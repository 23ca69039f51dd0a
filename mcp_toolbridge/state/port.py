"""The State port: what outlives one call, kept per owner.

An **owner** is a string naming whose state it is (``CallContext.owner``): a person, as
``Caller.key`` (subject and client id, digested), when the caller is identified by an access
token; otherwise the session (stdio's process, one HTTP session, or a single sessionless
call), as before there were identities. Budgets of an anonymous caller without a session are
summed server-wide (``CallContext.budget_scope``).

Every method is a coroutine, so an implementation may keep its state elsewhere (another
process, a network store); each is atomic on its own (``add_usage`` and ``take`` are
read-modify-write inside the store, never in the caller). Values are plain JSON, so any
store can hold them.

A session's entries are kept until :meth:`State.forget`. A person's (an owner starting with
:data:`PERSON_PREFIX`) outlive their sessions, so a store bounds them: it may forget a person
idle for long (all their entries at once), and a store full of people may refuse a new one
with :class:`~mcp_toolbridge.errors.StateFullError` from a method that would keep something
for them (``usage`` included: it is the check before a budgeted call), never from
``add_usage``, and never by dropping a person's budget usage or counts before their idle
expiry (memory.py says how the in-memory store does it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias

PERSON_PREFIX = "caller:"
"""How an owner that names a person starts (``Caller.key``); any other owner is a session."""
GrantAction = Literal["allow", "deny", "ask"]
JsonValue: TypeAlias = Any
"""A value ``json.dumps`` accepts (dicts, lists, strings, numbers, booleans, None)."""


@dataclass(frozen=True, slots=True)
class Grant:
    """One "always" answer: the rule it adds for its owner, as written (not compiled).
    ``pattern`` is an exact text or absolute path (no variables); None: any argument."""

    permission: str
    pattern: str | None
    action: GrantAction = "allow"


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls used, as their results reported it (tool budgets)."""

    tokens: int = 0
    usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.tokens + other.tokens, self.usd + other.usd)

    def as_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "usd": round(self.usd, 6)}


class State(Protocol):
    """Per-owner state: "always" answers, budget usage, the built-in tools' values."""

    async def grants(self, owner: str) -> tuple[Grant, ...]:
        """The owner's "always" answers, oldest first (empty when none)."""
        ...

    async def add_grants(self, owner: str, grants: Sequence[Grant]) -> None:
        """Remember more "always" answers of the owner (a grant already kept is kept once)."""
        ...

    async def usage(self, owner: str, tool: str) -> Usage:
        """What the owner's calls of ``tool`` used so far (zero when nothing was reported)."""
        ...

    async def add_usage(self, owner: str, tool: str, usage: Usage) -> Usage:
        """Add one call's usage; the new total."""
        ...

    async def load(self, owner: str, name: str) -> JsonValue | None:
        """A built-in tool's stored value (``todo``), or None when never saved."""
        ...

    async def save(self, owner: str, name: str, value: JsonValue) -> None:
        """Replace a built-in tool's stored value."""
        ...

    async def take(self, owner: str, counter: str, limit: int) -> bool:
        """Count one more use of ``counter`` unless ``limit`` were counted already: True when
        counted (the use may go ahead), False at the limit (nothing changes)."""
        ...

    async def forget(self, owner: str) -> None:
        """Drop everything of the owner (its session ended)."""
        ...
