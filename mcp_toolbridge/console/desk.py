"""The console's desk: confirmations waiting for a person, and the Host that puts them there.

A call whose client cannot ask (headless) and whose server runs a console is asked here: the
gate calls :meth:`ConsoleHost.elicit` with the confirmation in parts, a :class:`Waiting`
appears on the desk, and the call waits until a person answers it in the console or its
deadline (the tool's timeout) passes; then it is refused, never approved. A call cancelled
while it waits (its client went away) leaves the desk at once. Answers are accepted only for
what the desk is waiting for: an unknown or already answered id is refused.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from mcp_toolbridge.bridge import ALLOW_ALWAYS, ALLOW_ONCE, REJECT
from mcp_toolbridge.host import (
    Answer,
    Confirmation,
    CouldNotAsk,
    SamplingRequest,
    SamplingResult,
)

Choice = Literal["once", "always", "deny"]
CHOICES: dict[Choice, str] = {"once": ALLOW_ONCE, "always": ALLOW_ALWAYS, "deny": REJECT}
"""The console's three buttons and the elicitation choice each one is."""
MAX_WAITING = 256
"""How many confirmations may wait at once; a call beyond them is refused at once."""


@dataclass(eq=False)
class Waiting:
    """One confirmation on the desk."""

    id: str
    about: Confirmation
    since: float
    """Wall-clock time it arrived (seconds since the epoch)."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None

    @property
    def deadline(self) -> float:
        return self.since + self.about.wait_s


class Desk:
    """The confirmations waiting for a person, and a change counter pages wait on."""

    def __init__(self) -> None:
        self._waiting: dict[str, Waiting] = {}
        self._changed = anyio.Event()
        self.version = 0

    def __iter__(self) -> Iterator[Waiting]:
        return iter(sorted(self._waiting.values(), key=lambda w: w.since))

    def __len__(self) -> int:
        return len(self._waiting)

    def get(self, waiting_id: str) -> Waiting | None:
        return self._waiting.get(waiting_id)

    async def changed(self, seen: int) -> int:
        """Wait until the desk differs from version ``seen``; the new version."""
        while self.version == seen:
            await self._changed.wait()
        return self.version

    def _touch(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, about: Confirmation) -> Answer:
        """Put ``about`` on the desk and wait for its answer, up to ``about.wait_s``."""
        if len(self._waiting) >= MAX_WAITING:
            raise CouldNotAsk(
                f"{MAX_WAITING} calls already wait for an answer in the console; answer or "
                "deny them there first"
            )
        waiting = Waiting(secrets.token_urlsafe(12), about, time.time())
        self._waiting[waiting.id] = waiting
        self._touch()
        try:
            with anyio.move_on_after(about.wait_s):
                await waiting.answered.wait()
        finally:
            self._waiting.pop(waiting.id, None)
            self._touch()
        if waiting.answer is None:
            raise CouldNotAsk(
                f"nobody answered in the mcp-toolbridge console within {about.wait_s:g} s "
                "(the call's deadline)"
            )
        return waiting.answer

    def answer(self, waiting_id: str, choice: Choice, by: str) -> Waiting | None:
        """Answer a waiting confirmation; None when nothing waits under that id (answered,
        expired, or never asked)."""
        waiting = self._waiting.get(waiting_id)
        if waiting is None or waiting.answer is not None:
            return None
        waiting.answer = Answer("accept", {"decision": CHOICES[choice]}, by=by)
        waiting.answered.set()
        return waiting


class ConsoleHost:
    """The Host a headless call is asked through: the console's desk. Confirmations only;
    the question tool's forms stay with the client (a headless one gets its fixed error)."""

    def __init__(self, desk: Desk) -> None:
        self.desk = desk

    @property
    def can_elicit(self) -> bool:
        return True

    @property
    def can_sample(self) -> bool:
        return False

    async def elicit(
        self,
        key: str,
        message: str,
        schema: dict[str, Any],
        about: Confirmation | None = None,
    ) -> Answer:
        if about is None:
            raise CouldNotAsk("the console answers confirmations only")
        return await self.desk.wait(about)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        raise NotImplementedError("the console has no model to sample")
