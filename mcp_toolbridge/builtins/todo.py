"""todo: the caller's todo list. Every call sends the whole list, which replaces the stored one.

The list lives in the State port under the call's owner: the person (subject and client)
when the caller is identified, who finds it again in their next session; else the session
(one client connection), which another session never sees and which drops it when it
closes. A subagent cannot use it unless the policy allows
(``CallContext.denied_tools``).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.todo_spec import SPEC as SPEC  # the tool's own, as before
from mcp_toolbridge.builtins.todo_spec import STATUSES
from mcp_toolbridge.errors import ArgumentsError, PermissionDeniedError
from mcp_toolbridge.executors import ExecRequest, ExecResult

STORE_KEY = "todo"


def _clean(raw: Any) -> dict[str, str]:
    """One item with only the known fields, in a fixed order (arguments are validated)."""
    item = {"content": str(raw["content"]), "status": str(raw["status"])}
    for optional in ("id", "priority"):
        if optional in raw:
            item[optional] = str(raw[optional])
    return item


class TodoTool:
    """The todo built-in over the State port."""

    spec = SPEC

    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions

    async def current(self, owner: str) -> list[dict[str, str]]:
        """The stored list of ``owner`` (a session id or Caller.key; empty when never set)."""
        stored = await self._sessions.state.load(owner, STORE_KEY)
        return [dict(item) for item in stored or ()]

    async def run(self, request: ExecRequest) -> ExecResult:
        ctx = request.context
        if SPEC.name in ctx.denied_tools:
            raise PermissionDeniedError(
                "todo is not available to a subagent; keep track of your steps in your answer",
                tool=SPEC.name,
            )
        items = [_clean(raw) for raw in request.arguments["todos"]]
        duplicated = sorted(
            ident for ident, n in Counter(i["id"] for i in items if "id" in i).items() if n > 1
        )
        if duplicated:
            raise ArgumentsError(
                f"todo ids must be unique in the list; repeated: {', '.join(duplicated)}. "
                "Give each item its own id or leave id out",
                tool=SPEC.name,
            )
        await self._sessions.state.save(ctx.owner, STORE_KEY, [dict(item) for item in items])
        counts = Counter(i["status"] for i in items)
        value: dict[str, Any] = {
            "todos": [dict(item) for item in items],
            "counts": {status: counts.get(status, 0) for status in STATUSES},
        }
        if counts["in_progress"] > 1:
            value["warning"] = (
                f"{counts['in_progress']} items are in_progress; keep exactly one in_progress "
                "and mark the others pending or completed"
            )
        return ExecResult(ok=True, value=value, text=_text(value))


_BOXES = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def _text(value: dict[str, Any]) -> str:
    """The list as a checklist: [ ] pending, [~] in progress, [x] completed."""
    if not value["todos"]:
        return "The todo list is empty."
    counts = value["counts"]
    lines = [
        f"Todo list: {counts['completed']} completed, {counts['in_progress']} in progress, "
        f"{counts['pending']} pending."
    ]
    for item in value["todos"]:
        extra = f" ({item['priority']} priority)" if "priority" in item else ""
        lines.append(f"{_BOXES[item['status']]} {item['content']}{extra}")
    if value.get("warning"):
        lines.append(f"Warning: {value['warning']}.")
    return "\n".join(lines)
