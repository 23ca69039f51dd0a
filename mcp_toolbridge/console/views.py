"""What the catalog page shows of each tool: its safety facts (declared and inferred), what
the policy in force does with it for a chosen caller, its sandbox profile and its budget
use. Read from the serving runtime at each request (a reload shows at once); nothing here
decides anything: the gate's own ``policy.decide`` and ``confinement`` answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from mcp_toolbridge.bridge import Bridge, PolicyGate
from mcp_toolbridge.host import LOCAL, Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Targets

SAFETY = ("read_only", "destructive", "idempotent", "open_world", "requires_confirmation")


class Serving(Protocol):
    """The runtime being served (its bridge and gate change on a reload)."""

    @property
    def bridge(self) -> Bridge: ...

    @property
    def gate(self) -> PolicyGate: ...


@dataclass(frozen=True, slots=True)
class Fact:
    name: str
    value: bool
    inferred: bool


@dataclass(frozen=True, slots=True)
class ToolRow:
    spec: ToolSpec
    facts: tuple[Fact, ...]
    action: str
    """allow | ask | deny | refused (the capability check refuses it whatever is asked) |
    hidden (not listed for the caller, and refused)."""
    rule: str
    sandbox: dict[str, object] | None
    budget: str | None
    """``120 of 1000 tokens, $0.0100 of $0.5000`` for a tool with a budget; None without."""

    @property
    def kind(self) -> str:
        return self.spec.transport.kind


@dataclass(frozen=True, slots=True)
class Someone:
    """A caller the console can show the policy for: a label, the Caller, whose state."""

    label: str
    caller: Caller
    owner: str
    budget_owner: str


def facts_of(spec: ToolSpec) -> tuple[Fact, ...]:
    safety = spec.safety
    return tuple(
        Fact(name, bool(getattr(safety, name)), name in safety.inferred) for name in SAFETY
    )


async def tool_rows(serving: Serving, who: Someone) -> list[ToolRow]:
    """Every tool of the catalog as ``who`` would meet it now: the policy's rules for
    everyone and for them (identity rules), their "always" answers."""
    gate, bridge = serving.gate, serving.bridge
    policy = gate.policy.for_caller(who.caller)
    rules = await gate.session_rules(who.owner)
    rows = []
    for entry in bridge.catalog:
        spec = entry.spec
        denial = policy.check_capabilities(spec, Targets())
        if not bridge.callable_by(spec, who.caller):
            action, rule = "hidden", "the policy's rules for this caller leave the tool out"
        elif denial is not None:
            action, rule = "refused", denial.message
        else:
            decision = policy.decide(spec, Targets(), rules)
            action, rule = decision.action, decision.rule
        confinement = gate.confinement(spec)
        sandbox = None
        if confinement is not None and gate.sandbox is not None:
            sandbox = gate.sandbox.describe(confinement.profile)
        rows.append(
            ToolRow(
                spec,
                facts_of(spec),
                action,
                rule,
                sandbox,
                await _budget(gate, spec, who.budget_owner),
            )
        )
    return rows


async def _budget(gate: PolicyGate, spec: ToolSpec, owner: str) -> str | None:
    budget = spec.budget
    if budget is None:
        return None
    used = await gate.state.usage(owner, spec.name)
    parts = []
    if budget.tokens is not None:
        parts.append(f"{used.tokens} of {budget.tokens} tokens")
    if budget.usd is not None:
        parts.append(f"${used.usd:.4f} of ${budget.usd:.4f}")
    return ", ".join(parts) or None


def local_caller(session_id: str) -> Someone:
    return Someone("local", LOCAL, session_id, session_id)
