"""Per-call context: who calls, and what the caller's client can do for a tool.

No MCP types here. The server adapter implements :class:`Host` over MCP elicitation (and,
later, sampling); the CLI and headless transports pass no host, which makes every question
a refusal, never an invented answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
"""progress(current, total, message): forwarded to the client when it asked for progress."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's reply to a form: accept (with content), decline, or cancel."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Host(Protocol):
    """What the client can do for the server during a call."""

    @property
    def can_elicit(self) -> bool: ...

    async def elicit(self, key: str, message: str, schema: dict[str, Any]) -> Answer:
        """Ask the person through a form. ``key`` names the question stably across MCP
        multi-round-trip retries of the same call."""
        ...


class InputPending(Exception):
    """Raised by a Host that must return to the client before it can answer (MCP 2026
    multi-round-trip requests): the call ends now and is retried with the answer."""

    def __init__(self, key: str, message: str, schema: dict[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.message = message
        self.schema = schema


@dataclass(frozen=True, slots=True)
class CallContext:
    session_id: str = "local"
    progress: ProgressFn | None = None
    host: Host | None = None
    """None: headless (no person to ask)."""

    @property
    def headless(self) -> bool:
        return self.host is None or not self.host.can_elicit
