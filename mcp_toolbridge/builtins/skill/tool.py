"""skill: load a discovered skill's instructions (its SKILL.md body) and its file list.

Skills are discovered once, when the tool is built; the tool's description lists them one
line each, which is how the model learns they exist. A call looks the skill up by its
registered name only, never by joining the argument to a path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_toolbridge.builtins.skill.discovery import SKILL_FILE, Skill, discover_skills
from mcp_toolbridge.builtins.skill.spec import build_spec
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.model import ToolSpec

if TYPE_CHECKING:
    from mcp_toolbridge.executors import ExecRequest, ExecResult

MAX_FILES = 100
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules"})


def list_files(folder: Path, limit: int = MAX_FILES) -> tuple[list[str], bool]:
    """Up to ``limit`` files below ``folder`` (relative POSIX paths, SKILL.md left out,
    symlinked folders not followed), and whether there were more."""
    files: list[str] = []
    for current, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        relative = Path(current).relative_to(folder)
        for name in sorted(names):
            path = (relative / name).as_posix()
            if path == SKILL_FILE:
                continue
            if len(files) == limit:
                return files, True
            files.append(path)
    return files, False


class SkillTool:
    """The skill built-in over the skills found in ``dirs`` (earlier dirs win a clash)."""

    def __init__(self, dirs: Sequence[Path]) -> None:
        found, problems = discover_skills(dirs)
        self.problems: list[Problem] = problems
        """Skills that were refused (and name clashes), for start-up output and ``lint``."""
        self.skills: dict[str, Skill] = {skill.name: skill for skill in found}
        self._spec = build_spec(found)

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def run(self, request: ExecRequest) -> ExecResult:
        # Imported on the first call: the tool is made at load, with the listing, which needs
        # no executor module (docs/performance.md, "Start-up").
        from mcp_toolbridge.executors import ExecResult

        name = str(request.arguments["name"])
        skill = self.skills.get(name)
        if skill is None:
            known = ", ".join(self.skills) or "none (no skills are installed)"
            return ExecResult(
                ok=False,
                error=f"unknown skill {name!r}. Available skills: {known}",
            )
        files, more = list_files(skill.folder)
        value: dict[str, Any] = {
            "name": skill.name,
            "description": skill.description,
            "folder": str(skill.folder),
            "body": skill.body,
            "files": files,
        }
        if more:
            value["files_truncated"] = True
            value["note"] = f"only the first {MAX_FILES} files are listed; use glob for the rest"
        return ExecResult(ok=True, value=value, text=_text(value))


def _text(value: dict[str, Any]) -> str:
    """The body as Markdown under a header naming the skill and its folder, then its files."""
    parts = [f"# Skill: {value['name']}", f"Folder: {value['folder']}", "", value["body"]]
    if value["files"]:
        parts += ["", "Files in the skill's folder:", *(f"- {f}" for f in value["files"])]
    if value.get("note"):
        parts.append(f"({value['note']})")
    return "\n".join(parts)
