"""task: run a subagent on the client's own model (MCP sampling with tools).

The subagent works under the parent's permissions: every tool call it makes goes through the
bridge with the parent's session and host, so every deny, ask and watchdog verdict applies and
nothing can be widened. It may not use todo, question or task unless the server allows it, and
nesting stops at ``max_depth``. The loop is bounded in turns and time, and stops when the
parent call is cancelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from mcp_toolbridge.builtins.task.spec import GENERAL, SUBAGENT_TYPES, Limits, build_spec
from mcp_toolbridge.builtins.task.subagent import (
    CallTool,
    Conversation,
    SubagentRun,
    offered_tools,
    run_subagent,
)
from mcp_toolbridge.catalog import Catalog
from mcp_toolbridge.errors import ArgumentsError, PermissionDeniedError
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.host import Caller
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.names import PROXY_TOOL

SUBAGENT_ONLY_IF_ALLOWED = frozenset({"todo", "question", "task"})
"""Tools a subagent cannot use unless the server allows them (``subagent_tools``)."""

SUBAGENT_MAX_MANIFEST_TOOLS = 64
"""A subagent is offered the catalog's manifest tools when there are at most this many (the
server lists them all too); past it, only the locked tools, tool_search included."""

NO_SAMPLING_MESSAGE = (
    "task is unavailable: this client does not support MCP sampling with tools "
    "(sampling/createMessage), so no subagent can run. Do the work yourself with the tools "
    "you have."
)


def subagent_offer(catalog: Catalog) -> list[ToolSpec]:
    """The tools a subagent may be offered from ``catalog`` (see SUBAGENT_MAX_MANIFEST_TOOLS).
    Manifest tools are counted by name first: a big catalog restored from the start-up cache
    is not read record by record to offer none of it."""
    locked = [s for s in catalog.locked_specs() if s.name != PROXY_TOOL]  # hits are offered
    if len(catalog.manifest_names()) > SUBAGENT_MAX_MANIFEST_TOOLS:
        return locked
    return locked + catalog.manifest_specs()


def _key(arguments: dict[str, str], depth: int) -> str:
    text = json.dumps([arguments, depth], sort_keys=True)
    return "task:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _report(run: SubagentRun, kind: str) -> dict[str, Any]:
    return {
        "result": run.text,
        "turns": run.turns,
        "tool_calls": list(run.tool_calls),
        "subagent_type": kind,
    }


ListTools = Callable[[Caller], Sequence[ToolSpec]]
"""The tools a subagent of a caller may be offered (those the caller may call)."""


class TaskTool:
    """The task built-in.

    ``call_tool`` runs one tool call through the full pipeline (the server passes
    ``Bridge.call``); ``list_tools(caller)`` gives the tools a subagent of ``caller`` may be
    offered (the locked tools and the manifest tools loaded so far that it may call);
    ``subagent_tools`` names which of todo, question and task the policy lets subagents use;
    ``max_depth`` is how many subagent levels may exist (1: a subagent cannot start another).
    """

    def __init__(
        self,
        call_tool: CallTool,
        list_tools: ListTools,
        *,
        max_turns: int = 8,
        max_seconds: float = 300.0,
        max_depth: int = 1,
        subagent_tools: Iterable[str] = (),
        max_tokens: int = 4096,
    ) -> None:
        if max_turns < 1 or max_seconds <= 0 or max_depth < 1:
            raise ValueError("max_turns, max_seconds and max_depth must be positive")
        self._call_tool = call_tool
        self._list_tools = list_tools
        self._limits = Limits(max_turns=max_turns, max_seconds=max_seconds, max_tokens=max_tokens)
        self._max_depth = max_depth
        self._denied = SUBAGENT_ONLY_IF_ALLOWED - frozenset(subagent_tools)
        self._spec = build_spec(self._limits)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def run(self, request: ExecRequest) -> ExecResult:
        ctx = request.context
        if "task" in ctx.denied_tools or ctx.depth >= self._max_depth:
            raise PermissionDeniedError(
                "a subagent cannot start another subagent here (nesting is limited to "
                f"{self._max_depth} level{'s' if self._max_depth > 1 else ''}); "
                "do the work yourself with your tools",
                tool="task",
            )
        arguments = {k: str(v) for k, v in request.arguments.items()}
        kind = arguments.get("subagent_type", GENERAL.name)
        subagent = SUBAGENT_TYPES.get(kind)
        if subagent is None:
            raise ArgumentsError(
                f"unknown subagent_type {kind!r}; known types: {', '.join(SUBAGENT_TYPES)}",
                tool="task",
            )
        host = ctx.host
        if host is None or not host.can_sample:
            return ExecResult(ok=False, error=NO_SAMPLING_MESSAGE)
        depth = ctx.depth + 1
        denied = (
            ctx.denied_tools
            | self._denied
            | (frozenset({"task"}) if depth >= self._max_depth else frozenset())
        )
        # what the subagent's own tool_search finds is offered to it by name from its next turn
        child = replace(
            ctx, progress=None, depth=depth, denied_tools=denied, found_tools="direct", via=None
        )
        conversation = Conversation(
            key=_key(arguments, ctx.depth),
            prompt=arguments["prompt"],
            system_prompt=subagent.system_prompt,
            tools=offered_tools(self._list_tools(ctx.caller), denied),
        )
        limits = replace(self._limits, max_seconds=min(self._limits.max_seconds, request.timeout_s))
        run = await run_subagent(host, conversation, self._call_tool, child, limits, ctx.progress)
        value = _report(run, kind)
        if run.stopped == "max_turns":
            return ExecResult(ok=False, value=value, error=_unfinished(run, "turn", limits))
        if run.stopped == "unreachable":
            return ExecResult(ok=False, value=value, error=_unreachable(run))
        if run.stopped == "timeout":
            return ExecResult(ok=False, value=value, error=_unfinished(run, "time", limits))
        if not run.text:
            return ExecResult(
                ok=False, value=value, error="the subagent finished without writing an answer"
            )
        calls = ", ".join(value["tool_calls"]) or "none"
        footer = f"({kind} subagent: {run.turns} turn(s); tool calls: {calls})"
        return ExecResult(ok=True, value=value, text=f"{run.text}\n\n{footer}")


def _unreachable(run: SubagentRun) -> str:
    calls = ", ".join(run.tool_calls) or "none"
    return (
        f"the subagent stopped at turn {run.turns}: the client could not run its model "
        f"({run.reason}); tool calls made: {calls}. Nothing more was done: do the work "
        "yourself with your tools."
    )


def _unfinished(run: SubagentRun, limit: str, limits: Limits) -> str:
    calls = ", ".join(run.tool_calls) or "none"
    last = f" Its last message: {run.text[:2000]}" if run.text else ""
    return (
        f"the subagent reached its {limit} limit ({limits.max_turns} turns, "
        f"{limits.max_seconds:g} s) after {run.turns} turns without a final answer; "
        f"tool calls made: {calls}.{last} Give it a narrower task, or split the work."
    )
