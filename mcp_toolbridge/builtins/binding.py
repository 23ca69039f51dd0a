"""Binding the locked tools' implementations to a runtime (:func:`bind_locked`): the one place
that imports them, when a runtime opens (registry.py has the declarations)."""

from __future__ import annotations

from collections.abc import Callable

from mcp_toolbridge.builtins import bash, question, todo, tool_search
from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.builtins.fs import (
    GLOB_SPEC,
    GREP_SPEC,
    READ_SPEC,
    EditTool,
    GlobTool,
    GrepTool,
    PathLocks,
    ReadTool,
    WriteTool,
    read_verdict,
)
from mcp_toolbridge.builtins.registry import LockedPlan
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.task import CallTool, ListTools, TaskTool
from mcp_toolbridge.builtins.web import WebFetchTool, WebSearchTool, redirect_check
from mcp_toolbridge.policy import Policy


def bind_locked(
    plan: LockedPlan,
    *,
    sessions: Sessions,
    locks: PathLocks,
    search: tool_search.ToolSearch,
    call_tool: CallTool,
    list_tools: ListTools,
    policy: Policy,
) -> list[BuiltinTool]:
    """The implementations of ``plan``'s tools, bound to one runtime: its sessions and file
    locks, the current catalog's tool_search (``search``), the policy (what glob and grep may
    show, where web_fetch may be redirected) and the bridge (task runs its subagent's calls
    through ``Bridge.call``)."""
    ws = plan.workspace
    subagents = plan.config.subagents
    make: dict[str, Callable[[], BuiltinTool]] = {
        "read": lambda: ReadTool(ws, sessions, readable=read_verdict(policy, READ_SPEC)),
        "write": lambda: WriteTool(ws, locks),
        "edit": lambda: EditTool(ws, locks),
        "glob": lambda: GlobTool(ws, sessions, readable=read_verdict(policy, GLOB_SPEC)),
        "grep": lambda: GrepTool(ws, sessions, readable=read_verdict(policy, GREP_SPEC)),
        "bash": lambda: bash.BashTool(ws, sessions, plan.environ, plan.config.bash.env_passthrough),
        "todo": lambda: todo.TodoTool(sessions),
        "question": question.QuestionTool,
        "task": lambda: TaskTool(
            call_tool,
            list_tools,
            max_turns=subagents.max_turns,
            max_seconds=subagents.max_seconds,
            max_depth=subagents.max_depth,
            subagent_tools=subagents.tools,
        ),
        "web_search": lambda: WebSearchTool(
            plan.providers,
            sessions,
            max_calls_per_session=plan.web_search.max_calls_per_session,
            timeout_s=plan.web_search.timeout_s,
        ),
        "web_fetch": lambda: WebFetchTool(
            sessions,
            allow_loopback=plan.config.web_fetch.allow_loopback,
            timeout_s=plan.config.web_fetch.timeout_s,
            host_check=redirect_check(policy),
        ),
        "skill": lambda: plan.skills,
        "tool_search": lambda: search,
    }
    return [make[name]() for name in plan.names]
