"""What a call came to: its envelope (:class:`CallOutcome`, what ``Bridge.call`` returns and
its observers see), and the one outcome vocabulary of a call, shared by the audit log
(``outcome``), the telemetry span (``toolbridge.outcome``) and the recording frames
(``outcome``).

A call's outcome is, in this order:

- ``cancelled`` / ``shutdown``: it was stopped (``exec.cancelled``) by its client, or by the
  server's shutdown, whatever had been decided (it may have been stopped before the gate
  decided);
- ``denied``: the policy denied it, the person rejected it (or could not be asked, or the
  client dismissed the question: ``cancel``), or the call failed with ``permission.denied``
  (a capability, rule or watchdog refusal);
- ``ok``: it succeeded;
- ``timeout``: it failed with ``exec.timeout``;
- ``error``: any other failure, including arguments refused by the input schema (the gate
  never ran: nothing denied the call) and a call still waiting for the person's answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.policy import Decision
from mcp_toolbridge.state import Usage

Ended = Literal["cancelled", "shutdown"]
WHY_ENDED: dict[Ended, str] = {
    "cancelled": "the client cancelled the call",
    "shutdown": "the server shut down during the call",
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
    client, or by the server's shutdown."""
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
    ``answer``; ``ended`` says who stopped an ``exec.cancelled`` call (cancelled | shutdown)."""
    if code == ErrorCode.EXEC_CANCELLED:
        return Outcome.SHUTDOWN if ended == "shutdown" else Outcome.CANCELLED
    if action == "deny" or answer in REFUSING_ANSWERS or code == ErrorCode.PERMISSION_DENIED:
        return Outcome.DENIED
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
