"""The task locked tool and its subagent loop on the client's model (sampling)."""

from mcp_toolbridge.builtins.task.subagent import CallTool, Limits
from mcp_toolbridge.builtins.task.tool import ListTools, TaskTool, subagent_offer
from mcp_toolbridge.builtins.task.tool import build_spec as build_task_spec

__all__ = ["CallTool", "Limits", "ListTools", "TaskTool", "build_task_spec", "subagent_offer"]
