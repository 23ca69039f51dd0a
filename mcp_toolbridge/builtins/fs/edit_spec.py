"""edit's declaration (ToolSpec): its input schema, requirements and safety facts."""

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
            "description": "The existing file to change: absolute, or relative to the "
            "workspace root.",
        },
        "old_string": {
            "type": "string",
            "description": "The exact text to replace, whitespace and indentation included "
            "(never the line-number prefix read shows). It must occur exactly once unless "
            "replace_all is true; include a few surrounding lines to make it unique.",
        },
        "new_string": {
            "type": "string",
            "description": "The text to put in its place (must differ from old_string).",
        },
        "replace_all": {
            "type": "boolean",
            "description": "Replace every occurrence of old_string (default false).",
        },
    },
    "required": ["file_path", "old_string", "new_string"],
    "additionalProperties": False,
}

SPEC = builtin_spec(
    "edit",
    title="Edit a file",
    description=(
        "Replace an exact string in an existing file. old_string must match the file exactly "
        "(literal text, no regular expressions) and be unique unless replace_all is true. Line "
        "endings (CRLF or LF) and a UTF-8 BOM are kept. Returns a short diff. To create a file "
        "or replace all of its content, use write."
    ),
    input_schema=INPUT_SCHEMA,
    # No output schema: the summary and the diff as text are the whole result, the one form
    # every client shows a model as it is (server/wire.py). The value (file_path,
    # replacements, lines, diff, line_endings, bom, note) stays what `call` prints.
    requires=RequirementSet(fs_read=("{workspace}",), fs_write=("{workspace}",)),
    argument_roles={"file_path": ("fs.read", "fs.write")},
    safety=Safety(
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=False,
        inferred=frozenset(),
    ),
)
