"""Tool budgets, enforced: usage reported by results, summed per session and tool.

A Runloop tool may declare ``budget.tokens`` and ``budget.usd`` ("per-tool budget hints
enforced by the runtime"). A tool reports what one call used in a top-level ``usage`` object
of its JSON result: ``{"usage": {"tokens": 1200, "usd": 0.004}}`` (either key may be left
out; values are non-negative numbers, tokens whole). The :class:`BudgetLedger` sums it per
tool and per owner (``CallContext.budget_scope``): the person, across all their sessions,
when the caller is identified; else the session. Once a sum has reached the tool's budget,
the owner's next call is refused before the permission check with ``budget.exceeded``,
saying which budget, how much was used and how to raise it. A call already running when the
budget is spent still finishes (and is counted), so a sum can pass its budget by one call's
usage.

Only tools that declare a budget are summed (a tool that gains one in a reload starts from
zero). The sums are kept in the State port, which lives as long as the server (a reload keeps
them: the raised budget of a reloaded manifest applies to the usage already summed); an
anonymous session's are forgotten when it ends, a person's when they made no call for the
State's idle window (a day by default). A State that keeps as many people as it may refuses a
newcomer's check (``state.full``, before the call runs) rather than drop anyone's usage early
(state/memory.py).
"""

from __future__ import annotations

import math
from typing import Any

from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.state import MemoryState, State, Usage

__all__ = ["BudgetLedger", "State", "Usage", "reported_usage"]
"""The ledger and the State it keeps its sums in (default: one in memory)."""


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


class BudgetLedger:
    """Usage summed per (owner, tool name), kept in a State."""

    def __init__(self, state: State | None = None) -> None:
        self.state: State = state if state is not None else MemoryState()

    async def used(self, owner: str, tool: str) -> Usage:
        return await self.state.usage(owner, tool)

    async def add(self, owner: str, tool: str, usage: Usage) -> Usage:
        return await self.state.add_usage(owner, tool, usage)

    async def refusal(self, spec: ToolSpec, ctx: CallContext) -> str | None:
        """Why ``spec`` may not run again for the caller of ``ctx``, or None while its
        budget lasts."""
        budget = spec.budget
        if budget is None:
            return None
        used = await self.used(ctx.budget_scope, spec.name)
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
        return None
