"""question's declaration (ToolSpec): its input schema and safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.model import Safety

MAX_QUESTIONS = 8
MAX_OPTIONS = 20

OPTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {
            "type": "string",
            "minLength": 1,
            "maxLength": 200,
            "description": "The choice as shown to the user and returned as the answer.",
        },
        "description": {
            "type": "string",
            "maxLength": 500,
            "description": "Optional explanation of what this choice means.",
        },
    },
    "required": ["label"],
    "additionalProperties": False,
}

QUESTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2000,
            "description": "The complete question, ending with a question mark.",
        },
        "header": {
            "type": "string",
            "maxLength": 60,
            "description": "Optional short label shown above the question (e.g. 'Database').",
        },
        "options": {
            "type": "array",
            "items": OPTION_SCHEMA,
            "minItems": 1,
            "maxItems": MAX_OPTIONS,
            "description": "Choices with distinct labels. Leave out for a free-text answer.",
        },
        "multi_select": {
            "type": "boolean",
            "description": "True to let the user pick several options (needs options).",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": QUESTION_SCHEMA,
            "minItems": 1,
            "maxItems": MAX_QUESTIONS,
            "description": f"One to {MAX_QUESTIONS} questions, asked together in one form.",
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answers": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string"}},
            "description": "One array per question, in order: the chosen labels or the text.",
        }
    },
    "required": ["answers"],
}

SPEC = builtin_spec(
    "question",
    title="Ask the user",
    description=(
        "Ask the user one or more questions and wait for the answers, when a choice is "
        "theirs to make or a requirement is unclear. Offer options when the plausible answers "
        "are known. Returns {answers: string[][]}, one array per question in order. In "
        "sessions where nobody can be asked it fails at once with a fixed message: then "
        "continue with your best judgement."
    ),
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    holds_place=False,  # it waits on a person, not on this machine
    safety=Safety(
        read_only=True, destructive=False, idempotent=False, open_world=False, inferred=frozenset()
    ),
)
