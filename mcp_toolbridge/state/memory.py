"""The State port in this process's memory: the default, for stdio and a single server.

Nothing is awaited inside a method, so each is atomic with respect to the event loop's other
tasks. A session's entries live until :meth:`MemoryState.forget` (the session ended). A
**person's** (an owner starting with :data:`~mcp_toolbridge.state.port.PERSON_PREFIX`: a
caller an access token named) are bounded, since a server with an authorization server serves
any number of people over its life:

- **Idle expiry.** Everything of a person is forgotten once nothing of theirs was read or
  written for ``person_idle_s`` (default a day). Every call of theirs reads their "always"
  answers, so a person who keeps calling keeps their state; within the window their budgets
  hold across their sessions.
- **A cap on people kept**, ``max_people``. A person who needs something kept when that many
  are takes the place of the least recently active person who holds **no limit**: no budget
  usage and no counted use (web_search). What that person loses can only make later calls
  stricter: their "always" answers (they are asked again) and their todo list. A person who
  holds a limit is never dropped before their idle expiry, since their budget would start
  again from zero. When every person kept holds one, the newcomer is refused with
  :class:`~mcp_toolbridge.errors.StateFullError` (``state.full``) by the methods that would
  keep something: :meth:`add_grants`, :meth:`save`, :meth:`take`, :meth:`hit` (a rate
  limit's window holds a limit too), and :meth:`usage` and :meth:`admit` (the budget check
  before a budgeted call: it reserves the person's place, so the call's usage can be added
  after it ran). :meth:`add_usage` and :meth:`settle` never refuse: a call that ran is
  counted, past the cap if it must (only a person whose place expired during the call gets
  there).

Reads of a person not kept (:meth:`grants`, :meth:`load`) find nothing and keep nothing. A
person with a call in flight cannot be told from the port; they were active when it started,
and a limit-holder is never dropped, so the most a call in flight of a person without one can
lose to newcomers is their "always" answers and todo list, when the cap is reached.
"""

from __future__ import annotations

import copy
import json
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

from mcp_toolbridge.errors import StateFullError
from mcp_toolbridge.state.port import (
    PERSON_PREFIX,
    UNKNOWN_CALL_USAGE,
    Admission,
    Grant,
    JsonValue,
    Usage,
)

PERSON_IDLE_S = 86_400.0
"""How long a person's entries are kept after their last activity (a day)."""
MAX_PEOPLE = 10_000
"""How many people's entries are kept at most."""


