"""task over a real Bridge: the subagent's tool calls go through the same pipeline (validation,
the gate, the executors) as the client's own; the client's model is a scripted Host."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.bridge.gate import Clearance
from mcp_toolbridge.bridge.outcome import CallOutcome
from mcp_toolbridge.bridge.pipeline import Bridge
from mcp_toolbridge.builtins.base import BuiltinExecutor, BuiltinTool
from mcp_toolbridge.builtins.fs.read import ReadTool
from mcp_toolbridge.builtins.question import QuestionTool
from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.task.spec import Limits
from mcp_toolbridge.builtins.task.subagent import RESULTS_USED_UP
from mcp_toolbridge.builtins.task.tool import NO_SAMPLING_MESSAGE, TaskTool
from mcp_toolbridge.builtins.todo import TodoTool
from mcp_toolbridge.catalog.catalog import Catalog
from mcp_toolbridge.errors import ErrorCode
from mcp_toolbridge.host import (
    CallContext,
    Caller,
    SamplingRequest,
    SamplingResult,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.policy.compiled import Decision
from tests.support.scripted_host import Reply, ScriptedHost

TASK = {"description": "find the answer", "prompt": "What answer does notes.txt give?"}


@dataclass
class Server:
    bridge: Bridge
    seen: list[tuple[str, CallContext]] = field(default_factory=list)
    """Every call the gate saw: tool name and the caller's context."""


def serve(
    tmp_path: Path,
    deny: frozenset[str] = frozenset(),
    concurrency: int | None = None,
    **task_options: Any,
) -> Server:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    sessions = Sessions(tmp_path / "sidecars")
    holder: list[Bridge] = []

    async def call_tool(name: str, arguments: Mapping[str, Any], ctx: CallContext) -> CallOutcome:
        return await holder[0].call(name, arguments, ctx)

    def list_tools(caller: Caller) -> list[ToolSpec]:
        return holder[0].catalog.specs()

    tools: list[BuiltinTool] = [
        TaskTool(call_tool, list_tools, **task_options),
        ReadTool(workspace, sessions),
        TodoTool(sessions),
        QuestionTool(),
    ]
    catalog, problems = Catalog.build(tool.spec for tool in tools)
    assert problems == []
    seen: list[tuple[str, CallContext]] = []

    async def gate(spec: ToolSpec, arguments: Mapping[str, Any], ctx: CallContext) -> Clearance:
        seen.append((spec.name, ctx))
        if spec.name in deny:
            return Clearance(Decision("deny", f"the project rule 'deny {spec.name}'", "project"))
        return Clearance(Decision("allow", "test policy", "default"))

    executors = {"builtin": BuiltinExecutor(tools)}
    server = Server(Bridge(catalog, executors, gate=gate, max_concurrency=concurrency), seen)
    holder.append(server.bridge)
    return server


def use(name: str, arguments: dict[str, Any], ident: str = "u1") -> SamplingResult:
    return SamplingResult(content=(ToolUseBlock(ident, name, arguments),), stop_reason="toolUse")


def answer(text: str) -> SamplingResult:
    return SamplingResult(content=(TextBlock(text),), stop_reason="endTurn")


def results_in(request: SamplingRequest) -> list[ToolResultBlock]:
    last = request.messages[-1]
    assert last.role == "user"
    return [b for b in last.content if isinstance(b, ToolResultBlock)]


async def run_task(
    server: Server, host: ScriptedHost | None, arguments: Mapping[str, Any] = TASK, **ctx: Any
) -> CallOutcome:
    with anyio.fail_after(10):
        return await server.bridge.call("task", arguments, CallContext("s1", host=host, **ctx))


