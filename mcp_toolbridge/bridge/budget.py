"""Tool budgets, enforced: usage reported by results, summed per session and tool.

A Runloop tool may declare ``budget.tokens`` and ``budget.usd`` ("per-tool budget hints
enforced by the runtime"). A tool reports what one call used in a top-level ``usage`` object
of its JSON result: ``{"usage": {"tokens": 1200, "usd": 0.004}}`` (either key may be left
out; values are non-negative numbers, tokens whole). The :class:`BudgetLedger` sums it per
session and tool; once a sum has reached the tool's budget, its next call in that session is
refused before the permission check with ``budget.exceeded``, saying which budget, how much
was used and how to raise it. A call already running when the budget is spent still finishes
(and is counted), so a sum can pass its budget by one call's usage.

The ledger lives as long as the server (a reload keeps it: the raised budget of a reloaded
manifest applies to the usage already summed); a session that ends is forgotten.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mcp_toolbridge.model import ToolSpec


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls used, as their results reported it."""

    tokens: int = 0
    usd: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.tokens + other.tokens, self.usd + other.usd)

    def as_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "usd": round(self.usd, 6)}


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
    """Usage summed per (session, tool name)."""

    def __init__(self) -> None:
        self._used: dict[tuple[str, str], Usage] = {}

    def used(self, session: str, tool: str) -> Usage:
        return self._used.get((session, tool), Usage())

    def add(self, session: str, tool: str, usage: Usage) -> Usage:
        total = self.used(session, tool) + usage
        self._used[(session, tool)] = total
        return total

    def refusal(self, spec: ToolSpec, session: str) -> str | None:
        """Why ``spec`` may not run again in ``session``, or None while its budget lasts."""
        budget = spec.budget
        if budget is None:
            return None
        used = self.used(session, spec.name)
        where = f'"{spec.id}" in {spec.source.path}'
        if budget.tokens is not None and used.tokens >= budget.tokens:
            return (
                f"the token budget of {spec.name} is spent: its results reported {used.tokens} "
                f"tokens used in this session, and its budget.tokens is {budget.tokens}. Do not "
                "call it again in this session; to allow more, the operator raises "
                f"budget.tokens of {where} (read on restart, or at once with --watch)"
            )
        if budget.usd is not None and used.usd >= budget.usd:
            return (
                f"the USD budget of {spec.name} is spent: its results reported ${used.usd:.4f} "
                f"used in this session, and its budget.usd is ${budget.usd:.4f}. Do not call "
                "it again in this session; to allow more, the operator raises budget.usd of "
                f"{where} (read on restart, or at once with --watch)"
            )
        return None

    def forget(self, session: str) -> None:
        for key in [k for k in self._used if k[0] == session]:
            del self._used[key]
