"""The skill locked tool and skill discovery (folders holding a ``SKILL.md``)."""

from mcp_toolbridge.builtins.skill.discovery import default_skill_dirs
from mcp_toolbridge.builtins.skill.tool import SkillTool

__all__ = ["SkillTool", "default_skill_dirs"]
