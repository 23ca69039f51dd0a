"""read's declaration (ToolSpec): its input schema and limits, requirements and safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import TEXT_MAX, builtin_spec
from mcp_toolbridge.model import RequirementSet, Safety

DEFAULT_LIMIT = 2000
MAX_LIMIT = 100_000
MAX_LINE_CHARS = 2000

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": "The file to read: absolute, or relative to the workspace root.",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "The line number to start at (1 is the first line). Use it with "
            "limit to page through a large file; results say which offset comes next.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "description": f"How many lines to return (default {DEFAULT_LIMIT}).",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
}

SPEC = builtin_spec(
    "read",
    title="Read a file",
    description=(
        "Read a text file from the workspace. Returns numbered lines (cat -n style: the line "
        f"number, a tab, the line); {DEFAULT_LIMIT} lines from the start by default, use offset "
        f"and limit for other parts. Lines longer than {MAX_LINE_CHARS} characters are cut, the "
        "output is capped at 200 KB. The line-number prefix is not part of the file: never copy "
        "it into edit's old_string. Directories and binary files are refused (use glob to list "
        "files). The files earlier truncated results name can be read too."
    ),
    input_schema=INPUT_SCHEMA,
    # No output schema: the numbered lines are the whole result, the one form every client
    # shows a model as it is (server/wire.py). The value (file_path, content, start_line,
    # end_line, total_lines, next_offset, line_endings, bom, note) stays what `call` prints.
    requires=RequirementSet(fs_read=("{workspace}",)),
    argument_roles={"file_path": ("fs.read",)},
    safety=Safety(read_only=True, idempotent=True, open_world=False, inferred=frozenset()),
)
