"""One OpenTelemetry span per tool call, through opentelemetry-api only.

The API is a no-op until an SDK is configured: without one every span is a non-recording
span and costs a few attribute copies. With one (for example ``opentelemetry-instrument
mcp-toolbridge serve`` and the ``OTEL_*`` environment variables, or a TracerProvider set by an
embedding program), each finished call becomes a span ``execute_tool <name>`` carrying the
tool, the policy decision, the outcome and the duration, as a child of the SDK's
``tools/call`` server span when there is one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer

from mcp_toolbridge import __version__
from mcp_toolbridge.bridge.outcome import UNFAILED, CallOutcome, outcome_of
from mcp_toolbridge.bridge.pipeline import Observer
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec

TRACER_NAME = "mcp_toolbridge"


def span_attributes(spec: ToolSpec, ctx: CallContext, outcome: CallOutcome) -> dict[str, Any]:
    decision = outcome.decision
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": spec.name,
        "toolbridge.tool.id": spec.id,
        "toolbridge.tool.format": spec.source.format.value,
        "toolbridge.transport": spec.transport.kind,
        "toolbridge.session": ctx.session_id,
        "toolbridge.decision": decision.action if decision else "none",
        "toolbridge.decision.scope": decision.scope if decision else "none",
        "toolbridge.outcome": outcome_of(outcome).value,
        "toolbridge.duration_ms": outcome.duration_ms,
    }
    if outcome.answer is not None:
        attributes["toolbridge.answer"] = outcome.answer
    if ctx.via is not None:
        attributes["toolbridge.via"] = ctx.via
    if ctx.caller.subject is not None:  # who called (never the token): --auth-issuer
        attributes["enduser.id"] = ctx.caller.subject
    if ctx.caller.client_id is not None:
        attributes["toolbridge.client_id"] = ctx.caller.client_id
    if outcome.code is not None:
        attributes["error.type"] = outcome.code.value
    return attributes


def span_observer(tracer: Tracer | None = None) -> Observer:
    """A Bridge observer that records each finished call as a span (start = end - duration).

    ``tracer`` defaults to the global provider's tracer, resolved lazily by the API, so an SDK
    configured after start-up is still used."""
    active = tracer if tracer is not None else trace.get_tracer(TRACER_NAME, __version__)

    async def observe(
        spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext, outcome: CallOutcome
    ) -> None:
        end = time.time_ns()
        span = active.start_span(
            f"execute_tool {spec.name}",
            kind=SpanKind.INTERNAL,
            attributes=span_attributes(spec, ctx, outcome),
            start_time=end - outcome.duration_ms * 1_000_000,
        )
        if outcome_of(outcome) not in UNFAILED:
            span.set_status(Status(StatusCode.ERROR, outcome.error or "tool failed"))
        span.end(end_time=end)

    return observe
