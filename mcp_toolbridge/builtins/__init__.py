"""The locked tools (read, write, edit, glob, grep, bash, todo, task, question, web_search,
web_fetch, skill, tool_search) and the proxy beside tool_search (call_tool), served through
the same Bridge.call as manifest tools:
``plan`` decides which are served and how they are configured, ``registry`` declares them
(from the tools' ``*_spec`` modules: a listing imports no implementation) and ``binding``
binds them to a runtime; ``fs/``, ``web/``, ``skill/`` and ``task/`` hold the tools of one
kind each. Names are imported on first use (lazy.py).

May import: the vocabulary, catalog, policy, leaks, executors. Not bridge, server, cli."""

from typing import TYPE_CHECKING

from mcp_toolbridge.builtins.tool_search_spec import SPEC as TOOL_SEARCH_SPEC
from mcp_toolbridge.lazy import on_first_use
from mcp_toolbridge.names import LOCKED_IDS, PROXY_TOOL

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.base import BuiltinExecutor
    from mcp_toolbridge.builtins.binding import bind_locked
    from mcp_toolbridge.builtins.call_tool import proxy_spec
    from mcp_toolbridge.builtins.fs import PathLocks
    from mcp_toolbridge.builtins.plan import parse_locked, plan_locked
    from mcp_toolbridge.builtins.registry import LockedPlan
    from mcp_toolbridge.builtins.session import Sessions
    from mcp_toolbridge.builtins.skill import default_skill_dirs
    from mcp_toolbridge.builtins.task import CallTool, subagent_offer
    from mcp_toolbridge.builtins.tool_search import ToolSearch

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.builtins.base": ("BuiltinExecutor",),
        "mcp_toolbridge.builtins.binding": ("bind_locked",),
        "mcp_toolbridge.builtins.call_tool": ("proxy_spec",),
        "mcp_toolbridge.builtins.fs": ("PathLocks",),
        "mcp_toolbridge.builtins.plan": (
            "parse_locked",
            "plan_locked",
        ),
        "mcp_toolbridge.builtins.registry": ("LockedPlan",),
        "mcp_toolbridge.builtins.session": ("Sessions",),
        "mcp_toolbridge.builtins.skill": ("default_skill_dirs",),
        "mcp_toolbridge.builtins.task": (
            "CallTool",
            "subagent_offer",
        ),
        "mcp_toolbridge.builtins.tool_search": ("ToolSearch",),
    },
)

__all__ = [
    "LOCKED_IDS",
    "PROXY_TOOL",
    "TOOL_SEARCH_SPEC",
    "BuiltinExecutor",
    "CallTool",
    "LockedPlan",
    "PathLocks",
    "Sessions",
    "ToolSearch",
    "bind_locked",
    "default_skill_dirs",
    "parse_locked",
    "plan_locked",
    "proxy_spec",
    "subagent_offer",
]
