"""A scripted MCP client for built-in tool tests: a real Host with canned answers.

It stands in for the client (the person answering forms, the client's model answering sampling
requests), not for the tool under test.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_toolbridge.host import Answer, Confirmation, SamplingRequest, SamplingResult

Reply = SamplingResult | Callable[[SamplingRequest], Awaitable[SamplingResult]]


@dataclass
class ScriptedHost:
    answers: list[Answer] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    elicit_ok: bool = True
    sample_ok: bool = True
    elicited: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    sampled: list[tuple[str, SamplingRequest]] = field(default_factory=list)

    @property
    def can_elicit(self) -> bool:
        return self.elicit_ok

    @property
    def can_sample(self) -> bool:
        return self.sample_ok

    async def elicit(
        self,
        key: str,
        message: str,
        schema: dict[str, Any],
        about: Confirmation | None = None,
    ) -> Answer:
        self.elicited.append((key, message, schema))
        return self.answers.pop(0)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        self.sampled.append((key, request))
        reply = self.replies.pop(0)
        if isinstance(reply, SamplingResult):
            return reply
        return await reply(request)