class MemoryState:
    """:class:`~mcp_toolbridge.state.port.State` in dictionaries, by owner (see the module
    doc for how long a person's entries are kept)."""

    def __init__(
        self,
        *,
        person_idle_s: float = PERSON_IDLE_S,
        max_people: int = MAX_PEOPLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not person_idle_s > 0 or max_people < 1:
            raise ValueError("person_idle_s must be positive and max_people at least 1")
        self.person_idle_s = person_idle_s
        self.max_people = max_people
        self._clock = clock
        self._grants: dict[str, dict[Grant, None]] = {}
        self._usage: dict[str, dict[str, Usage]] = {}
        self._values: dict[str, dict[str, JsonValue]] = {}
        self._counters: dict[str, dict[str, int]] = {}
        self._hits: dict[str, dict[str, deque[float]]] = {}
        self._running: dict[str, dict[str, Usage]] = {}
        self._largest: dict[str, dict[str, Usage]] = {}
        self._free: OrderedDict[str, float] = OrderedDict()
        """People kept who hold no limit, least recently active first: their last activity."""
        self._limited: OrderedDict[str, float] = OrderedDict()
        """People kept who hold budget usage or a counted use, the same way."""

    async def grants(self, owner: str) -> tuple[Grant, ...]:
        if not self._seen(owner):
            return ()
        return tuple(self._grants.get(owner, ()))

    async def add_grants(self, owner: str, grants: Sequence[Grant]) -> None:
        self._keep(owner)
        kept = self._grants.setdefault(owner, {})
        kept.update(dict.fromkeys(grants))

    async def usage(self, owner: str, tool: str) -> Usage:
        self._keep(owner, limit=True)
        return self._usage.get(owner, {}).get(tool, Usage())

    async def add_usage(self, owner: str, tool: str, usage: Usage) -> Usage:
        self._keep(owner, limit=True, past_cap=True)
        sums = self._usage.setdefault(owner, {})
        total = sums[tool] = sums.get(tool, Usage()) + usage
        return total

    async def load(self, owner: str, name: str) -> JsonValue | None:
        if not self._seen(owner):
            return None
        value = self._values.get(owner, {}).get(name)
        return copy.deepcopy(value)

    async def save(self, owner: str, name: str, value: JsonValue) -> None:
        json.dumps(value)  # what a shared store could not keep is refused here too
        self._keep(owner)
        self._values.setdefault(owner, {})[name] = copy.deepcopy(value)

    async def take(self, owner: str, counter: str, limit: int) -> bool:
        self._keep(owner, limit=True)
        counts = self._counters.setdefault(owner, {})
        used = counts.get(counter, 0)
        if used >= limit:
            return False
        counts[counter] = used + 1
        return True

    async def hit(self, owner: str, counter: str, limit: int, window_s: float) -> float:
        self._keep(owner, limit=True)
        now = self._clock()
        hits = self._hits.setdefault(owner, {}).setdefault(counter, deque())
        while hits and hits[0] <= now - window_s:
            hits.popleft()
        if len(hits) >= limit:
            return max(0.001, hits[0] + window_s - now) if hits else window_s
        hits.append(now)
        return 0.0

    async def admit(
        self, owner: str, tool: str, tokens: float | None, usd: float | None
    ) -> Admission:
        self._keep(owner, limit=True)
        used = self._usage.get(owner, {}).get(tool, Usage())
        running = self._running.get(owner, {}).get(tool, Usage())
        total = used + running
        spent = tokens is not None and total.tokens >= tokens
        if spent or (usd is not None and total.usd >= usd):
            return Admission(False, used, running)
        held = self._largest.get(owner, {}).get(tool, UNKNOWN_CALL_USAGE)
        self._running.setdefault(owner, {})[tool] = running + held
        return Admission(True, used, running, held)

    async def settle(self, owner: str, tool: str, held: Usage, used: Usage | None) -> Usage:
        self._keep(owner, limit=True, past_cap=True)
        running = self._running.setdefault(owner, {})
        running[tool] = running.get(tool, Usage()) - held
        if used is None:
            return self._usage.get(owner, {}).get(tool, Usage())
        largest = self._largest.setdefault(owner, {})
        largest[tool] = largest.get(tool, Usage()).most(used)
        return await self.add_usage(owner, tool, used)

    async def forget(self, owner: str) -> None:
        self._drop(owner)

    def _tables(self) -> tuple[dict[str, Any], ...]:
        return (
            self._grants,
            self._usage,
            self._values,
            self._counters,
            self._hits,
            self._running,
            self._largest,
        )

    def owners(self) -> int:
        """How many owners have something kept (for tests and figures)."""
        return len({owner for table in self._tables() for owner in table})

    def people(self) -> int:
        """How many people are kept (for tests and figures)."""
        return len(self._free) + len(self._limited)

    def _drop(self, owner: str) -> None:
        for table in self._tables():
            table.pop(owner, None)
        self._free.pop(owner, None)
        self._limited.pop(owner, None)

    def _expire(self, now: float) -> None:
        """Forget the people idle for longer than ``person_idle_s``."""
        horizon = now - self.person_idle_s
        for order in (self._free, self._limited):
            while order:
                owner, last = next(iter(order.items()))
                if last > horizon:
                    break
                self._drop(owner)

    def _seen(self, owner: str) -> bool:
        """Note a read by ``owner``; whether anything of theirs is kept (a session's always
        may be)."""
        now = self._clock()
        self._expire(now)
        if not owner.startswith(PERSON_PREFIX):
            return True
        for order in (self._limited, self._free):
            if owner in order:
                order[owner] = now
                order.move_to_end(owner)
                return True
        return False

    def _keep(self, owner: str, *, limit: bool = False, past_cap: bool = False) -> None:
        """Make room for ``owner``'s entries (``limit``: a budget's usage or a counted use,
        which keeps them from being dropped before their idle expiry); StateFullError when
        the cap is reached and nobody can be dropped, unless ``past_cap``."""
        if not self._seen(owner):
            if self.people() >= self.max_people and self._free:
                self._drop(next(iter(self._free)))
            if self.people() >= self.max_people and not past_cap:
                raise StateFullError(self._full())
            (self._limited if limit else self._free)[owner] = self._clock()
        elif limit and owner in self._free:
            self._limited[owner] = self._free.pop(owner)

    def _full(self) -> str:
        hours = self.person_idle_s / 3600
        return (
            f"the server keeps what it must remember for at most {self.max_people} people, "
            f"and each of them used a tool with a budget (or web_search) in the last "
            f"{hours:g} hours: nothing can be kept or counted for you now, so this call is "
            "refused. Try again later; the operator can raise max_people in the policy "
            "file's [auth] table (docs/operating.md)"
        )
