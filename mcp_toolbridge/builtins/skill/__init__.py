"""The skill locked tool and skill discovery (folders holding a ``SKILL.md``)."""

from typing import TYPE_CHECKING

from mcp_toolbridge.lazy import on_first_use

if TYPE_CHECKING:
    from mcp_toolbridge.builtins.skill.discovery import default_skill_dirs
    from mcp_toolbridge.builtins.skill.tool import SkillTool

__getattr__ = on_first_use(
    __name__,
    {
        "mcp_toolbridge.builtins.skill.discovery": ("default_skill_dirs",),
        "mcp_toolbridge.builtins.skill.tool": ("SkillTool",),
    },
)

__all__ = ["SkillTool", "default_skill_dirs"]
