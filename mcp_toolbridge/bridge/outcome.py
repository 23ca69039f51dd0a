"""What a call came to: its envelope (:class:`CallOutcome`, what ``Bridge.call`` returns and
its observers see), the one outcome vocabulary of a call, shared by the audit log
(``outcome``), the telemetry span (``toolbridge.outcome``) and the recording frames
(``outcome``), and what a person watching the client hears about it beyond its result
(:func:`tell`: a watchdog refusal, a tool killed at its deadline); and the outcome of a call
another replica was running when it died, as its lease recorded it (:func:`lost_call`).

A call's outcome is, in this order:

- ``cancelled`` / ``shutdown`` / ``lost``: it was stopped (``exec.cancelled``) by its
  client, by the server's shutdown, or by the end of the replica that ran it (a replica
  killed mid-call: another replica sharing its state reports it), whatever had been decided
  (it may have been stopped before the gate decided);
- ``denied``: the policy denied it, the person rejected it (or could not be asked, or the
  client dismissed the question: ``cancel``), or the call failed with ``permission.denied``
  (a capability, rule or watchdog refusal);
- ``pending``: it was asked and waits for the person's answer (a 2026-era client answers in
  a later request, which is the call run again and has a line of its own); it ran nothing and
  failed nothing;
- ``ok``: it succeeded;
- ``timeout``: it failed with ``exec.timeout``;
- ``error``: any other failure, including arguments refused by the input schema (the gate
  never ran: nothing denied the call).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from mcp_toolbridge.bridge.budget import Ticket
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.host import SERVER_LOGGER, CallContext, Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Decision
from mcp_toolbridge.state import Usage

Ended = Literal["cancelled", "shutdown", "lost"]
WHY_ENDED: dict[Ended, str] = {
    "cancelled": "the client cancelled the call",
    "shutdown": "the server shut down during the call",
    "lost": "the replica running the call stopped before it finished",
}


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """The envelope of one call: ``value`` when ok, ``error`` (for the model) otherwise."""

    tool: str
    ok: bool
    value: Any = None
    text: str | None = None
    """The success written for the model, when the tool writes one (see ExecResult.text)."""
    error: str | None = None
    code: ErrorCode | None = None
    duration_ms: int = 0
    truncated: bool = False
    output_path: str | None = None
    result: ExecResult | None = None
    decision: Decision | None = None
    """What the gate decided; None when the call failed before it (bad arguments)."""
    answer: str | None = None
    """The person's answer when asked: once | always | reject | cancel | headless | unreachable |
    pending."""
    meta: dict[str, Any] = field(default_factory=dict)
    ended: Ended | None = None
    """How a call that did not run to its end was stopped (code ``exec.cancelled``): by its
    client, by the server's shutdown, or by the end of its replica."""
    usage: Usage | None = None
    """What the call used, as its result reported it (``usage``); None when not reported."""
    redacted: Mapping[str, int] | None = None
    """Secrets nobody declared, replaced in what the client gets: count per rule id."""
    argument_secrets: Mapping[str, int] | None = None
    """Secrets found in the call's arguments: count per rule id."""
    answered_by: str | None = None
    """Who gave the answer (``console:<user>``, ``client``, ``client:<subject>``)."""


REFUSING_ANSWERS = frozenset({"reject", "cancel", "headless", "unreachable"})
"""Answers to an ask that deny the call."""


class Outcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SHUTDOWN = "shutdown"
    LOST = "lost"
    PENDING = "pending"


UNFAILED = frozenset({Outcome.OK, Outcome.PENDING})
"""Outcomes that are not an error: the call succeeded, or it waits for an answer."""


def classify(
    *,
    ok: bool,
    code: ErrorCode | None,
    action: str | None,
    answer: str | None,
    ended: str | None = None,
) -> Outcome:
    """The outcome of a call that succeeded (``ok``) or failed with ``code``, after the
    gate's ``action`` (allow | deny | ask; None when it never ran) and the person's
    ``answer``; ``ended`` says who stopped an ``exec.cancelled`` call (cancelled | shutdown |
    lost)."""
    if code == ErrorCode.EXEC_CANCELLED:
        if ended == "lost":
            return Outcome.LOST
        return Outcome.SHUTDOWN if ended == "shutdown" else Outcome.CANCELLED
    if action == "deny" or answer in REFUSING_ANSWERS or code == ErrorCode.PERMISSION_DENIED:
        return Outcome.DENIED
    if answer == "pending":
        return Outcome.PENDING
    if ok:
        return Outcome.OK
    if code == ErrorCode.EXEC_TIMEOUT:
        return Outcome.TIMEOUT
    return Outcome.ERROR


def outcome_of(outcome: CallOutcome) -> Outcome:
    """The outcome of a finished call (see the module doc)."""
    return classify(
        ok=outcome.ok,
        code=outcome.code,
        action=outcome.decision.action if outcome.decision else None,
        answer=outcome.answer,
        ended=outcome.ended,
    )


MAX_EVENT_CHARS = 400


def event_text(outcome: CallOutcome) -> str | None:
    """What a person watching the client should hear about this call, if anything: a watchdog
    refusal, or a tool killed at its deadline."""
    decision = outcome.decision
    if decision is not None and decision.scope == "watchdog" and decision.action == "deny":
        return f"the watchdog refused a call of {outcome.tool}: {decision.rule}"[:MAX_EVENT_CHARS]
    if outcome.code is ErrorCode.EXEC_TIMEOUT:
        first = (outcome.error or "").strip().splitlines()[:1]
        why = f": {first[0]}" if first else ""
        return f"{outcome.tool} was killed at its deadline{why}"[:MAX_EVENT_CHARS]
    return None


async def tell(ctx: CallContext, outcome: CallOutcome) -> None:
    text = event_text(outcome)
    if text is not None and ctx.log is not None and ctx.log.wants("warning"):
        await ctx.log.send("warning", text, logger=SERVER_LOGGER)


def lost_call(
    record: Mapping[str, Any], catalog: Catalog
) -> tuple[ToolSpec, CallContext, CallOutcome, Ticket | None] | None:
    """The lost call's tool, context, outcome and budget hold; None for a tool this
    catalog does not have (nothing to audit it under)."""
    entry = catalog.get(str(record.get("tool")))
    if entry is None:
        return None
    noted = record.get("decision")
    decision = Decision(*noted) if isinstance(noted, list) and len(noted) == 3 else None
    caller = Caller(record.get("subject"), record.get("client_id"), record.get("issuer"))
    ctx = CallContext(session_id=str(record.get("session")), caller=caller)
    started = float(record.get("started", time.time()))
    outcome = CallOutcome(
        tool=entry.spec.name,
        ok=False,
        error=WHY_ENDED["lost"],
        code=ErrorCode.EXEC_CANCELLED,
        duration_ms=max(0, round((time.time() - started) * 1000)),
        decision=decision,
        ended="lost",
    )
    held = record.get("held")
    ticket = None
    if isinstance(held, list) and len(held) == 4:
        owner, tool, tokens, usd = held
        ticket = Ticket(str(owner), str(tool), Usage(int(tokens), float(usd)))
    return entry.spec, ctx, outcome, ticket