async def test_the_subagent_calls_a_tool_then_its_final_text_is_the_result(tmp_path):
    server = serve(tmp_path)
    seen: list[ToolResultBlock] = []

    async def reply_after_reading(request: SamplingRequest) -> SamplingResult:
        seen.extend(results_in(request))
        return answer("notes.txt says the answer is 42.")

    replies: list[Reply] = [use("read", {"file_path": "notes.txt"}), reply_after_reading]
    host = ScriptedHost(replies=replies)
    outcome = await run_task(server, host)

    assert outcome.ok, outcome.error
    assert outcome.value == {
        "result": "notes.txt says the answer is 42.",
        "turns": 2,
        "tool_calls": ["read"],
        "subagent_type": "general",
    }
    [result] = seen
    assert result.tool_use_id == "u1" and not result.is_error
    assert "the answer is 42" in result.text
    first = host.sampled[0][1]
    assert [tool.name for tool in first.tools] == ["read"]
    assert first.messages[0].content == (TextBlock(TASK["prompt"]),)
    assert first.system_prompt and "subagent" in first.system_prompt
    second = host.sampled[1][1]
    assert [m.role for m in second.messages] == ["user", "assistant", "user"]
    keys = [key for key, _ in host.sampled]
    assert keys[0].endswith(":1") and keys[1].endswith(":2")
    assert keys[0][:-2] == keys[1][:-2]


async def test_a_task_holds_no_place_its_subagents_calls_need(tmp_path):
    """A task waits on the client's model and its subagent's calls run through the same
    bridge: with one place for running calls, the task held it and its subagent's first
    call waited for it until the task's deadline."""
    server = serve(tmp_path, concurrency=1)
    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), answer("42.")])
    outcome = await run_task(server, host)
    assert outcome.ok, outcome.error
    assert outcome.value["tool_calls"] == ["read"] and outcome.value["result"] == "42."


async def test_the_subagent_calls_carry_the_parent_session_and_host_one_level_down(tmp_path):
    server = serve(tmp_path)
    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), answer("done")])
    await run_task(server, host)
    [(_, parent), (name, child)] = server.seen
    assert name == "read"
    assert (parent.depth, child.depth) == (0, 1)
    assert child.session_id == "s1" and child.host is host
    assert {"todo", "question", "task"} <= child.denied_tools


async def test_a_denied_tool_stays_denied_for_the_subagent_which_sees_the_refusal(tmp_path):
    server = serve(tmp_path, deny=frozenset({"read"}))
    seen: list[ToolResultBlock] = []

    async def give_up(request: SamplingRequest) -> SamplingResult:
        seen.extend(results_in(request))
        return answer("I was not allowed to read notes.txt.")

    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), give_up])
    outcome = await run_task(server, host)
    assert outcome.ok
    assert outcome.value["result"] == "I was not allowed to read notes.txt."
    [refusal] = seen
    assert refusal.is_error
    assert refusal.text == "Denied by the project rule 'deny read'."


async def test_a_failing_tool_call_reaches_the_subagent_as_an_error_result(tmp_path):
    server = serve(tmp_path)
    seen: list[ToolResultBlock] = []

    async def after(request: SamplingRequest) -> SamplingResult:
        seen.extend(results_in(request))
        return answer("missing")

    replies: list[Reply] = [use("read", {"file_path": "nope.txt"}), after]
    outcome = await run_task(server, ScriptedHost(replies=replies))
    assert outcome.ok
    [failure] = seen
    assert failure.is_error and "not found" in failure.text


async def test_todo_question_task_and_unknown_tools_are_not_available_to_the_subagent(tmp_path):
    server = serve(tmp_path)
    seen: list[ToolResultBlock] = []

    async def after(request: SamplingRequest) -> SamplingResult:
        seen.extend(results_in(request))
        return answer("ok")

    calls = SamplingResult(
        content=(
            ToolUseBlock("a", "task", TASK),
            ToolUseBlock("b", "todo", {"todos": []}),
            ToolUseBlock("c", "question", {"questions": [{"question": "Why?"}]}),
            ToolUseBlock("d", "no_such_tool", {}),
        )
    )
    outcome = await run_task(server, ScriptedHost(replies=[calls, after]))
    assert outcome.ok
    assert [r.tool_use_id for r in seen] == ["a", "b", "c", "d"]
    for result, name in zip(seen, ["task", "todo", "question", "no_such_tool"], strict=True):
        assert result.is_error
        assert result.text == (
            f"the tool {name!r} is not available to this subagent; use one of: read"
        )
    assert [name for name, _ in server.seen] == ["task"]


