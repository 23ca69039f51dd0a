"""bash's declaration (ToolSpec): its input schema and limits, requirements and safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.model import RequirementSet, Safety

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000

MAX_COMMAND_CHARS = 100_000

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_COMMAND_CHARS,
            "description": (
                "The bash command line to run, e.g. 'git status' or 'pytest -x tests/'. It "
                "runs with `bash -c` in the workspace folder; pipes, &&, ; and redirections "
                "work. Each part is checked against the shell permission rules; expansions "
                "whose value is only known when the command runs ($VAR or $(...) in arguments, "
                "eval, sudo, functions) need approval."
            ),
        },
        "timeout": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TIMEOUT_MS,
            "description": (
                f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, i.e. 2 minutes; at "
                f"most {MAX_TIMEOUT_MS}, i.e. 10 minutes). When it passes, the command and "
                "every process it started are killed."
            ),
        },
        "description": {
            "type": "string",
            "maxLength": 500,
            "description": (
                "A few words on what the command does, shown to the person who approves it "
                "(e.g. 'Run the unit tests')."
            ),
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}

SPEC = builtin_spec(
    "bash",
    title="Run a shell command",
    description=(
        "Run one bash command in the workspace folder and return its exit_code, stdout and "
        "stderr. Every call is a fresh `bash -c`: cd, variables and background jobs do not "
        "carry over, stdin is empty and the environment is minimal. A non-zero exit_code is "
        "a normal result. Output over 200 KB is cut (the head and the tail are kept) and the "
        "whole output is saved to a file whose path is returned: read or grep it. Prefer the "
        "read, glob, grep, edit and write tools for files."
    ),
    input_schema=INPUT_SCHEMA,
    # No output schema: the output and the exit code as text are the whole result, the one form
    # every client shows a model as it is (server/wire.py). The value (exit_code, stdout,
    # stderr, timed_out, signal, note, limit, hidden) stays what `call` prints.
    timeout_s=DEFAULT_TIMEOUT_MS / 1000,
    requires=RequirementSet(capabilities=("shell.run",)),
    argument_roles={"command": ("shell.run",)},
    safety=Safety(
        read_only=False,
        destructive=True,
        idempotent=False,
        open_world=True,
        inferred=frozenset(),
    ),
)
