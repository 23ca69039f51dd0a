"""The console's desk: confirmations waiting for a person, and the Host that puts them there.

A call whose client cannot ask (headless) and whose server runs a console is asked here: the
gate calls :meth:`ConsoleHost.elicit` with the confirmation in parts, a :class:`Waiting`
appears on the desk, and the call waits until a person answers it in the console or its
deadline (the tool's timeout) passes; then it is refused, never approved. A call cancelled
while it waits (its client went away) leaves the desk at once. Answers are accepted only for
what the desk is waiting for: an unknown or already answered id is refused.
"""

from __future__ import annotations

import math
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
"""How many questions may wait at once; a call beyond them is refused at once."""
MAX_TEXT = 4000
"""The longest free-text answer kept."""


@dataclass(eq=False)
class Waiting:
    """One question on the desk: a confirmation (``about``), or the question tool's form
    (``message`` and ``schema``; it waits as long as the tool's call may run)."""

    id: str
    about: Confirmation | None
    since: float
    """Wall-clock time it arrived (seconds since the epoch)."""
    message: str = ""
    schema: dict[str, Any] = field(default_factory=dict)
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer | None = None

    @property
    def deadline(self) -> float:
        return self.since + (self.about.wait_s if self.about is not None else math.inf)

    @property
    def fields(self) -> list[Field]:
        """The form's questions, for the page (the question tool's form only)."""
        return [Field.of(name, prop) for name, prop in self.schema.get("properties", {}).items()]


@dataclass(frozen=True, slots=True)
class Field:
    """One question of a form: free text, one choice (``options``) or several (``many``)."""

    name: str
    title: str
    description: str
    options: tuple[tuple[str, str], ...]
    """(value, label) of each choice; empty: free text."""
    many: bool

    @classmethod
    def of(cls, name: str, prop: dict[str, Any]) -> Field:
        many = prop.get("type") == "array"
        listed = (prop.get("items") or {}).get("anyOf", []) if many else prop.get("oneOf", [])
        options = tuple(
            (str(o["const"]), str(o.get("title") or o["const"])) for o in listed if "const" in o
        )
        title = str(prop.get("title") or name)
        return cls(name, title, str(prop.get("description") or ""), options, many)

    def value(self, given: list[str]) -> str | list[str] | None:
        """What the person gave for this field, kept to its choices; None: nothing valid."""
        allowed = {value for value, _ in self.options}
        if self.many:
            return [g for g in given if g in allowed]
        if not given:
            return None
        if self.options:
            return given[0] if given[0] in allowed else None
        return given[0][:MAX_TEXT]


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

    async def wait(
        self, about: Confirmation | None, message: str = "", schema: dict[str, Any] | None = None
    ) -> Answer:
        """Put ``about`` (or the form ``message``, ``schema``) on the desk and wait for its
        answer: a confirmation up to ``about.wait_s``, a form as long as its call runs."""
        if len(self._waiting) >= MAX_WAITING:
            raise CouldNotAsk(
                f"{MAX_WAITING} calls already wait for an answer in the console; answer or "
                "deny them there first"
            )
        waiting = Waiting(secrets.token_urlsafe(12), about, time.time(), message, schema or {})
        self._waiting[waiting.id] = waiting
        self._touch()
        try:
            with anyio.move_on_after(about.wait_s if about is not None else math.inf):
                await waiting.answered.wait()
        finally:
            self._waiting.pop(waiting.id, None)
            self._touch()
        if waiting.answer is None:
            within = f"within {about.wait_s:g} s " if about is not None else ""
            raise CouldNotAsk(
                f"nobody answered in the mcp-toolbridge console {within}(the call's deadline)"
            )
        return waiting.answer

    def answer(self, waiting_id: str, choice: Choice, by: str) -> Waiting | None:
        """Answer a waiting confirmation; None when nothing waits under that id (answered,
        expired, or never asked)."""
        waiting = self._waiting.get(waiting_id)
        if waiting is None or waiting.answer is not None or waiting.about is None:
            return None
        return self._answered(waiting, Answer("accept", {"decision": CHOICES[choice]}, by=by))

    def reply(self, waiting_id: str, content: dict[str, Any] | None, by: str) -> Waiting | None:
        """Answer a waiting form with ``content`` (None: the person declined)."""
        waiting = self._waiting.get(waiting_id)
        if waiting is None or waiting.answer is not None or waiting.about is not None:
            return None
        answer = Answer("accept", content, by=by) if content is not None else Answer("decline")
        return self._answered(waiting, answer)

    def _answered(self, waiting: Waiting, answer: Answer) -> Waiting:
        waiting.answer = answer
        waiting.answered.set()
        return waiting


class ConsoleHost:
    """The Host a headless call is asked through: the console's desk (confirmations, and the
    question tool's forms)."""

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
        return await self.desk.wait(about, message, schema)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        raise NotImplementedError("the console has no model to sample")
