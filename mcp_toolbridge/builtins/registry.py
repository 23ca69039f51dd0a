"""The locked tools a server serves: their declarations and their implementations.

A :class:`LockedPlan` is decided at load (:func:`~mcp_toolbridge.builtins.plan.plan_locked`:
which ids, and their configuration from the settings and the policy file). Then:

- :attr:`LockedPlan.specs` (at load): the declarations, which join the catalog like manifest
  tools (reserved names, policy exposure).
- :meth:`LockedPlan.tools` (per runtime, and again per reload): the implementations, bound to
  the runtime's sessions and file locks, the current catalog's tool_search, the policy (what
  glob and grep may show, where web_fetch may be redirected) and the bridge (task runs its
  subagent's calls through ``Bridge.call``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from mcp_toolbridge.builtins import bash, question, todo, tool_search
from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.builtins.fs import (
    EDIT_SPEC,
    GLOB_SPEC,
    GREP_SPEC,
    READ_SPEC,
    WRITE_SPEC,
    EditTool,
    GlobTool,
    GrepTool,
    PathLocks,
    ReadTool,
    WriteTool,
    read_verdict,
)
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.task import (
    CallTool,
    Limits,
    ListTools,
    TaskTool,
    build_task_spec,
)
from mcp_toolbridge.builtins.web import (
    WEB_FETCH_SPEC,
    SearchProvider,
    WebFetchTool,
    WebSearchConfig,
    WebSearchTool,
    build_web_search_spec,
    redirect_check,
)
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import Policy, PolicyFile


@dataclass(frozen=True)
class LockedPlan:
    """What the locked tools are, decided at load; see the module doc."""

    names: tuple[str, ...]
    workspace: Path
    environ: Mapping[str, str]
    config: PolicyFile
    skills: BuiltinTool
    """The skill tool, its description listing the skills found."""
    providers: tuple[SearchProvider, ...]
    web_search: WebSearchConfig
    problems: tuple[Problem, ...]

    @cached_property
    def specs(self) -> tuple[ToolSpec, ...]:
        """The declarations of the planned tools, in the locked order."""
        subagents = self.config.subagents
        limits = Limits(max_turns=subagents.max_turns, max_seconds=subagents.max_seconds)
        declared: dict[str, ToolSpec] = {
            "read": READ_SPEC,
            "write": WRITE_SPEC,
            "edit": EDIT_SPEC,
            "glob": GLOB_SPEC,
            "grep": GREP_SPEC,
            "bash": bash.SPEC,
            "todo": todo.SPEC,
            "task": build_task_spec(limits),
            "question": question.SPEC,
            "web_search": build_web_search_spec([p.host for p in self.providers]),
            "web_fetch": WEB_FETCH_SPEC,
            "skill": self.skills.spec,
            "tool_search": tool_search.SPEC,
        }
        return tuple(declared[name] for name in self.names)

    def tools(
        self,
        *,
        sessions: Sessions,
        locks: PathLocks,
        search: tool_search.ToolSearch,
        call_tool: CallTool,
        list_tools: ListTools,
        policy: Policy,
    ) -> list[BuiltinTool]:
        """The implementations of the planned tools, bound to one runtime (``search``: the
        tool_search of its catalog)."""
        ws = self.workspace
        subagents = self.config.subagents
        make: dict[str, Callable[[], BuiltinTool]] = {
            "read": lambda: ReadTool(ws, sessions),
            "write": lambda: WriteTool(ws, locks),
            "edit": lambda: EditTool(ws, locks),
            "glob": lambda: GlobTool(ws, sessions, readable=read_verdict(policy, GLOB_SPEC)),
            "grep": lambda: GrepTool(ws, sessions, readable=read_verdict(policy, GREP_SPEC)),
            "bash": lambda: bash.BashTool(
                ws, sessions, self.environ, self.config.bash.env_passthrough
            ),
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
                self.providers,
                sessions,
                max_calls_per_session=self.web_search.max_calls_per_session,
                timeout_s=self.web_search.timeout_s,
            ),
            "web_fetch": lambda: WebFetchTool(
                sessions,
                allow_loopback=self.config.web_fetch.allow_loopback,
                timeout_s=self.config.web_fetch.timeout_s,
                host_check=redirect_check(policy),
            ),
            "skill": lambda: self.skills,
            "tool_search": lambda: search,
        }
        return [make[name]() for name in self.names]
