"""The State port: what outlives one call, kept per owner.

An **owner** is a string naming whose state it is (``CallContext.owner``): a person, as
``Caller.key`` (subject and client id, digested), when the caller is identified by an access
token; otherwise the session (stdio's process, one HTTP session, or a single sessionless
call), as before there were identities. Budgets of an anonymous caller without a session are
summed server-wide (``CallContext.budget_scope``).

Every method is a coroutine, so an implementation may keep its state elsewhere (another
process, a network store); each is atomic on its own (``add_usage``, ``take``, ``hit``,
``admit`` and ``settle`` are read-modify-write inside the store, never in the caller).
Values are plain JSON, so any store can hold them.

A store that cannot be reached raises :class:`StateUnavailable` from any method: whoever
called fails closed (a call is refused, never let through unchecked), and the method either
took effect once or not at all (nothing is retried behind the caller's back, so nothing is
counted twice).

A session's entries are kept until :meth:`State.forget`. A person's (an owner starting with
:data:`PERSON_PREFIX`) outlive their sessions, so a store bounds them: it may forget a person
idle for long (all their entries at once), and a store full of people may refuse a new one
with :class:`~mcp_toolbridge.errors.StateFullError` from a method that would keep something
for them (``usage``, ``admit`` and ``hit`` included: they are the checks before a call),
never from ``add_usage`` or ``settle``, and never by dropping a person's budget usage or
counts before their idle expiry (memory.py says how the in-memory store does it; the Redis
store lets a person's keys expire ``[auth] person_idle_s`` after their last call or change,
with no cap: redis_state.py).
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

    def __sub__(self, other: Usage) -> Usage:
        return Usage(max(0, self.tokens - other.tokens), max(0.0, self.usd - other.usd))

    def most(self, other: Usage) -> Usage:
        """The larger of each figure."""
        return Usage(max(self.tokens, other.tokens), max(self.usd, other.usd))

    def as_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "usd": round(self.usd, 6)}


@dataclass(frozen=True, slots=True)
class Admission:
    """What :meth:`State.admit` decided for one call of a budgeted tool: ``admitted`` (then
    ``held`` is what the call holds until :meth:`State.settle`), with the owner's usage so
    far and what calls still running hold."""

    admitted: bool
    used: Usage
    running: Usage
    held: Usage = Usage()


UNKNOWN_CALL_USAGE = Usage(1, 0.01)
"""What a running call of a tool holds against its budget until a call of it has reported
its usage (then: the largest usage one call reported)."""


class StateUnavailable(Exception):
    """The store holding the state cannot be reached (or did not answer in time). ``reason``
    says which store and what failed, in words a model can read; nothing was changed, or the
    change took effect once."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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

    async def hit(self, owner: str, counter: str, limit: int, window_s: float) -> float:
        """Count one use of ``counter`` unless ``limit`` uses were counted in the last
        ``window_s`` seconds (a sliding window, on the store's clock): 0.0 when counted, else
        the seconds until the oldest counted use leaves the window (nothing changes)."""
        ...

    async def admit(
        self, owner: str, tool: str, tokens: float | None, usd: float | None
    ) -> Admission:
        """Admit one call of a budgeted tool (``tokens`` / ``usd``: its budget, None: no
        such limit) while what its owner used plus what running calls hold stays under each
        limit; an admitted call holds the largest usage one call of the tool reported (or
        :data:`UNKNOWN_CALL_USAGE`) until :meth:`settle`. Check and hold are one step, so
        calls admitted together on any number of servers never pass a budget together."""
        ...

    async def settle(self, owner: str, tool: str, held: Usage, used: Usage | None) -> Usage:
        """An admitted call ended: release what it held and add what it used (None: it
        reported nothing); the owner's new total."""
        ...

    async def forget(self, owner: str) -> None:
        """Drop everything of the owner (its session ended)."""
        ...
