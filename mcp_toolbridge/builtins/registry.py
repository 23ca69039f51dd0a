"""The locked tools a server serves, and their declarations.

A :class:`LockedPlan` is decided at load (:func:`~mcp_toolbridge.builtins.plan.plan_locked`:
which ids, and their configuration from the settings and the policy file). Then:

- :attr:`LockedPlan.specs` (at load): the declarations, which join the catalog like manifest
  tools (reserved names, policy exposure).
- :func:`~mcp_toolbridge.builtins.binding.bind_locked` (per runtime, and again per reload):
  the implementations, bound to the runtime (binding.py). Only it imports them: the
  declarations come from the tools' spec modules, so a server lists the locked tools without
  importing their implementations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_toolbridge.builtins import bash_spec, question_spec, todo_spec, tool_search_spec
from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.builtins.fs import EDIT_SPEC, GLOB_SPEC, GREP_SPEC, READ_SPEC, WRITE_SPEC
from mcp_toolbridge.builtins.task import Limits, build_task_spec
from mcp_toolbridge.builtins.web import WEB_FETCH_SPEC, build_web_search_spec
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy import PolicyFile

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.web import SearchProvider, WebSearchConfig


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
            "bash": bash_spec.SPEC,
            "todo": todo_spec.SPEC,
            "task": build_task_spec(limits),
            "question": question_spec.SPEC,
            "web_search": build_web_search_spec([p.host for p in self.providers]),
            "web_fetch": WEB_FETCH_SPEC,
            "skill": self.skills.spec,
            "tool_search": tool_search_spec.SPEC,
        }
        return tuple(declared[name] for name in self.names)
