"""The subagent loop behind the task tool, on the client's own model (MCP sampling).

One turn is one sampling request: the conversation so far plus the offered tools. When the
reply asks for tools, each call goes through ``call_tool`` (the bridge: validation, the
parent's permissions, audit) and its result, or its error, goes back to the model as a
``tool_result``. The loop ends on a reply without tool calls (the answer), after ``max_turns``
turns or after ``max_seconds``. Cancelling the caller cancels the loop at its current await.

The client's model is the client's, so what one reply may ask is bounded: the first
``max_calls_per_turn`` calls run and the others are answered "not run"; the conversation keeps
at most ``max_results_chars`` of tool output in all, a note after that.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import anyio

from mcp_toolbridge.builtins.task.spec import Limits
from mcp_toolbridge.errors import CallError
from mcp_toolbridge.host import (
    CallContext,
    CouldNotSample,
    Host,
    ProgressFn,
    SamplingMessage,
    SamplingRequest,
    SamplingTool,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mcp_toolbridge.model import ToolSpec


class ToolOutcome(Protocol):
    """What a tool call came to (``Bridge.call`` returns a ``CallOutcome``, which fits)."""

    @property
    def ok(self) -> bool: ...

    @property
    def value(self) -> Any: ...

    @property
    def text(self) -> str | None:
        """The success written for the model, when the tool writes one."""
        ...

    @property
    def error(self) -> str | None: ...


SEARCH_TOOL = "tool_search"

CallTool = Callable[[str, Mapping[str, Any], CallContext], Awaitable[ToolOutcome]]
"""call_tool(name, arguments, context): one call through the full pipeline."""


@dataclass
class SubagentRun:
    turns: int = 0
    tool_calls: list[str] = field(default_factory=list)
    text: str = ""
    """The final answer, or the last text the model wrote when it did not finish."""
    stopped: Literal["answer", "max_turns", "timeout", "unreachable"] = "answer"
    reason: str = ""
    """Why the client's model could not be asked (``unreachable``)."""


@dataclass(frozen=True, slots=True)
class Conversation:
    """What the subagent is asked and may use."""

    key: str
    """Stable prefix of the sampling keys (MCP multi-round-trip retries re-run the call)."""
    prompt: str
    system_prompt: str
    tools: tuple[SamplingTool, ...]


def render(outcome: ToolOutcome) -> str:
    if not outcome.ok:
        return outcome.error or "the tool failed without a message"
    if outcome.text is not None:
        return outcome.text
    if isinstance(outcome.value, str):
        return outcome.value
    return json.dumps(outcome.value, ensure_ascii=False, default=str)


RESULTS_USED_UP = (
    "[not shown: this subagent's conversation already holds all the tool output it may; "
    "finish with what you have]"
)


def _too_many(limit: int) -> str:
    return f"not run: at most {limit} tool calls are run per turn; ask again for the rest"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[cut: {len(text) - limit} more characters not shown]"


async def _run_one(
    use: ToolUseBlock, offered: dict[str, SamplingTool], call_tool: CallTool, ctx: CallContext
) -> tuple[str, bool]:
    """Run one requested call. A successful tool_search offers its hits from the next turn on
    (the subagent's own deferred loading), except tools denied to it."""
    if use.name not in offered:
        available = ", ".join(offered) or "none"
        return (
            f"the tool {use.name!r} is not available to this subagent; use one of: {available}",
            True,
        )
    try:
        outcome = await call_tool(use.name, use.input, ctx)
    except CallError as exc:
        return exc.message, True
    if use.name == SEARCH_TOOL and outcome.ok and isinstance(outcome.value, dict):
        for found in outcome.value.get("tools") or []:
            name = found.get("name") if isinstance(found, dict) else None
            if isinstance(name, str) and name not in ctx.denied_tools and name not in offered:
                schema = found.get("input_schema")
                offered[name] = SamplingTool(
                    name,
                    str(found.get("description") or ""),
                    dict(schema) if isinstance(schema, dict) else {"type": "object"},
                )
    return render(outcome), not outcome.ok


async def run_subagent(
    host: Host,
    conversation: Conversation,
    call_tool: CallTool,
    ctx: CallContext,
    limits: Limits,
    progress: ProgressFn | None = None,
) -> SubagentRun:
    """Run the loop; ``ctx`` is the context every tool call of the subagent carries."""
    run = SubagentRun()
    kept = 0  # characters of tool results the conversation holds
    offered = {tool.name: tool for tool in conversation.tools}
    messages = [SamplingMessage("user", (TextBlock(conversation.prompt),))]
    with anyio.move_on_after(limits.max_seconds) as deadline:
        for turn in range(1, limits.max_turns + 1):
            run.turns = turn
            request = SamplingRequest(
                messages=tuple(messages),
                tools=tuple(offered.values()),
                system_prompt=conversation.system_prompt,
                max_tokens=limits.max_tokens,
            )
            try:
                reply = await host.sample(f"{conversation.key}:{turn}", request)
            except CouldNotSample as exc:
                run.stopped, run.reason = "unreachable", exc.reason
                return run
            text = "\n".join(b.text for b in reply.content if isinstance(b, TextBlock)).strip()
            run.text = text or run.text
            uses = [b for b in reply.content if isinstance(b, ToolUseBlock)]
            if not uses:
                run.text = text
                return run
            if turn == limits.max_turns:
                run.stopped = "max_turns"
                return run
            messages.append(SamplingMessage("assistant", reply.content))
            results: list[ToolResultBlock] = []
            for use in uses[: limits.max_calls_per_turn]:
                run.tool_calls.append(use.name)
                if progress is not None:
                    await progress(turn, limits.max_turns, f"subagent turn {turn}: {use.name}")
                result, failed = await _run_one(use, offered, call_tool, ctx)
                cap = min(limits.max_result_chars, limits.max_results_chars - kept)
                shown = _cap(result, cap) if cap > 0 else RESULTS_USED_UP
                kept += min(len(result), max(cap, 0))
                results.append(ToolResultBlock(use.id, shown, failed))
            refused = _too_many(limits.max_calls_per_turn)
            results += [ToolResultBlock(u.id, refused, True) for u in uses[len(results) :]]
            messages.append(SamplingMessage("user", tuple(results)))
    if deadline.cancelled_caught:
        run.stopped = "timeout"
    return run


def offered_tools(specs: Sequence[ToolSpec], denied: frozenset[str]) -> tuple[SamplingTool, ...]:
    """The tools the subagent may call: every listed tool not denied to it, once each."""
    offered: dict[str, SamplingTool] = {}
    for spec in specs:
        if spec.name in denied or spec.name in offered:
            continue
        offered[spec.name] = SamplingTool(spec.name, spec.description, dict(spec.input_schema))
    return tuple(offered.values())
