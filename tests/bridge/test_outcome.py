"""One outcome vocabulary: the audit line, the telemetry span and the recording frame of a
call name the same outcome, through the real observers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_toolbridge.bridge import AuditLog, CallOutcome, Outcome, audit_observer
from mcp_toolbridge.bridge.recording import frames
from mcp_toolbridge.bridge.telemetry import span_attributes
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.executors import ExecResult
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.policy import Decision
from tests.support.policy_fixtures import exec_tool

SPEC = exec_tool("git_log")
ALLOW = Decision("allow", "rules[0]", "manifest")
DENY = Decision("deny", "rules[1]", "manifest")
ASK = Decision("ask", "rules[2]", "manifest")
PENDING = Decision("ask", "confirmation pending", "confirmation")


def failed(
    code: ErrorCode,
    decision: Decision | None = ALLOW,
    *,
    result: ExecResult | None = None,
    answer: str | None = None,
) -> CallOutcome:
    return CallOutcome(
        SPEC.name, ok=False, error="x", code=code, decision=decision, result=result, answer=answer
    )


CASES = {
    "ok": (CallOutcome(SPEC.name, ok=True, result=ExecResult(ok=True), decision=ALLOW), "ok"),
    "tool failed": (failed(ErrorCode.EXEC_FAILED, result=ExecResult(ok=False)), "error"),
    "output invalid": (failed(ErrorCode.OUTPUT_INVALID, result=ExecResult(ok=True)), "error"),
    "policy deny": (failed(ErrorCode.PERMISSION_DENIED, DENY), "denied"),
    "refused while running": (failed(ErrorCode.PERMISSION_DENIED), "denied"),
    "rejected": (failed(ErrorCode.PERMISSION_DENIED, ASK, answer="reject"), "denied"),
    "headless": (failed(ErrorCode.PERMISSION_DENIED, ASK, answer="headless"), "denied"),
    "could not ask": (failed(ErrorCode.PERMISSION_DENIED, ASK, answer="unreachable"), "denied"),
    "timeout": (failed(ErrorCode.EXEC_TIMEOUT), "timeout"),
    "cancelled": (failed(ErrorCode.EXEC_CANCELLED), "cancelled"),
    "invalid arguments": (failed(ErrorCode.ARGS_INVALID, None), "error"),
    "pending": (
        CallOutcome(SPEC.name, ok=False, error="waiting", decision=PENDING, answer="pending"),
        "pending",
    ),
}


@pytest.mark.parametrize(("outcome", "expected"), CASES.values(), ids=CASES.keys())
async def test_audit_span_and_recording_name_the_same_outcome(
    tmp_path: Path, outcome: CallOutcome, expected: str
) -> None:
    ctx = CallContext(session_id="s1")
    async with AuditLog.open(tmp_path / "audit.ndjson") as log:
        await audit_observer(log)(SPEC, {}, ctx, outcome)
    line = json.loads((tmp_path / "audit.ndjson").read_text(encoding="utf-8"))
    span = span_attributes(SPEC, ctx, outcome)
    _, result_frame = frames(SPEC, {}, ctx, outcome)

    assert expected in set(Outcome)
    assert line["outcome"] == span["toolbridge.outcome"] == result_frame["outcome"] == expected
    assert line["isError"] is (expected not in ("ok", "pending"))
    assert (line["errorCode"] is None) is (expected in ("ok", "pending"))
