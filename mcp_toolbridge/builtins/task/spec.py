"""task's declaration (ToolSpec), made from the subagent limits the policy sets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.model import Safety, ToolSpec


@dataclass(frozen=True, slots=True)
class Limits:
    """What one task call may use (the policy file's ``[subagents]``); in this module so
    that declaring task imports no subagent machinery."""

    max_turns: int = 8
    max_seconds: float = 300.0
    max_tokens: int = 4096
    """Per sampling request."""
    max_result_chars: int = 64_000
    """A tool result longer than this reaches the model cut, with a note."""
    max_calls_per_turn: int = 16
    """Tool calls run of one reply; the reply's others are answered "not run" (a client's
    model is the client's: a reply asking 1,500 reads held 400 MB of results)."""
    max_results_chars: int = 2_000_000
    """Tool results the whole conversation keeps (about 500,000 tokens, past any model's
    window); once they are used up a result reaches the model as a note only."""


@dataclass(frozen=True, slots=True)
class SubagentType:
    name: str
    description: str
    system_prompt: str


GENERAL = SubagentType(
    name="general",
    description="A general-purpose agent for research and multi-step work with the tools.",
    system_prompt=(
        "You are a subagent working on one task for another agent, which sees only your final "
        "message. Use the tools you are offered to do the work; a tool error tells you what "
        "failed, so adjust and continue. Nobody can answer questions: make reasonable "
        "assumptions and state them. When you are done, reply without calling tools, with a "
        "complete and concise report of what you found or did."
    ),
)
SUBAGENT_TYPES: dict[str, SubagentType] = {GENERAL.name: GENERAL}


def _input_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "minLength": 1,
                "maxLength": 200,
                "description": "A short (3-5 word) label of the task, shown to the user.",
            },
            "prompt": {
                "type": "string",
                "minLength": 1,
                "maxLength": 100_000,
                "description": (
                    "The complete task for the subagent: it sees nothing else of this "
                    "conversation, so include every detail it needs and say what its report "
                    "should contain."
                ),
            },
            "subagent_type": {
                "type": "string",
                "minLength": 1,
                "maxLength": 64,
                "description": (
                    "Which kind of subagent: " + ", ".join(SUBAGENT_TYPES) + " (default general)."
                ),
            },
        },
        "required": ["description", "prompt"],
        "additionalProperties": False,
    }


def build_spec(limits: Limits) -> ToolSpec:
    kinds = "\n".join(f"- {t.name}: {t.description}" for t in SUBAGENT_TYPES.values())
    schema = _input_schema()
    return builtin_spec(
        "task",
        title="Run a subagent",
        description="Hand a self-contained task to a subagent that runs on the client's model with "
        "the same tools and permissions, and get its final report back. Use it for "
        "searches or multi-step work whose details you do not need to see. The subagent "
        f"has at most {limits.max_turns} turns and {limits.max_seconds:g} s, cannot ask "
        "the user and cannot start further subagents.\n\nSubagent types:\n" + kinds,
        input_schema=schema,
        # No output schema: the subagent's answer is the whole result, the one form every
        # client shows a model as it is (server/wire.py). The value (result, turns,
        # tool_calls, subagent_type) stays what `call` prints.
        timeout_s=limits.max_seconds,
        holds_place=False,  # it waits on the client's model; its subagent's calls take places
        safety=Safety(
            read_only=False,
            destructive=False,
            idempotent=False,
            open_world=True,
            inferred=frozenset(),
        ),
    )
