"""The locked tools (read, write, edit, glob, grep, bash, todo, task, question, web_search,
web_fetch, skill, tool_search), served through the same Bridge.call as manifest tools:
``registry`` decides which are served and binds them to a runtime; ``fs/``, ``web/``,
``skill/`` and ``task/`` hold the tools of one kind each.

May import: the vocabulary, catalog, policy, executors. Not bridge, server, cli."""

from mcp_toolbridge.builtins.base import BuiltinExecutor
from mcp_toolbridge.builtins.fs.atomic import PathLocks
from mcp_toolbridge.builtins.registry import (
    LOCKED_IDS,
    LockedPlan,
    parse_locked,
    plan_locked,
    subagent_offer,
)
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.task.subagent import CallTool
from mcp_toolbridge.builtins.tool_search import SPEC as TOOL_SEARCH_SPEC
from mcp_toolbridge.builtins.tool_search import ToolSearch

__all__ = [
    "LOCKED_IDS",
    "TOOL_SEARCH_SPEC",
    "BuiltinExecutor",
    "CallTool",
    "LockedPlan",
    "PathLocks",
    "Sessions",
    "ToolSearch",
    "parse_locked",
    "plan_locked",
    "subagent_offer",
]
