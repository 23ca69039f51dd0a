"""The console's desk: confirmations waiting for a person, and the Host that puts them there.

A call whose client cannot ask (headless) and whose server runs a console is asked here: the
gate calls :meth:`ConsoleHost.elicit` with the confirmation in parts, a :class:`Waiting`
appears on the desk, and the call waits until a person answers it in the console or its
deadline (the tool's timeout) passes; then it is refused, never approved. A call cancelled
while it waits (its client went away) leaves the desk at once. Answers are accepted only for
what the desk is waiting for: an unknown or already answered id is refused.

The pages go through :meth:`Desk.listing`, :meth:`Desk.find` and :meth:`Desk.give`; with
replicas (replicated.py) they show and answer the questions of every replica, while the
calls wait, as here, on their own.
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
    LOCAL,
    Answer,
    Caller,
    Confirmation,
    CouldNotAsk,
    Host,
    SamplingRequest,
    SamplingResult,
)

Choice = Literal["once", "always", "deny"]
CHOICES: dict[Choice, str] = {"once": ALLOW_ONCE, "always": ALLOW_ALWAYS, "deny": REJECT}
"""The console's three buttons and the elicitation choice each one is."""
_DECISIONS: dict[str, str] = {"once": ALLOW_ONCE, "always": ALLOW_ALWAYS, "deny": REJECT}
MAX_WAITING = 256
"""How many questions may wait at once; a call beyond them is refused at once."""
MAX_WAITING_PER_CALLER = 32
"""How many questions of one identified caller (OAuth), confirmations and the question tool's
forms together, may wait at once, so one person or agent cannot fill the desk and have
everyone else's calls refused (anonymous callers, the static token's, are one caller:
:data:`MAX_WAITING` alone holds for them)."""
MAX_TEXT = 4000
"""The longest free-text answer kept."""
NOTHING_WAITS = (
    "Nothing waits under that id: it was answered, its deadline passed, or its call was cancelled."
)


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
    replica: str = ""
    """The replica whose call waits ("": this process, with no replicas)."""
    caller: Caller = LOCAL
    """Whose call asks (a confirmation's is its ``about.caller``)."""
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


def answer_of(
    waiting: Waiting, choice: str, values: dict[str, list[str]], by: str
) -> Answer | None:
    """What a person's form post answers: a confirmation's button (``once``, ``always``,
    ``deny``), or a question form's ``answer`` (its fields, kept to their choices) or
    ``decline``; None when the choice does not fit what waits."""
    if waiting.about is not None:
        decision = _DECISIONS.get(choice)
        return None if decision is None else Answer("accept", {"decision": decision}, by=by)
    if choice == "decline":
        return Answer("decline")
    if choice == "answer":
        content = {f.name: f.value(values.get(f.name, [])) for f in waiting.fields}
        return Answer("accept", content, by=by)
    return None


class Desk:
    """The confirmations waiting for a person, and a change counter pages wait on."""

    def __init__(self) -> None:
        self.replica = ""
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

    def touch(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(
        self,
        about: Confirmation | None,
        message: str = "",
        schema: dict[str, Any] | None = None,
        caller: Caller = LOCAL,
    ) -> Answer:
        """Put ``about`` (or the form ``message``, ``schema`` of ``caller``'s call) on the
        desk and wait for its answer: a confirmation up to ``about.wait_s``, a form as long
        as its call runs."""
        if about is not None:
            caller = about.caller
        if len(self._waiting) >= MAX_WAITING:
            raise CouldNotAsk(
                f"{MAX_WAITING} calls already wait for an answer in the console; answer or "
                "deny them there first"
            )
        if self._held_by(caller) >= MAX_WAITING_PER_CALLER:
            raise CouldNotAsk(
                f"{MAX_WAITING_PER_CALLER} calls of {caller.describe()} already wait "
                "for a person's answer in the console; wait for their answers before making "
                "more calls that need one"
            )
        waiting = Waiting(
            self._new_id(),
            about,
            time.time(),
            message,
            schema or {},
            replica=self.replica,
            caller=caller,
        )
        self._waiting[waiting.id] = waiting
        self.touch()
        late: Answer | None = None
        try:
            await self._posted(waiting)
            with anyio.move_on_after(about.wait_s if about is not None else math.inf):
                await waiting.answered.wait()
        finally:
            self._waiting.pop(waiting.id, None)
            self.touch()
            with anyio.CancelScope(shield=True):
                late = await self._closed(waiting)
        if waiting.answer is None and late is not None:  # given in time, heard late
            waiting.answer = late
        if waiting.answer is None:
            within = f"within {about.wait_s:g} s " if about is not None else ""
            raise CouldNotAsk(
                f"nobody answered in the mcp-toolbridge console {within}(the call's deadline)"
            )
        return waiting.answer

    def _new_id(self) -> str:
        return secrets.token_urlsafe(12)

    def _held_by(self, caller: Caller) -> int:
        """How many questions of ``caller`` wait here (0: an anonymous one)."""
        who = caller.key
        if who is None:
            return 0
        return sum(1 for w in self._waiting.values() if w.caller.key == who)

    async def _posted(self, waiting: Waiting) -> None:
        """A question is on this desk (replicas: show it on every console)."""

    async def _closed(self, waiting: Waiting) -> Answer | None:
        """Its wait ended (replicas: take it off every console; an answer given in time
        that has not arrived yet is returned). Never raises."""
        return None

    # -- what the pages use ------------------------------------------------------------------

    async def listing(self) -> list[Waiting]:
        """What waits for a person, oldest first."""
        return list(self)

    async def count(self) -> int:
        return len(self._waiting)

    async def find(self, waiting_id: str) -> Waiting | None:
        """What waits under ``waiting_id``; None: answered, ended, or never asked."""
        return self._waiting.get(waiting_id)

    async def give(self, waiting: Waiting, answer: Answer) -> str | None:
        """Give ``answer`` to what waits (once); None when taken, else why it was refused."""
        local = self._waiting.get(waiting.id)
        if local is None or local.answer is not None:
            return NOTHING_WAITS
        self._answered(local, answer)
        return None

    def _answered(self, waiting: Waiting, answer: Answer) -> Waiting:
        waiting.answer = answer
        waiting.answered.set()
        return waiting


class ConsoleHost:
    """The Host a headless call is asked through: the console's desk (confirmations, and the
    question tool's forms). Every call asks through :meth:`for_caller`'s view, which brings
    its caller to the desk: a caller's forms count toward its share as its confirmations do."""

    def __init__(self, desk: Desk, caller: Caller = LOCAL) -> None:
        self.desk = desk
        self.caller = caller

    def for_caller(self, caller: Caller) -> Host:
        return ConsoleHost(self.desk, caller)

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
        return await self.desk.wait(about, message, schema, self.caller)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        raise NotImplementedError("the console has no model to sample")
