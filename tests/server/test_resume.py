"""Resumable streams over streamable HTTP, driven by raw HTTP: the SDK client cannot be made
to drop a connection in the middle of a call, so these tests do it themselves.

A 2025-11-25 session's streams start with a priming event (an id and ``retry``); a client
that loses a call's response stream reconnects with ``GET`` and ``Last-Event-ID`` and gets
what it missed and the result, once, while the tool runs once. A 2026-07-28 request, and any
request to a ``--stateless`` server, keeps no store: its streams carry no event ids.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.resume import RETRY_MS
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.faulty_tools import Fault, write_catalog
from tests.support.httpserve import (
    Session,
    call,
    modern,
    modern_headers,
    open_session,
    request,
)

ONCE = (
    # Counts its runs (in the workspace: its served folder is read-only), says it started,
    # waits for the test to release it (a FIFO), says so, and answers. Progress lines on its
    # progress channel become notifications/progress.
    'echo run >> "${0%/catalog/tools/bin/once}/once.runs"\n'
    'echo \'{"progress": 1, "message": "started"}\' >"/dev/fd/$TOOLBRIDGE_PROGRESS_FD"\n'
    'read line < "$0.fifo"\n'
    'echo \'{"progress": 2, "message": "released"}\' >"/dev/fd/$TOOLBRIDGE_PROGRESS_FD"\n'
    'printf \'{"released": "%s"}\\n\' "$line"\n'
)


@dataclass
class Event:
    id: str | None = None
    retry: int | None = None
    data: list[str] = field(default_factory=list)

    @property
    def message(self) -> dict[str, Any] | None:
        text = "\n".join(self.data).strip()
        if not text:
            return None
        parsed: dict[str, Any] = json.loads(text)
        return parsed


async def _events(response: httpx2.Response) -> AsyncIterator[Event]:
    """The SSE events of a streamed response, as they arrive."""
    event = Event()
    seen = False
    async for line in response.aiter_lines():
        if not line:
            if seen:
                yield event
            event, seen = Event(), False
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "id":
            event.id, seen = value, True
        elif name == "retry":
            event.retry, seen = int(value), True
        elif name == "data":
            event.data.append(value)
            seen = True


@dataclass
class Tool:
    bin: Path

    @property
    def runs(self) -> int:
        path = self.bin.parents[3] / "once.runs"
        return len(path.read_text().splitlines()) if path.exists() else 0

    async def release(self, word: str) -> None:
        """Let the waiting tool go on (opening the FIFO waits for the tool to open it)."""
        fifo = self.bin.with_name("once.fifo")
        await anyio.to_thread.run_sync(fifo.write_text, f"{word}\n", abandon_on_cancel=True)


@asynccontextmanager
async def _serving(tmp_path: Path, *, stateless: bool = False) -> AsyncIterator[tuple[str, Tool]]:
    folder = write_catalog(tmp_path / "catalog", (Fault("once", ONCE, None, timeout_s=30),))
    tool = Tool(folder / "tools" / "bin" / "once")
    os.mkfifo(tool.bin.with_name("once.fifo"))
    # The workspace holds the catalog: the tool counts its runs in a file beside it.
    settings = Settings(paths=[folder], audit=False, workspace=tmp_path)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0, stateless=stateless))
        async with anyio.create_task_group() as tg:
            url = await tg.start(service.serve)
            try:
                yield url, tool
            finally:
                service.stop()


def _progress_call(token: str) -> dict[str, Any]:
    message = call("once", {})
    message["params"]["_meta"] = {"progressToken": token}
    return message


async def _start_and_drop(session: Session, message: dict[str, Any]) -> list[Event]:
    """POST ``message`` on a connection of its own; read until the tool says it started,
    then drop that connection. The events read."""
    seen: list[Event] = []
    async with httpx2.AsyncClient(timeout=30) as own:
        request = own.build_request("POST", session.url, json=message, headers=session.headers)
        response = await own.send(request, stream=True)
        assert response.status_code == 200
        async for event in _events(response):
            seen.append(event)
            note = event.message
            if note is not None and note.get("params", {}).get("message") == "started":
                break
        await response.aclose()  # the socket goes: httpx2 does not reuse a half-read stream
    return seen


async def _resume(session: Session, last_event_id: str) -> list[Event]:
    """GET with Last-Event-ID; every event until the server ends the stream."""
    headers = {**session.headers, "Accept": "text/event-stream", "Last-Event-ID": last_event_id}
    headers.pop("Content-Type")
    async with session.http.stream("GET", session.url, headers=headers) as response:
        assert response.status_code == 200, await response.aread()
        return [event async for event in _events(response)]


@pytest.mark.parametrize("released", ["before", "after"])
async def test_a_call_whose_connection_drops_is_resumed_with_its_result_once_and_one_run(
    tmp_path: Path, released: str
) -> None:
    """``before``: the tool finishes while nobody is connected, the client resumes later;
    ``after``: the client resumes while the tool still runs, and then it finishes."""
    with anyio.fail_after(30):
        async with _serving(tmp_path) as (url, tool), httpx2.AsyncClient(timeout=30) as http:
            session = await open_session(http, url, stateless=False)
            message = _progress_call("resume-me")
            seen = await _start_and_drop(session, message)
            priming = seen[0]
            assert priming.id and priming.retry == RETRY_MS and priming.message is None
            assert all(e.id for e in seen)
            assert tool.runs == 1
            if released == "before":
                await tool.release("while away")
                resumed = await _resume(session, seen[-1].id or "")
            else:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(tool.release, "while away")
                    resumed = await _resume(session, seen[-1].id or "")
            assert resumed[0].id == seen[-1].id and resumed[0].retry == RETRY_MS
            messages = [e.message for e in resumed if e.message is not None]
            notes = [m["params"]["message"] for m in messages if "method" in m]
            results = [m for m in messages if m.get("id") == message["id"]]
            assert notes == ["released"]
            assert len(results) == 1
            assert results[0]["result"]["structuredContent"] == {"released": "while away"}
            assert all(e.id for e in resumed)
            assert tool.runs == 1
            # The session goes on as before.
            listed = await session.ask(request("tools/list"))
            assert {t["name"] for t in listed["result"]["tools"]} == {"once", "tool_search"}


async def test_every_stream_of_a_2025_11_25_session_starts_with_an_event_id_and_retry(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path) as (url, _tool), httpx2.AsyncClient(timeout=30) as http:
            session = await open_session(http, url, stateless=False)
            async with http.stream(
                "POST", url, json=request("tools/list"), headers=session.headers
            ) as posted:
                on_post = [event async for event in _events(posted)]
            headers = {**session.headers, "Accept": "text/event-stream"}
            async with http.stream("GET", url, headers=headers) as standalone:
                first = await anext(aiter(_events(standalone)))
    assert on_post[0].id and on_post[0].retry == RETRY_MS and on_post[0].message is None
    assert on_post[1].id and on_post[1].message is not None and "result" in on_post[1].message
    assert first.id and first.retry == RETRY_MS and first.message is None


@pytest.mark.parametrize("era", ["2026", "stateless"])
async def test_sessionless_streams_carry_no_event_ids_to_resume_from(
    tmp_path: Path, era: str
) -> None:
    """There a closed stream is the cancellation (tests/e2e/test_abuse_http.py)."""
    with anyio.fail_after(30):
        async with (
            _serving(tmp_path, stateless=era == "stateless") as (url, tool),
            httpx2.AsyncClient(timeout=30) as http,
        ):
            message = _progress_call("no-resume")
            if era == "2026":
                body, headers = modern(message), modern_headers(message)
                body["params"]["_meta"] = {**body["params"]["_meta"], "progressToken": "no-resume"}
            else:
                session = await open_session(http, url, stateless=True)
                body, headers = message, session.headers
            async with anyio.create_task_group() as tg:
                tg.start_soon(tool.release, "sessionless")
                async with http.stream("POST", url, json=body, headers=headers) as response:
                    assert response.headers["content-type"].startswith("text/event-stream")
                    events = [event async for event in _events(response)]
    messages = [e.message for e in events]
    assert messages[-1] is not None
    assert messages[-1]["result"]["structuredContent"] == {"released": "sessionless"}
    assert None not in messages, "no priming event"
    assert [(e.id, e.retry) for e in events] == [(None, None)] * len(events)


async def test_another_session_cannot_resume_a_stream_of_this_one(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path) as (url, tool), httpx2.AsyncClient(timeout=30) as http:
            owner = await open_session(http, url, stateless=False)
            other = await open_session(http, url, stateless=False)
            message = _progress_call("not-yours")
            seen = await _start_and_drop(owner, message)
            assert seen[-1].id
            await tool.release("for the owner")
            stolen = await _resume(other, seen[-1].id)
            resumed = await _resume(owner, seen[-1].id)
    stolen_messages = [e.message for e in stolen if e.message is not None]
    assert [m.get("error", {}).get("code") for m in stolen_messages] == [-32000]
    assert "for the owner" not in json.dumps(stolen_messages)
    assert any("for the owner" in json.dumps(e.message) for e in resumed), [
        (e.id, e.message) for e in resumed
    ]


async def test_deleting_the_session_ends_a_resumed_stream_still_waiting_for_its_result(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with _serving(tmp_path) as (url, tool), httpx2.AsyncClient(timeout=30) as http:
            session = await open_session(http, url, stateless=False)
            seen = await _start_and_drop(session, _progress_call("deleted"))
            headers = {**session.headers, "Accept": "text/event-stream"}
            headers["Last-Event-ID"] = seen[-1].id or ""
            headers.pop("Content-Type")
            resumed: list[Event] = []
            async with http.stream("GET", url, headers=headers) as response:
                async for event in _events(response):
                    resumed.append(event)
                    if len(resumed) == 1:  # primed: the stream waits for the call
                        assert await session.delete() == 200
    assert [e.message for e in resumed] == [None]
    assert tool.runs == 1
