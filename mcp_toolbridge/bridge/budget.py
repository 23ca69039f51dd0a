"""Tool budgets, enforced: usage reported by results, summed per session and tool.

A Runloop tool may declare ``budget.tokens`` and ``budget.usd`` ("per-tool budget hints
enforced by the runtime"). A tool reports what one call used in a top-level ``usage`` object
of its JSON result: ``{"usage": {"tokens": 1200, "usd": 0.004}}`` (either key may be left
out; values are non-negative numbers, tokens whole). The :class:`BudgetLedger` sums it per
tool and per owner (``CallContext.budget_scope``): the person, across all their sessions,
when the caller is identified; else the session. Once a sum has reached the tool's budget,
the owner's next call is refused before the permission check with ``budget.exceeded``,
saying which budget, how much was used and how to raise it.

Check and hold are one step of the State (:meth:`~mcp_toolbridge.state.State.admit`): a call
is admitted while what was used plus what running calls hold stays under the budget, and an
admitted call holds the largest usage one call of the tool has reported (one token and one
cent until one has) until it ends and its real usage replaces the hold. Calls admitted at
once, on one server or on many replicas sharing Redis, therefore never pass a budget together
unless one call uses more than any before it did.

Only tools that declare a budget are summed (a tool that gains one in a reload starts from
zero). The sums are kept in the State port, which lives as long as the server (a reload keeps
them: the raised budget of a reloaded manifest applies to the usage already summed); an
anonymous session's are forgotten when it ends, a person's when they made no call for the
State's idle window (a day by default). A State that keeps as many people as it may refuses a
newcomer's check (``state.full``, before the call runs) rather than drop anyone's usage early
(state/memory.py).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_toolbridge.errors import BudgetExceededError, RateLimitedError
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Policy
from mcp_toolbridge.state import Admission, MemoryState, State, StateUnavailable, Usage

__all__ = [
    "BudgetLedger",
    "RateLimit",
    "State",
    "StateUnavailable",
    "Ticket",
    "Usage",
    "reported_usage",
]
"""The ledger, the rate limit, and the State they keep their counts in (default: one in
memory)."""


log = logging.getLogger("mcp_toolbridge")

SETTLE_LIMIT_S = 5.0
"""How long settling a call's budget may take (shielded, so a cancelled call settles too)."""


def reported_usage(value: Any) -> Usage | None:
    """The ``usage`` a tool's result reports, or None when it reports none (or a malformed
    one: not an object, a negative, non-finite or non-number value, fractional tokens)."""
    if not isinstance(value, dict):
        return None
    usage = value.get("usage")
    if not isinstance(usage, dict) or not ({"tokens", "usd"} & usage.keys()):
        return None
    tokens, usd = usage.get("tokens", 0), usage.get("usd", 0)
    if isinstance(tokens, bool) or isinstance(usd, bool):
        return None
    if not isinstance(tokens, int) or not isinstance(usd, int | float):
        return None
    if tokens < 0 or usd < 0 or not math.isfinite(usd):
        return None
    return Usage(tokens, float(usd))


@dataclass(frozen=True, slots=True)
class Ticket:
    """An admitted call of a budgeted tool: what it holds until it settles."""

    owner: str
    tool: str
    held: Usage


