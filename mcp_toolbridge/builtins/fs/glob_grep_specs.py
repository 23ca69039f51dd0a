"""The declarations (ToolSpec) of glob and grep: input and output schemas, requirements,
safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import TEXT_MAX, builtin_spec
from mcp_toolbridge.model import RequirementSet, Safety

GLOB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": (
                "The file pattern. Without '/', it matches file names at any depth ('*.py'); "
                "with '/', paths relative to path ('src/**/*.ts'). ** spans folders, * and ? "
                "stay within one name, [abc] is a class, {a,b} are alternatives."
            ),
        },
        "path": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": "The folder to search in: absolute, or relative to the workspace "
            "root (default: the workspace root). Must be a directory.",
        },
        "include_ignored": {
            "type": "boolean",
            "description": "Also list files ignored by .gitignore (default false: they are "
            "hidden and counted).",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

GREP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": (
                "The regular expression to search for (ripgrep / Python syntax: escape "
                "literal ( ) [ ] { } . * + ? | with a backslash)."
            ),
        },
        "path": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": "The folder or file to search: absolute, or relative to the "
            "workspace root (default: the workspace root). The file an earlier truncated "
            "result names can be searched too.",
        },
        "glob": {
            "type": "string",
            "minLength": 1,
            "maxLength": TEXT_MAX,
            "description": "Only search files matching this pattern ('*.py', 'src/**/*.ts', "
            "'*.{ts,tsx}'; a leading ! excludes).",
        },
        "output_mode": {
            "type": "string",
            "enum": ["files_with_matches", "content", "count"],
            "description": "files_with_matches (default): paths of matching files; content: "
            "matching lines as path:line:text; count: matching lines per file.",
        },
        "case_insensitive": {
            "type": "boolean",
            "description": "Ignore case (default false).",
        },
        "line_numbers": {
            "type": "boolean",
            "description": "Show line numbers in content mode (default true).",
        },
        "context": {
            "type": "integer",
            "minimum": 0,
            "maximum": 50,
            "description": "Lines of context before and after each match (content mode).",
        },
        "multiline": {
            "type": "boolean",
            "description": "Let the pattern span lines: . matches newlines, ^ and $ match at "
            "line boundaries (default false: each line is searched on its own).",
        },
        "head_limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 200,
            "description": "Return only the first N entries (files, or matching lines in "
            "content mode). Without it, up to 200 are returned and the rest goes to a file.",
        },
    },
    "required": ["pattern"],
    "additionalProperties": False,
}

_READ_ONLY = Safety(read_only=True, idempotent=True, open_world=False, inferred=frozenset())

GLOB_SPEC = builtin_spec(
    "glob",
    title="Find files",
    description=(
        "List files in the workspace whose path matches a glob pattern, newest first "
        "(modification time). Files ignored by .gitignore are hidden (the result says how "
        "many; include_ignored shows them); .git is always skipped; symlinks are not followed. "
        "At most 1000 paths are returned; the whole list goes to a file the result names."
    ),
    input_schema=GLOB_SCHEMA,
    # No output schema: the paths as text are the whole result, the one form every client
    # shows a model as it is (server/wire.py). The value (files, num_files,
    # hidden_by_gitignore, ignored_dirs, withheld_by_policy, note) stays what `call` prints.
    requires=RequirementSet(fs_read=("{workspace}",)),
    argument_roles={"path": ("fs.read",)},
    safety=_READ_ONLY,
)

GREP_SPEC = builtin_spec(
    "grep",
    title="Search file contents",
    description=(
        "Search file contents in the workspace with a regular expression. Files are ordered "
        "newest first; .gitignore'd, binary and over-10 MB files are skipped. An invalid "
        "pattern is an error, never 'no matches'. At most 200 entries are returned (use "
        "head_limit for fewer); the whole output goes to a file the result names."
    ),
    input_schema=GREP_SCHEMA,
    # No output schema: the matches as text are the whole result, the one form every client
    # shows a model as it is (server/wire.py). The value (mode, num_files, num_matches,
    # engine, files | content | counts, withheld_by_policy, note) stays what `call` prints.
    requires=RequirementSet(fs_read=("{workspace}",)),
    argument_roles={"path": ("fs.read",)},
    safety=_READ_ONLY,
)
