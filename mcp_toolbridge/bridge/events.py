"""What a person watching the client hears about a call beyond its result: a watchdog
refusal, or a tool killed at its deadline (a ``warning`` from the ``mcp-toolbridge`` logger,
through ``CallContext.log``)."""

from __future__ import annotations

from typing import Protocol

from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.host import SERVER_LOGGER, CallContext
from mcp_toolbridge.policy import Decision


class CallOutcome(Protocol):
    """What of a finished call's outcome (pipeline.CallOutcome) the events read."""

    @property
    def tool(self) -> str: ...

    @property
    def error(self) -> str | None: ...

    @property
    def code(self) -> ErrorCode | None: ...

    @property
    def decision(self) -> Decision | None: ...


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