class BudgetLedger:
    """Usage summed per (owner, tool name), kept in a State; each call of a budgeted tool
    admitted (checked and held in one step of the State) and settled."""

    def __init__(self, state: State | None = None) -> None:
        self.state: State = state if state is not None else MemoryState()

    async def used(self, owner: str, tool: str) -> Usage:
        return await self.state.usage(owner, tool)

    async def admit(self, spec: ToolSpec, ctx: CallContext) -> Ticket | None:
        """Admit one call of ``spec`` for the caller of ``ctx``: None for a tool without a
        budget; BudgetExceededError, saying which budget and what to do, when it is spent
        (or held by calls still running)."""
        budget = spec.budget
        if budget is None:
            return None
        owner = ctx.budget_scope
        admission = await self.state.admit(owner, spec.name, budget.tokens, budget.usd)
        if admission.admitted:
            return Ticket(owner, spec.name, admission.held)
        raise BudgetExceededError(_refusal(spec, ctx, admission), tool=spec.name)

    async def settle(self, ticket: Ticket | None, usage: Usage | None) -> None:
        """The admitted call ended (``usage``: what its result reported, if anything)."""
        if ticket is not None:
            await self.state.settle(ticket.owner, ticket.tool, ticket.held, usage)

    async def admit_call(
        self, spec: ToolSpec, ctx: CallContext, rate_limit: RateLimit | None
    ) -> Ticket | None:
        """Count the call against its caller's rate limit and admit it against the tool's
        budget (RateLimitedError, BudgetExceededError); the budget hold is noted in the
        call's lease, for a survivor to release should this server die."""
        if rate_limit is not None:
            await rate_limit.check(self.state, ctx)
        ticket = await self.admit(spec, ctx)
        if ticket is not None and ctx.lease is not None:
            held = [ticket.owner, ticket.tool, ticket.held.tokens, ticket.held.usd]
            await ctx.lease.note(held=held)
        return ticket

    async def release(self, ticket: Ticket | None, usage: Usage | None) -> None:
        """Settle an admitted call, shielded (a cancelled call releases its hold too) and
        bounded; a store that cannot be reached keeps the hold until its owner's keys
        expire (the call's usage is then not counted: it is not counted twice either)."""
        if ticket is None:
            return
        with anyio.move_on_after(SETTLE_LIMIT_S, shield=True):
            try:
                await self.settle(ticket, usage)
            except StateUnavailable as exc:
                log.warning("could not settle a budgeted call of %s: %s", ticket.tool, exc)


def _refusal(spec: ToolSpec, ctx: CallContext, admission: Admission) -> str:
    """Why ``spec`` may not run now for the caller of ``ctx``."""
    budget = spec.budget
    assert budget is not None
    used, running = admission.used, admission.running
    where = f'"{spec.id}" in {spec.source.path}'
    person = ctx.caller.key is not None
    spent = f"by {ctx.caller.describe()} across their sessions" if person else "in this session"
    again = "again" if person else "again in this session"
    if budget.tokens is not None and used.tokens >= budget.tokens:
        return (
            f"the token budget of {spec.name} is spent: its results reported {used.tokens} "
            f"tokens used {spent}, and its budget.tokens is {budget.tokens}. Do not "
            f"call it {again}; to allow more, the operator raises "
            f"budget.tokens of {where} (read on restart, or at once with --watch)"
        )
    if budget.usd is not None and used.usd >= budget.usd:
        return (
            f"the USD budget of {spec.name} is spent: its results reported ${used.usd:.4f} "
            f"used {spent}, and its budget.usd is ${budget.usd:.4f}. Do not call "
            f"it {again}; to allow more, the operator raises budget.usd of "
            f"{where} (read on restart, or at once with --watch)"
        )
    return (
        f"the budget of {spec.name} is held by calls of it still running {spent}: they "
        f"used {used.tokens} tokens and ${used.usd:.4f} so far and hold {running.tokens} "
        f"tokens and ${running.usd:.4f} until they end (its budget: {_limits(budget)}). "
        "Retry when they have finished; if their results use it up, it is spent"
    )


def _limits(budget: Any) -> str:
    parts = []
    if budget.tokens is not None:
        parts.append(f"{budget.tokens} tokens")
    if budget.usd is not None:
        parts.append(f"${budget.usd:.4f}")
    return ", ".join(parts)


LIMIT_COUNTER = "calls"


@dataclass(frozen=True, slots=True)
class RateLimit:
    """The policy's ``[limits]``: ``calls`` per sliding ``window_s`` per caller."""

    calls: int
    window_s: float

    @classmethod
    def configured(cls, policy: Policy) -> RateLimit | None:
        """The policy's ``[limits]``, None when it sets none."""
        limits = policy.file.limits
        return cls(limits.calls, limits.window_s) if limits.calls is not None else None

    async def check(self, state: State, ctx: CallContext) -> None:
        """Count this call for its caller, or RateLimitedError saying which limit and when
        to retry (the count is the State's: shared by replicas that share it)."""
        wait = await state.hit(ctx.budget_scope, LIMIT_COUNTER, self.calls, self.window_s)
        if wait <= 0:
            return
        who = ctx.caller.describe() if ctx.caller.key is not None else "this session"
        raise RateLimitedError(
            f"rate limit reached: {who} may make {self.calls} calls per {self.window_s:g} s "
            f"(the policy's [limits]), and made them. Retry in {math.ceil(wait)} s; nothing "
            "was run",
            tool="",
        )
