"""skill's declaration (ToolSpec), made from the skills found."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.builtins.skill.discovery import Skill
from mcp_toolbridge.model import Safety, ToolSpec

MAX_LISTED = 200
"""Skills named in the tool description; past it the description says how many more."""

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
