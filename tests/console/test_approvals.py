"""A headless client's call that the policy says to ask about waits for a person's answer in
the console instead of being refused: approved once, it runs; denied, it is refused; either
way the audit line records the answer and who gave it. Without a console it is refused at
once, as before. Real HTTP, the SDK client in both protocol eras."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.console.service import local_user
from tests.console.conftest import Person, serving

pytestmark = pytest.mark.anyio


def _audit(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


async def _call(url: str, mode: str, tool: str, args: dict[str, Any], out: list[Any]) -> None:
    told: list[str] = []

    async def heard(progress: float, total: float | None, message: str | None) -> None:
        told.append(message or "")

    async with httpx2.AsyncClient(timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            out.append(await client.call_tool(tool, args, progress_callback=heard))
    out.append(told)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("stateless", [False, True])
async def test_a_headless_call_waits_in_the_console_and_runs_once_approved(
    tmp_path: Path, mode: str, stateless: bool
) -> None:
    async with serving(tmp_path, stateless=stateless) as stack, Person.at(stack.console) as me:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, mode, "note", {"text": "hello"}, result)
            [waiting] = await me.waiting()
            page = await me.page()
            assert "note" in page and "hello" in page
            assert "destructive" in page  # the rule that asked
            answered = await me.answer(waiting, "once")
            assert answered.status_code == 303
        called, progress = result
        assert not called.is_error, called
        assert called.structured_content == {"noted": "hello"}
        line = _audit(stack.audit)[-1]
        assert line["tool"] == "note" and line["outcome"] == "ok"
        assert line["answer"] == "once"
        assert line["answeredBy"] == f"console:{local_user()}"
        if mode == "auto" or not stateless:  # a client that listens hears it waits
            assert any("waiting for a person's answer" in p for p in progress), progress


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_headless_call_denied_in_the_console_is_refused(tmp_path: Path, mode: str) -> None:
    async with serving(tmp_path, stateless=True) as stack, Person.at(stack.console) as me:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, mode, "note", {"text": "no"}, result)
            [waiting] = await me.waiting()
            await me.answer(waiting, "deny")
        called, _ = result
        assert called.is_error
        assert "rejected this call" in called.content[0].text
        line = _audit(stack.audit)[-1]
        assert (line["outcome"], line["answer"]) == ("denied", "reject")
        assert line["answeredBy"] == f"console:{local_user()}"
        assert line["exitCode"] is None  # nothing ran


async def test_nobody_answering_before_the_deadline_is_a_refusal(tmp_path: Path) -> None:
    async with serving(tmp_path, stateless=True, timeout_s=0.5) as stack:
        result: list[Any] = []
        await _call(stack.url, "auto", "note", {"text": "late"}, result)
        called, _ = result
        assert called.is_error
        assert "nobody answered in the mcp-toolbridge console within 0.5 s" in (
            called.content[0].text
        )
        assert len(stack.console.desk) == 0
        assert _audit(stack.audit)[-1]["answer"] == "unreachable"


async def test_an_answer_for_nothing_waiting_or_without_the_csrf_token_is_refused(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        gone = await me.answer("no-such-call", "once")
        assert gone.status_code == 409
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, "auto", "note", {"text": "x"}, result)
            [waiting] = await me.waiting()
            forged = await me.http.post(
                f"{me.base}/answer/{waiting}", data={"csrf": "0" * 64, "choice": "once"}
            )
            assert forged.status_code == 403
            assert len(stack.console.desk) == 1  # still waiting
            await me.answer(waiting, "deny")
        assert result[0].is_error


async def test_a_secret_in_a_waiting_calls_arguments_never_reaches_the_page(
    tmp_path: Path,
) -> None:
    # Made at run time so that no scanner of this repository finds a key in it.
    token = "ghp_" + "".join(chr(ord("a") + (i * 7) % 26) for i in range(36))
    async with serving(tmp_path, stateless=True) as stack, Person.at(stack.console) as me:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, "auto", "note", {"text": f"use {token}"}, result)
            [waiting] = await me.waiting()
            page = await me.page()
            await me.answer(waiting, "deny")
        assert "[REDACTED:github-pat]" in page
        assert token not in page and token[4:20] not in page
