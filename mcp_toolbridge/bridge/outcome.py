"""The one outcome vocabulary of a call, shared by the audit log (``outcome``), the telemetry
span (``toolbridge.outcome``) and the recording frames (``outcome``).

A call's outcome is, in this order:

- ``cancelled`` / ``shutdown`` / ``lost``: it was stopped (``exec.cancelled``) by its
  client, by the server's shutdown, or by the end of the replica that ran it (a replica
  killed mid-call: another replica sharing its state reports it), whatever had been decided
  (it may have been stopped before the gate decided);
- ``denied``: the policy denied it, the person rejected it (or could not be asked), or the
  call failed with ``permission.denied`` (a capability, rule or watchdog refusal);
- ``ok``: it succeeded;
- ``timeout``: it failed with ``exec.timeout``;
- ``error``: any other failure, including arguments refused by the input schema (the gate
  never ran: nothing denied the call) and a call still waiting for the person's answer.
"""

from __future__ import annotations

from enum import StrEnum

from mcp_toolbridge.bridge.pipeline import CallOutcome
from mcp_toolbridge.errors import ErrorCode

REFUSING_ANSWERS = frozenset({"reject", "headless", "unreachable"})
"""Answers to an ask that deny the call."""


class Outcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    SHUTDOWN = "shutdown"
    LOST = "lost"


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
