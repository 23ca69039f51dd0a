"""The call pipeline: every call of every tool goes through :class:`Bridge.call` (validate,
gate, resolve secrets, execute, check the output), and its observers (audit, telemetry,
recording) see each outcome.

May import: the vocabulary, loaders, catalog, policy, executors. Not builtins, server, cli."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.bridge.asking import (
        ALLOW_ALWAYS,
        ALLOW_ONCE,
        ASSISTANT_WANTS,
        REJECT,
        confirmation_form,
        sandbox_summary,
    )
    from mcp_toolbridge.bridge.audit import (
        NOT_CHECKED,
        NOT_DECIDED,
        AuditLog,
        AuditRecord,
        audit_observer,
        record_of,
    )
    from mcp_toolbridge.bridge.audit_file import default_audit_path, open_audit_file
    from mcp_toolbridge.bridge.budget import RateLimit
    from mcp_toolbridge.bridge.gate import PolicyGate
    from mcp_toolbridge.bridge.outcome import CallOutcome, Outcome, outcome_of
    from mcp_toolbridge.bridge.pipeline import Bridge, Observer
    from mcp_toolbridge.bridge.recording import Recorder, ReplayExecutor
    from mcp_toolbridge.bridge.redaction import redacted_arguments
    from mcp_toolbridge.bridge.telemetry import span_observer

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.bridge.asking": (
            "ALLOW_ALWAYS",
            "ALLOW_ONCE",
            "ASSISTANT_WANTS",
            "REJECT",
            "confirmation_form",
            "sandbox_summary",
        ),
        "mcp_toolbridge.bridge.audit": (
            "NOT_CHECKED",
            "NOT_DECIDED",
            "AuditLog",
            "AuditRecord",
            "audit_observer",
            "record_of",
        ),
        "mcp_toolbridge.bridge.audit_file": ("default_audit_path", "open_audit_file"),
        "mcp_toolbridge.bridge.budget": ("RateLimit",),
        "mcp_toolbridge.bridge.gate": ("PolicyGate",),
        "mcp_toolbridge.bridge.outcome": (
            "CallOutcome",
            "Outcome",
            "outcome_of",
        ),
        "mcp_toolbridge.bridge.pipeline": (
            "Bridge",
            "Observer",
        ),
        "mcp_toolbridge.bridge.recording": (
            "Recorder",
            "ReplayExecutor",
        ),
        "mcp_toolbridge.bridge.redaction": ("redacted_arguments",),
        "mcp_toolbridge.bridge.telemetry": ("span_observer",),
    },
)

__all__ = [
    "ALLOW_ALWAYS",
    "ALLOW_ONCE",
    "ASSISTANT_WANTS",
    "NOT_CHECKED",
    "NOT_DECIDED",
    "REJECT",
    "AuditLog",
    "AuditRecord",
    "Bridge",
    "CallOutcome",
    "Observer",
    "Outcome",
    "PolicyGate",
    "RateLimit",
    "Recorder",
    "ReplayExecutor",
    "audit_observer",
    "confirmation_form",
    "default_audit_path",
    "open_audit_file",
    "outcome_of",
    "record_of",
    "redacted_arguments",
    "sandbox_summary",
    "span_observer",
]
