"""write's declaration (ToolSpec): its input schema, requirements and safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import TEXT_MAX, builtin_spec
from mcp_toolbridge.model import RequirementSet, Safety

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": "The file to create or overwrite: absolute, or relative to the "
            "workspace root. Missing parent folders are created.",
        },
        "content": {
            "type": "string",
            "description": "The whole new content of the file, written exactly as given "
            "(UTF-8). To change part of an existing file, use edit instead.",
        },
    },
    "required": ["file_path", "content"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {"type": "string"},
        "bytes_written": {"type": "integer", "minimum": 0},
        "lines": {"type": "integer", "minimum": 0},
        "created": {"type": "boolean", "description": "True: the file did not exist before."},
    },
    "required": ["file_path", "bytes_written", "lines", "created"],
}

SPEC = builtin_spec(
    "write",
    title="Write a file",
    description=(
        "Create a file, or overwrite an existing one, with the given content. The write is "
        "atomic (a reader never sees half a file) and an existing file keeps its permissions. "
        "Prefer edit for changing part of an existing file."
    ),
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    requires=RequirementSet(fs_write=("{workspace}",)),
    argument_roles={"file_path": ("fs.write",)},
    safety=Safety(
        read_only=False,
        destructive=True,
        idempotent=True,
        open_world=False,
        inferred=frozenset(),
    ),
)