async def test_a_nested_task_call_is_refused_even_when_it_reaches_the_bridge(tmp_path):
    server = serve(tmp_path)
    host = ScriptedHost(replies=[answer("never")])
    outcome = await run_task(server, host, depth=1)
    assert not outcome.ok
    assert outcome.code is ErrorCode.PERMISSION_DENIED
    assert "cannot start another subagent" in (outcome.error or "")
    assert host.sampled == []


async def test_the_policy_can_give_subagents_todo(tmp_path):
    server = serve(tmp_path, subagent_tools=["todo"])
    todos = {"todos": [{"content": "read notes", "status": "in_progress"}]}
    host = ScriptedHost(replies=[use("todo", todos), answer("planned")])
    outcome = await run_task(server, host)
    assert outcome.ok
    offered = [tool.name for tool in host.sampled[0][1].tools]
    assert sorted(offered) == ["read", "todo"]
    assert [name for name, _ in server.seen] == ["task", "todo"]


async def test_the_loop_stops_at_max_turns_without_running_the_last_requested_calls(tmp_path):
    server = serve(tmp_path, max_turns=3)
    replies: list[Reply] = [
        use("read", {"file_path": "notes.txt"}, ident=f"u{n}") for n in range(3)
    ]
    host = ScriptedHost(replies=replies)
    outcome = await run_task(server, host)
    assert not outcome.ok
    assert "turn limit" in (outcome.error or "")
    assert "tool calls made: read, read" in (outcome.error or "")
    assert outcome.value["turns"] == 3
    assert outcome.value["tool_calls"] == ["read", "read"]
    assert len(host.sampled) == 3
    assert [name for name, _ in server.seen] == ["task", "read", "read"]


async def test_the_loop_stops_at_its_time_limit(tmp_path):
    server = serve(tmp_path, max_seconds=0.2)

    async def never(request: SamplingRequest) -> SamplingResult:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), never])
    outcome = await run_task(server, host)
    assert not outcome.ok
    assert "time limit" in (outcome.error or "")
    assert outcome.value["tool_calls"] == ["read"]


async def test_cancelling_the_parent_call_stops_the_subagent(tmp_path):
    server = serve(tmp_path)
    sampling = anyio.Event()
    cancelled: list[bool] = []

    async def hang(request: SamplingRequest) -> SamplingResult:
        sampling.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            cancelled.append(True)
            raise
        raise AssertionError("unreachable")

    spare: list[Reply] = [answer("too late")]
    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), hang, *spare])
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(server.bridge.call, "task", TASK, CallContext("s1", host=host))
            await sampling.wait()
            group.cancel_scope.cancel()
    assert cancelled == [True]
    assert len(host.sampled) == 2
    assert host.replies == spare


@pytest.mark.parametrize(
    "make_host", [lambda: None, lambda: ScriptedHost(sample_ok=False)], ids=["none", "no-sampling"]
)
async def test_a_client_without_sampling_gets_a_clear_error(
    tmp_path, make_host: Callable[[], ScriptedHost | None]
):
    server = serve(tmp_path)
    outcome = await run_task(server, make_host())
    assert not outcome.ok
    assert outcome.error == NO_SAMPLING_MESSAGE


async def test_an_unknown_subagent_type_is_refused_with_the_known_ones(tmp_path):
    server = serve(tmp_path)
    host = ScriptedHost(replies=[answer("never")])
    outcome = await run_task(server, host, {**TASK, "subagent_type": "explorer"})
    assert not outcome.ok
    assert outcome.code is ErrorCode.ARGS_INVALID
    assert outcome.error == "unknown subagent_type 'explorer'; known types: general"
    assert host.sampled == []


