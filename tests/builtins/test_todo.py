from __future__ import annotations

from typing import Any

import pytest

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.todo import SPEC, TodoTool
from mcp_toolbridge.errors import ArgumentsError, PermissionDeniedError
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.schemas import compile_schema


async def call(tool: TodoTool, todos: list[dict[str, Any]], ctx: CallContext) -> ExecResult:
    arguments = {"todos": todos}
    assert compile_schema(SPEC.input_schema).validate(arguments) == []
    return await tool.run(
        ExecRequest(spec=tool.spec, arguments=arguments, timeout_s=5, context=ctx)
    )


async def test_each_call_replaces_the_list_and_returns_it(tmp_path):
    tool = TodoTool(Sessions(tmp_path))
    ctx = CallContext(session_id="s1")
    first = [
        {"content": "read the spec", "status": "in_progress", "id": "a", "priority": "high"},
        {"content": "write the tool", "status": "pending"},
    ]
    result = await call(tool, first, ctx)
    assert result.ok
    assert result.value["todos"] == first
    assert result.value["counts"] == {"pending": 1, "in_progress": 1, "completed": 0}
    assert "warning" not in result.value

    second = [{"content": "write the tool", "status": "completed"}]
    result = await call(tool, second, ctx)
    assert result.value["todos"] == second
    assert await tool.current("s1") == second


async def test_an_empty_list_clears_the_store(tmp_path):
    tool = TodoTool(Sessions(tmp_path))
    ctx = CallContext(session_id="s1")
    await call(tool, [{"content": "x", "status": "pending"}], ctx)
    result = await call(tool, [], ctx)
    assert result.value["todos"] == []
    assert await tool.current("s1") == []


async def test_another_session_never_sees_the_list(tmp_path):
    sessions = Sessions(tmp_path)
    tool = TodoTool(sessions)
    await call(tool, [{"content": "secret plan", "status": "pending"}], CallContext(session_id="a"))
    assert await tool.current("b") == []
    result = await call(tool, [], CallContext(session_id="b"))
    assert await tool.current("a") == [{"content": "secret plan", "status": "pending"}]
    assert result.value["todos"] == []
    await sessions.state.forget("a")  # the session ended (Runtime.end_session)
    assert await tool.current("a") == []


async def test_more_than_one_item_in_progress_is_a_warning_not_a_failure(tmp_path):
    tool = TodoTool(Sessions(tmp_path))
    todos = [
        {"content": "one", "status": "in_progress"},
        {"content": "two", "status": "in_progress"},
    ]
    result = await call(tool, todos, CallContext(session_id="s1"))
    assert result.ok
    assert result.value["todos"] == todos
    assert "2 items are in_progress" in result.value["warning"]


async def test_repeated_ids_are_refused_and_the_stored_list_is_kept(tmp_path):
    tool = TodoTool(Sessions(tmp_path))
    ctx = CallContext(session_id="s1")
    await call(tool, [{"content": "keep", "status": "pending"}], ctx)
    todos = [
        {"content": "one", "status": "pending", "id": "x"},
        {"content": "two", "status": "pending", "id": "x"},
    ]
    with pytest.raises(ArgumentsError, match="repeated: x"):
        await call(tool, todos, ctx)
    assert await tool.current("s1") == [{"content": "keep", "status": "pending"}]


def test_the_schema_refuses_unknown_statuses_and_fields():
    validator = compile_schema(SPEC.input_schema)
    assert validator.validate({"todos": [{"content": "x", "status": "done"}]})
    assert validator.validate({"todos": [{"content": "x", "status": "pending", "extra": 1}]})
    assert validator.validate({"todos": [{"content": "", "status": "pending"}]})


async def test_a_subagent_denied_todo_is_refused(tmp_path):
    tool = TodoTool(Sessions(tmp_path))
    ctx = CallContext(session_id="s1", depth=1, denied_tools=frozenset({"todo"}))
    with pytest.raises(PermissionDeniedError, match="subagent"):
        await call(tool, [{"content": "x", "status": "pending"}], ctx)
    assert await tool.current("s1") == []
