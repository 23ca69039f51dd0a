"""Host over MCP: asking the person through elicitation, in both protocol eras.

2025 era: a server-initiated ``elicitation/create`` request on the connection (needs the
client's elicitation capability and a back channel).

2026-07-28 era: no server-initiated requests. The call returns ``InputRequiredResult`` and the
client retries it with ``inputResponses`` and the echoed ``requestState``. The state is sealed
by the SDK's RequestStateBoundary (encrypted, bound to the tool, the arguments and a TTL), and
an answer counts only when it arrives together with that sealed state: an unsolicited
``inputResponses`` never runs a tool. The sealed state also carries the answers of earlier
rounds, since every round re-runs the call from the start.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge.host import Answer, InputPending, SamplingRequest, SamplingResult
from mcp_toolbridge.server import sampling as server_sampling

STATE_VERSION = 1


def _answer_from(result: Any) -> Answer | None:
    if isinstance(result, types.ElicitResult):
        content = dict(result.content) if result.content is not None else None
        return Answer(result.action, content)
    return None


def _answers_in_state(request_state: str | None) -> dict[str, dict[str, Any]]:
    """Answers carried by our own (already unsealed) state; anything else is ignored."""
    if request_state is None:
        return {}
    try:
        state = json.loads(request_state)
    except ValueError:
        return {}
    if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
        return {}
    answers = state.get("answers")
    return answers if isinstance(answers, dict) else {}


class McpHost:
    """The Host of one tools/call request."""

    def __init__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        self._ctx = ctx
        self._modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        self._known = self._collect(params)

    def _collect(self, params: types.CallToolRequestParams) -> dict[str, Answer]:
        """Answers this round may use: only with our sealed state present."""
        if not self._modern or params.request_state is None:
            return {}
        known: dict[str, Answer] = {}
        for key, raw in _answers_in_state(params.request_state).items():
            if isinstance(raw, dict) and raw.get("action") in ("accept", "decline", "cancel"):
                content = raw.get("content")
                known[key] = Answer(raw["action"], content if isinstance(content, dict) else None)
        for key, response in (params.input_responses or {}).items():
            answer = _answer_from(response)
            if answer is not None:
                known[key] = answer
        return known

    @property
    def can_elicit(self) -> bool:
        caps = self._ctx.session.client_capabilities
        if caps is None or caps.elicitation is None:
            return False
        return self._modern or self._ctx.session.can_send_request

    async def elicit(self, key: str, message: str, schema: dict[str, Any]) -> Answer:
        if not self._modern:
            result = await self._ctx.session.elicit_form(
                message, schema, related_request_id=self._ctx.request_id
            )
            return Answer(result.action, dict(result.content) if result.content else None)
        known = self._known.get(key)
        if known is not None:
            return known
        raise InputPending(key, message, schema)

    @property
    def can_sample(self) -> bool:
        return server_sampling.can_sample(self._ctx)

    async def sample(self, key: str, request: SamplingRequest) -> SamplingResult:
        return await server_sampling.sample(self._ctx, request)

    def input_required(self, pending: InputPending) -> types.InputRequiredResult:
        """The result that asks the client for ``pending`` and carries earlier answers."""
        answers = {
            key: {"action": a.action, "content": a.content} for key, a in self._known.items()
        }
        request = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=pending.message, requested_schema=pending.schema
            )
        )
        return types.InputRequiredResult(
            input_requests={pending.key: request},
            request_state=json.dumps({"v": STATE_VERSION, "answers": answers}),
        )
