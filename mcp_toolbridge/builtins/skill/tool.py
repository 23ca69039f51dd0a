"""skill: load a discovered skill's instructions (its SKILL.md body) and its file list.

Skills are discovered once, when the tool is built; the tool's description lists them one
line each, which is how the model learns they exist. A call looks the skill up by its
registered name only, never by joining the argument to a path.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.builtins.skill.discovery import SKILL_FILE, Skill, discover_skills
from mcp_toolbridge.errors import Problem
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.model import Safety, ToolSpec

MAX_FILES = 100
MAX_LISTED = 200
"""Skills named in the tool description; past it the description says how many more."""
SKIPPED_DIRS = frozenset({".git", "__pycache__", "node_modules"})

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "The skill's name exactly as listed in this tool's description.",
        }
    },
    "required": ["name"],
    "additionalProperties": False,
}

HEAD = (
    "Load a skill: instructions and files for a specialised task. When the task matches a "
    "skill below, call this with its name before starting, then follow the instructions it "
    "returns. The result has the skill's body, its folder and the files in it."
)


def describe(skills: Sequence[Skill]) -> str:
    if not skills:
        return (
            HEAD + "\n\nNo skills are installed in this server (a skill is a folder with a "
            "SKILL.md in a skills directory)."
        )
    lines = [f"- {s.name}: {s.description}" for s in skills[:MAX_LISTED]]
    if len(skills) > MAX_LISTED:
        lines.append(f"- ... and {len(skills) - MAX_LISTED} more")
    return HEAD + "\n\nAvailable skills:\n" + "\n".join(lines)


def build_spec(skills: Sequence[Skill]) -> ToolSpec:
    return builtin_spec(
        "skill",
        title="Load a skill",
        description=describe(skills),
        input_schema=INPUT_SCHEMA,
        # No output schema: the instructions as Markdown are the whole result, the one form
        # every client shows a model as it is (server/wire.py). The value (name, description,
        # folder, body, files, files_truncated, note) stays what `call` prints.
        safety=Safety(read_only=True, idempotent=True, open_world=False, inferred=frozenset()),
    )


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
