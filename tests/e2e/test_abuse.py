"""Abusive clients over raw stdio: floods, oversized frames, disconnects mid-call.

"Stays up" for stdio means: while the client's pipes are open the server answers every
request it can read; when the client goes away (stdout closed under it, or SIGTERM after it
closed stdin) the server ends promptly, with exit status 0, no traceback, and no tool
process left behind. (EOF on stdin alone lets the calls already read finish first, within the
grace period: tests/e2e/test_stdin_closed.py.)
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.faulty_tools import faults, write_catalog
from tests.support.procs import alive_with, memory_kib, wait_gone
from tests.support.rawstdio import RawServer, modern, raw_server, request

pytestmark = pytest.mark.e2e


def _catalog(tmp_path: Path) -> tuple[Path, str]:
    marker = f"abuse-{uuid.uuid4().hex}"
    return write_catalog(tmp_path / marker, faults(bomb_bytes=1 << 20)), marker


def _call(request_id: object, tool: str, arguments: dict[str, object]) -> dict[str, object]:
    return request(request_id, "tools/call", {"name": tool, "arguments": arguments})


async def _wait_running(marker: str, server: RawServer) -> None:
    """Until a tool process carrying ``marker`` runs (polled: no event announces it)."""
    with anyio.fail_after(10):
        while not alive_with(marker, exclude=[server.pid]):  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def test_hundreds_of_pipelined_requests_are_all_answered_each_with_its_own_result(
    tmp_path: Path,
) -> None:
    folder, _marker = _catalog(tmp_path)
    async with raw_server(tmp_path, str(folder), "--max-concurrency", "16") as server:
        with anyio.fail_after(60):
            await server.initialize()
            flood = []
            for i in range(600):
                if i % 3 == 0:
                    flood.append(_call(i, "ok", {"nonce": f"n{i}"}))
                else:
                    flood.append(request(i, "ping" if i % 3 == 1 else "tools/list"))
            frames = b"".join(json.dumps(m).encode() + b"\n" for m in flood)
            answers: dict[int, dict[str, Any]] = {}
            async with anyio.create_task_group() as group:  # read while sending: no deadlock
                group.start_soon(server.send, frames)
                while len(answers) < len(flood):
                    message = await server.read_message()
                    if "id" in message and ("result" in message or "error" in message):
                        assert message["id"] not in answers, "two answers to one request"
                        answers[message["id"]] = message
        assert sorted(answers) == list(range(len(flood)))
        for n, answer in answers.items():
            result = answer["result"]
            if n % 3 == 0:
                assert result["structuredContent"] == {"echo": {"nonce": f"n{n}"}}
            elif n % 3 == 2:
                assert {t["name"] for t in result["tools"]} >= {"ok", "hang"}


async def test_a_multi_megabyte_request_line_is_answered_and_the_connection_keeps_working(
    tmp_path: Path,
) -> None:
    folder, _marker = _catalog(tmp_path)
    big = "x" * (6 << 20)  # a 6 MiB JSON line in, and the same back
    async with raw_server(tmp_path, str(folder)) as server:
        with anyio.fail_after(60):
            await server.initialize()
            answer = await server.call(_call("big", "ok", {"nonce": big}))
            assert answer["result"]["structuredContent"] == {"echo": {"nonce": big}}
            assert "result" in await server.call(request("after", "ping"))


async def test_megabytes_of_garbage_without_a_newline_cost_bounded_memory_and_are_dropped(
    tmp_path: Path,
) -> None:
    folder, _marker = _catalog(tmp_path)
    async with raw_server(tmp_path, str(folder)) as server:
        with anyio.fail_after(60):
            await server.initialize()
            before = memory_kib(server.pid)["VmRSS"]
            for _ in range(8):
                await server.send(b"\x00garbage\xff" * (100 << 10))  # 8 x 1 MB, no newline
            # The point is time passing with a frame left open: nothing announces "a while".
            await anyio.sleep(0.5)
            assert server.process.returncode is None
            await server.send(b"\n")
            assert "result" in await server.call(request("after-garbage", "ping"))
            grown = memory_kib(server.pid)["VmRSS"] - before
        assert grown < 256 << 10, f"the server grew {grown} KiB for an 8 MB line"
        assert "Traceback" not in server.stderr()


async def test_a_frame_over_64_mib_is_refused_with_its_id_without_being_held_whole(
    tmp_path: Path,
) -> None:
    folder, _marker = _catalog(tmp_path)
    start = json.dumps(_call("huge", "ok", {"nonce": ""})).encode().split(b'""')[0]
    huge = start + b'"' + b"x" * (72 << 20) + b'"}}}\n'  # the cap is 64 MiB
    async with raw_server(tmp_path, str(folder)) as server:
        with anyio.fail_after(60):
            await server.initialize()
            before = memory_kib(server.pid)
            await server.send(huge)
            answer = await server.answer_to("huge")
            assert answer["error"]["code"] == -32600, answer
            assert "result" in await server.call(request("after-huge", "ping"))
            after = memory_kib(server.pid)
        peak = after["VmHWM"] - max(before["VmHWM"], before["VmRSS"])
        assert peak < 80 << 10, f"the server's peak RSS grew {peak} KiB for a 72 MiB frame"
        assert "Traceback" not in server.stderr()


async def test_a_2026_request_after_garbage_is_answered(tmp_path: Path) -> None:
    folder, _marker = _catalog(tmp_path)
    async with raw_server(tmp_path, str(folder)) as server:
        with anyio.fail_after(30):
            await server.send(b"\xff\xfe not json\n{]\n" + b"[" * 100_000 + b"\n")
            answer = await server.call(
                modern("m1", "tools/call", {"name": "ok", "arguments": {"nonce": "m"}})
            )
        assert answer["result"]["structuredContent"] == {"echo": {"nonce": "m"}}


@pytest.mark.parametrize("how", ["eof-then-sigterm", "client-gone"])
async def test_a_client_leaving_mid_call_ends_the_server_cleanly_and_frees_the_tool(
    tmp_path: Path, how: str
) -> None:
    folder, marker = _catalog(tmp_path)
    async with raw_server(tmp_path, str(folder)) as server:
        with anyio.fail_after(30):
            await server.initialize()
            await server.send_json(_call("slow", "slow", {}))
            await server.send_json(_call("forker", "forker", {}))
            await _wait_running(marker, server)
            if how == "client-gone":  # both pipes close, as when the client process dies
                await server.stdout.aclose()
                await server.send_json(request("unreadable", "ping"))  # its answer hits EPIPE
            await server.close_stdin()
            if how == "eof-then-sigterm":  # the SDK client's shutdown: stdin, then SIGTERM
                server.process.terminate()
            # Limits that guard against a hang (both take milliseconds on an idle machine).
            status = await server.wait_exit(30)
            await wait_gone(marker, 30.0, warm=True)
        assert status == 0, server.stderr()
        assert "Traceback" not in server.stderr()
