"""todo's declaration (ToolSpec): its input schema and safety facts."""

from __future__ import annotations

from typing import Any

from mcp_toolbridge.builtins.base import builtin_spec
from mcp_toolbridge.model import Safety

MAX_ITEMS = 200
STATUSES = ("pending", "in_progress", "completed")
PRIORITIES = ("high", "medium", "low")

ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "content": {
            "type": "string",
            "minLength": 1,
            "maxLength": 2000,
            "description": "What to do, as a short imperative sentence.",
        },
        "status": {
            "type": "string",
            "enum": list(STATUSES),
            "description": "pending, in_progress (keep exactly one item here) or completed.",
        },
        "id": {
            "type": "string",
            "minLength": 1,
            "maxLength": 100,
            "description": "Optional stable identifier of the item, unique in the list.",
        },
        "priority": {
            "type": "string",
            "enum": list(PRIORITIES),
            "description": "Optional priority: high, medium or low.",
        },
    },
    "required": ["content", "status"],
    "additionalProperties": False,
}

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "items": ITEM_SCHEMA,
            "maxItems": MAX_ITEMS,
            "description": (
                "The complete todo list. It replaces the previous list, so include every "
                "item, finished ones too. An empty list clears it."
            ),
        }
    },
    "required": ["todos"],
    "additionalProperties": False,
}

SPEC = builtin_spec(
    "todo",
    title="Todo list",
    description=(
        "Keep a todo list for the current multi-step task. Send the whole list every time: it "
        "replaces the stored list and is returned. Mark an item in_progress before starting "
        "it and completed as soon as it is done; keep one item in_progress at a time. The "
        "list belongs to this session only."
    ),
    input_schema=INPUT_SCHEMA,
    # No output schema: the checklist is the whole result, the one form every client shows a
    # model as it is (server/wire.py). The value (todos, counts, warning) stays what `call`
    # prints.
    safety=Safety(
        read_only=False, destructive=False, idempotent=True, open_world=False, inferred=frozenset()
    ),
)
