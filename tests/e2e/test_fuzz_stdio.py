"""Fuzzing the stdio wire: arbitrary frames never crash or wedge `mcp_toolbridge serve`.

One real server process per test gets garbage lines, invalid JSON, valid JSON of the wrong
shape, unknown methods, huge and ill-typed ids, params of the wrong type and notifications,
in both protocol eras. After each batch a valid request on the same connection must still be
answered; every well-formed request (a string or integer id, params an object or absent) must
get a response carrying its id; everything the server writes is JSON-RPC 2.0; nothing
reaches its stderr as a traceback.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fuzzing import FUZZ, TEXT, json_values
from tests.support.rawstdio import MODERN_META, RawServer, modern, raw_server, request

pytestmark = pytest.mark.e2e

METHODS = st.one_of(
    st.sampled_from(
        [
            "ping",
            "tools/list",
            "tools/call",
            "initialize",
            "server/discover",
            "resources/list",
            "prompts/get",
            "logging/setLevel",
            "completion/complete",
            "subscriptions/listen",
            "notifications/cancelled",
            "notifications/initialized",
            "nope/nope",
            "",
        ]
    ),
    TEXT,
)
PARAMS = st.one_of(
    st.none(),
    json_values(8),
    st.fixed_dictionaries(
        {"name": st.one_of(st.sampled_from(["word_count", "tool_search", "nope"]), json_values(2))},
        optional={"arguments": json_values(6), "cursor": json_values(2), "_meta": json_values(4)},
    ),
)
BAD_IDS = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False), st.lists(st.integers(), max_size=2)
)
_counter = itertools.count(1)


@dataclass(frozen=True)
class Frame:
    data: bytes
    answer_id: object | None = None
    """The id a response must carry (a well-formed request), else None."""


@st.composite
def frames(draw: st.DrawFn, era_meta: dict[str, Any] | None) -> Frame:
    kind = draw(st.sampled_from(["bytes", "text", "json", "request", "request", "notification"]))
    if kind == "bytes":
        return Frame(draw(st.binary(max_size=200)).replace(b"\n", b" ") + b"\n")
    if kind == "text":
        text = draw(st.sampled_from(["{", "[", '{"jsonrpc":', "}{", "nul\u0000", "\ufeff{}"]))
        return Frame((text + "\n").encode())
    if kind == "json":
        return Frame(json.dumps(draw(json_values(10))).encode() + b"\n")
    method = draw(METHODS)
    params = draw(PARAMS)
    if era_meta is not None and isinstance(params, dict) and draw(st.booleans()):
        params = {**params, "_meta": era_meta}
    if kind == "notification":
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return Frame(json.dumps(message).encode() + b"\n")
    shape = draw(st.sampled_from(["int", "huge", "str", "bad"]))
    n = next(_counter)
    request_id: object = {
        "int": n,
        "huge": 10**30 + n,
        "str": f"fuzz-{n}-{draw(TEXT)[:20]}",
        "bad": draw(BAD_IDS),
    }[shape]
    message = request(request_id, method, params)
    if draw(st.integers(0, 9)) == 0:
        message["jsonrpc"] = draw(st.sampled_from(["1.0", 2, None]))
    well_formed = (
        shape != "bad"
        and message["jsonrpc"] == "2.0"
        and (params is None or isinstance(params, dict))
    )
    return Frame(json.dumps(message).encode() + b"\n", request_id if well_formed else None)


async def _exchange(server: RawServer, batch: list[Frame], probe: dict[str, Any]) -> None:
    """Send the batch and a probe; the probe and every well-formed request get answers.

    Answers are read while the batch is still being sent: a client that only writes would
    deadlock with a server whose answers (tools/list is tens of KB) fill the stdout pipe."""
    waiting = {json.dumps(f.answer_id) for f in batch if f.answer_id is not None}
    waiting.add(json.dumps(probe["id"]))

    async def send_all() -> None:
        for frame in batch:
            await server.send(frame.data)
        await server.send_json(probe)

    with anyio.fail_after(20):
        async with anyio.create_task_group() as group:
            group.start_soon(send_all)
            while waiting:
                message = await server.read_message()
                if "result" in message or "error" in message:
                    waiting.discard(json.dumps(message.get("id")))
    probe_answer = next(m for m in reversed(server.seen) if m.get("id") == probe["id"])
    assert "result" in probe_answer, probe_answer


@asynccontextmanager
async def _connection(tmp_path: Path, era: str) -> AsyncIterator[RawServer]:
    """A server with a 2025 session (initialize) or a 2026-07-28 connection (a first enveloped
    request) open; it must still be alive, without a traceback, at the end."""
    async with raw_server(tmp_path) as server:
        with anyio.fail_after(30):
            if era == "2025":
                await server.initialize()
            else:
                answer = await server.call(modern("first", "tools/list"))
                assert "result" in answer, answer
        yield server
        assert server.process.returncode is None, "the server died"
        assert "Traceback" not in server.stderr()


def _probe(era: str) -> dict[str, Any]:
    probe_id = f"probe-{next(_counter)}"
    return request(probe_id, "ping") if era == "2025" else modern(probe_id, "tools/list")


@pytest.fixture
async def legacy_server(tmp_path: Path) -> AsyncIterator[RawServer]:
    async with _connection(tmp_path, "2025") as server:
        yield server


@pytest.fixture
async def modern_server(tmp_path: Path) -> AsyncIterator[RawServer]:
    async with _connection(tmp_path, "2026") as server:
        yield server


@settings(FUZZ, max_examples=300)
@given(batch=st.lists(frames(None), min_size=1, max_size=5))
async def test_a_2025_session_survives_any_frames_and_still_answers(
    legacy_server: RawServer, batch: list[Frame]
) -> None:
    await _exchange(legacy_server, batch, _probe("2025"))


@settings(FUZZ, max_examples=300)
@given(batch=st.lists(frames(MODERN_META), min_size=1, max_size=5))
async def test_a_2026_connection_survives_any_frames_and_still_answers(
    modern_server: RawServer, batch: list[Frame]
) -> None:
    await _exchange(modern_server, batch, _probe("2026"))


@pytest.mark.parametrize("era", ["2025", "2026"])
async def test_an_invalid_request_with_a_readable_id_gets_an_invalid_request_error_with_it(
    tmp_path: Path, era: str
) -> None:
    """JSON-RPC 2.0: a request whose id can be read gets an Invalid Request error, not silence
    (a client waiting on that id would wait forever)."""
    lines = [
        b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":5}\n',
        b'{"jsonrpc":"2.0","id":8,"method":"ping","params":[]}\n',
        b'{"jsonrpc":"2.0","id":"nine","method":"tools/list","params":"x"}\n',
        b'{"jsonrpc":"1.0","id":10,"method":"tools/list"}\n',
        b'{"jsonrpc":"2.0","id":11,"method":42}\n',
    ]
    async with _connection(tmp_path, era) as server:
        for line in lines:
            await server.send(line)
        # Frames are read in order: once the probe is answered, every line before it was handled.
        assert "result" in await server.call(_probe(era))
    codes = {m.get("id"): m["error"]["code"] for m in server.seen if "error" in m}
    assert codes == {7: -32600, 8: -32600, "nine": -32600, 10: -32600, 11: -32600}


@pytest.mark.parametrize("era", ["2025", "2026"])
async def test_unreadable_frames_get_an_error_with_id_null_and_bad_responses_get_nothing(
    tmp_path: Path, era: str
) -> None:
    lines = [
        b"{not json\n",  # -32700
        b"\xff\xfe\n",  # -32700
        b"[1, 2]\n",  # -32600, no id to read
        b'{"jsonrpc":"2.0","id":[1],"method":"ping","params":1}\n',  # -32600, unusable id
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":3}\n',  # -32600, no id
        b'{"jsonrpc":"2.0","id":"r1","result":5}\n',  # a malformed response: never answered
        b'{"jsonrpc":"2.0","id":"r2","error":"no"}\n',  # the same
        b"\n   \r\n",  # blank lines: skipped
    ]
    async with _connection(tmp_path, era) as server:
        before = len(server.seen)
        for line in lines:
            await server.send(line)
        probe = _probe(era)
        assert "result" in await server.call(probe)
    answers = server.seen[before:]
    assert [(m["id"], m["error"]["code"]) for m in answers[:-1]] == [
        (None, -32700),
        (None, -32700),
        (None, -32600),
        (None, -32600),
        (None, -32600),
    ]
    assert answers[-1]["id"] == probe["id"]


@pytest.mark.parametrize("era", ["2025", "2026"])
async def test_a_request_whose_id_is_neither_a_string_nor_an_integer_is_not_a_notification(
    tmp_path: Path, era: str
) -> None:
    """The SDK validates a frame with a method and an id it cannot take (a fraction, a number
    past a float's range, true, null) as a notification, so a request waiting on that id got
    nothing; JSON-RPC 2.0 asks for an Invalid Request error with id null."""
    ids = [b"1.5", b"1e999", b"true", b"null", b'{"n":1}']
    async with _connection(tmp_path, era) as server:
        before = len(server.seen)
        for raw in ids:
            await server.send(b'{"jsonrpc":"2.0","id":' + raw + b',"method":"ping"}\n')
        probe = _probe(era)
        assert "result" in await server.call(probe)
    answers = server.seen[before:]
    assert [(m["id"], m["error"]["code"]) for m in answers[:-1]] == [(None, -32600)] * len(ids)
    assert all("id must be a string or an integer" in m["error"]["message"] for m in answers[:-1])
    assert answers[-1]["id"] == probe["id"]