async def test_an_answer_without_text_is_an_error(tmp_path):
    server = serve(tmp_path)
    outcome = await run_task(server, ScriptedHost(replies=[SamplingResult(content=())]))
    assert not outcome.ok
    assert outcome.error == "the subagent finished without writing an answer"


def test_the_spec_announces_the_limits_and_carries_the_time_limit(tmp_path):
    server = serve(tmp_path, max_turns=5, max_seconds=90)
    spec = server.bridge.catalog.specs()[0]
    assert spec.name == "task"
    assert spec.timeout_s == 90
    assert "at most 5 turns and 90 s" in spec.description
    assert "- general:" in spec.description


async def test_each_subagent_tool_call_is_reported_as_progress_of_the_parent_call(tmp_path):
    server = serve(tmp_path)
    reports: list[tuple[float, float | None, str | None]] = []

    async def progress(current: float, total: float | None, message: str | None) -> None:
        reports.append((current, total, message))

    host = ScriptedHost(replies=[use("read", {"file_path": "notes.txt"}), answer("42")])
    outcome = await run_task(server, host, progress=progress)
    assert outcome.ok
    assert reports == [(1, 8, "subagent turn 1: read")]
    [_, (_, child)] = server.seen
    assert child.progress is None


def many(name: str, arguments: dict[str, Any], count: int, turn: int = 0) -> SamplingResult:
    """One reply asking for ``count`` calls at once."""
    uses = tuple(ToolUseBlock(f"t{turn}-{n}", name, arguments) for n in range(count))
    return SamplingResult(content=uses, stop_reason="toolUse")


async def test_a_reply_asking_for_many_calls_runs_a_bounded_number(tmp_path):
    """Found by the red-team pass of 2026-11-29, 8th: a client's model (the client's own) that
    answered one sampling request with 1,500 reads of a 70 KB file made a real stdio server run
    every one (130 s) and hold them all for the next request: its peak memory grew from 20 MB
    to 408 MB, from one call. Now the first 16 calls of a reply run and the others are
    answered "not run", each use still answered once (sampling requires it)."""
    server = serve(tmp_path)
    host = ScriptedHost(replies=[many("read", {"file_path": "notes.txt"}, 40), answer("done")])
    outcome = await run_task(server, host)
    assert outcome.ok, outcome.error
    assert outcome.value["tool_calls"] == ["read"] * Limits().max_calls_per_turn == ["read"] * 16
    assert [name for name, _ in server.seen] == ["task"] + ["read"] * 16
    answered = results_in(host.sampled[1][1])
    assert [b.tool_use_id for b in answered] == [f"t0-{n}" for n in range(40)]
    assert all("42" in b.text and not b.is_error for b in answered[:16])
    assert all(b.is_error and b.text.startswith("not run: at most 16") for b in answered[16:])


async def test_the_tool_output_a_conversation_keeps_is_bounded(tmp_path):
    """The same pass: 16 results of 64,000 characters a turn, for up to 100 turns, are 100
    MB kept and sent back to the client each turn. The conversation keeps at most 2,000,000
    characters of tool output in all; past that a result is a note."""
    server = serve(tmp_path)
    (tmp_path / "ws" / "big.txt").write_text(("x" * 99 + "\n") * 1000, encoding="utf-8")
    replies: list[Reply] = [many("read", {"file_path": "big.txt"}, 16, turn) for turn in range(3)]
    host = ScriptedHost(replies=[*replies, answer("done")])
    outcome = await run_task(server, host)
    assert outcome.ok, outcome.error
    assert outcome.value["tool_calls"] == ["read"] * 48  # each ran
    shown = [b.text for _, request in host.sampled[1:] for b in results_in(request)]
    kept = [text for text in shown if text != RESULTS_USED_UP]
    assert sum(len(t.split("\n[cut: ")[0]) for t in kept) == Limits().max_results_chars
    assert shown[-16:] == [RESULTS_USED_UP] * 16
