"""The task locked tool and its subagent loop on the client's model (sampling)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.builtins.task.spec import Limits
from mcp_toolbridge.builtins.task.spec import build_spec as build_task_spec
from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.task.subagent import CallTool
    from mcp_toolbridge.builtins.task.tool import ListTools, TaskTool, subagent_offer

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.builtins.task.subagent": ("CallTool",),
        "mcp_toolbridge.builtins.task.tool": (
            "ListTools",
            "TaskTool",
            "subagent_offer",
        ),
    },
)

__all__ = ["CallTool", "Limits", "ListTools", "TaskTool", "build_task_spec", "subagent_offer"]
