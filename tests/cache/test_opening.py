"""The opening kept in the start-up cache (cache/opening.py): which client lines an opening
holds and how they are matched, what a recording keeps, when its inputs still hold, and a
snapshot that the server answered otherwise is forgotten."""

from __future__ import annotations

import json
from pathlib import Path

import mcp_types as types

from mcp_toolbridge.cache import (
    CacheFolder,
    Handoff,
    Recorder,
    file_input,
    folder_inputs,
    real_input,
)
from mcp_toolbridge.cache.opening import (
    KIND,
    answer_line,
    message_key,
    read_snapshot,
    unchanged,
    with_id,
)
from mcp_toolbridge.server.stdio import _Seen

INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}


def _line(message: dict[str, object]) -> str:
    return json.dumps(message)


def test_a_line_is_matched_by_its_method_and_params_whatever_its_id_and_spacing() -> None:
    one = message_key(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT}))
    two = message_key(
        f'{{"params": {json.dumps(INIT, indent=2)}, "method": "initialize", "jsonrpc": "2.0", '
        '"id": "x"}'
    )
    assert one is not None and two is not None
    assert one[0] == two[0] and (one[1], two[1]) == (1, "x")
    other = dict(INIT, protocolVersion="2025-06-18")
    older = message_key(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": other}))
    assert older is not None and older[0] != one[0]
    ints = message_key(_line({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": 1}}))
    floats = message_key(_line({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"n": 1.0}}))
    assert ints is not None and floats is not None and ints[0] != floats[0]


def test_only_the_opening_s_own_messages_can_be_part_of_one() -> None:
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
    assert message_key(_line(call)) is None
    assert message_key("not json") is None
    assert message_key(_line({"jsonrpc": "2.0", "id": True, "method": "tools/list"})) is None
    assert (
        message_key(_line({"jsonrpc": "2.0", "id": 1, "method": "notifications/initialized"}))
        is None
    )
    assert message_key(_line({"jsonrpc": "2.0", "method": "tools/list"})) is None
    initialized: dict[str, object] = {"jsonrpc": "2.0", "id": None}
    initialized["method"] = "notifications/initialized"
    assert message_key(_line(initialized)) is None
    assert message_key(_line({"jsonrpc": "2.0", "method": "notifications/initialized"})) == (
        '{"jsonrpc":"2.0","method":"notifications/initialized"}',
        None,
    )


def test_an_answer_is_replayed_with_the_request_s_own_id() -> None:
    assert (
        answer_line('{"tools":[]}', 'a"b')
        == b'{"jsonrpc":"2.0","id":"a\\"b","result":{"tools":[]}}\n'
    )
    assert json.loads(with_id('{"jsonrpc":"2.0","id":7,"method":"tools/list"}', "p"))["id"] == "p"


def _recorded(tmp_path: Path) -> tuple[Recorder, CacheFolder]:
    folder = CacheFolder(tmp_path / "cache")
    return Recorder(folder, "opening-test.bin", [("entry", str(tmp_path / "x"), "-", None)]), folder


def _answer(request_id: object, result: str) -> str:
    return f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"result":{result}}}\n'


def test_a_recording_keeps_what_is_answered_as_it_is_answered(tmp_path: Path) -> None:
    recorder, folder = _recorded(tmp_path)
    recorder.read(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}))
    recorder.written(_answer(0, '{"protocolVersion":"2025-11-25"}'))
    first = read_snapshot(folder, "opening-test.bin")
    assert first is not None and len(first.openings) == 1 and len(first.openings[0]) == 1
    recorder.read(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    recorder.read(_line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    recorder.written(_answer(1, '{"tools":[]}'))
    recorder.read(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {}}))
    recorder.written('{"jsonrpc":"2.0","method":"notifications/progress","params":{}}\n')
    recorder.written(_answer(2, '{"content":[]}'))
    snapshot = read_snapshot(folder, "opening-test.bin")  # the longer opening replaced it
    assert snapshot is not None and len(snapshot.openings) == 1
    assert [result for _, result in snapshot.openings[0]] == [
        '{"protocolVersion":"2025-11-25"}',
        None,
        '{"tools":[]}',
    ]


def test_a_server_message_or_an_error_in_the_opening_keeps_nothing(tmp_path: Path) -> None:
    for written in (
        '{"jsonrpc":"2.0","method":"notifications/message","params":{}}\n',
        '{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"no"}}\n',
    ):
        recorder, folder = _recorded(tmp_path)
        recorder.read(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}))
        recorder.written(written)
        recorder.written(_answer(0, "{}"))
        recorder.save()
        assert read_snapshot(folder, "opening-test.bin") is None


def test_a_client_gone_before_an_answer_keeps_what_was_answered(tmp_path: Path) -> None:
    recorder, folder = _recorded(tmp_path)
    recorder.read(_line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}))
    recorder.written(_answer(0, "{}"))
    recorder.read(_line({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
    recorder.save()  # the end of the session, the list unanswered
    snapshot = read_snapshot(folder, "opening-test.bin")
    assert snapshot is not None and [r for _, r in snapshot.openings[0]] == ["{}"]


def test_inputs_hold_until_a_file_or_a_listing_changes(tmp_path: Path) -> None:
    root = tmp_path / "m"
    (root / "a").mkdir(parents=True)
    (root / "a" / "tools.json").write_text("{}", encoding="utf-8")
    inputs = [*folder_inputs([root]), file_input(tmp_path / "policy.toml")]
    assert unchanged(inputs)
    (root / "a" / "tools.json").write_text("{ }", encoding="utf-8")
    assert unchanged(inputs)  # not a file recorded by content here: the loaders' own records
    (root / "a" / "more.json").write_text("{}", encoding="utf-8")
    assert not unchanged(inputs)
    (root / "a" / "more.json").unlink()
    assert unchanged(inputs)
    (tmp_path / "policy.toml").write_text("", encoding="utf-8")
    assert not unchanged(inputs)
    policy = [file_input(tmp_path / "policy.toml")]
    (tmp_path / "policy.toml").write_text("# now", encoding="utf-8")
    assert not unchanged(policy)


def test_a_link_is_an_input_by_the_folder_it_names(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "one", target_is_directory=True)
    inputs = [real_input(link), real_input(tmp_path / "absent")]
    assert unchanged(inputs)
    link.unlink()
    link.symlink_to(tmp_path / "two", target_is_directory=True)
    assert not unchanged(inputs)
    link.unlink()
    link.symlink_to(tmp_path / "one", target_is_directory=True)
    assert unchanged(inputs)
    (tmp_path / "absent").symlink_to(tmp_path / "one", target_is_directory=True)
    assert not unchanged(inputs)
    (tmp_path / "one" / "a.json").write_text("{}", encoding="utf-8")
    (tmp_path / "one" / "b.json").write_text("{}", encoding="utf-8")
    (tmp_path / "two" / "tools.json").symlink_to(tmp_path / "one" / "a.json")
    listed = folder_inputs([tmp_path / "two"])
    assert unchanged(listed)
    (tmp_path / "two" / "tools.json").unlink()
    (tmp_path / "two" / "tools.json").symlink_to(tmp_path / "one" / "b.json")
    assert not unchanged(listed)  # the same names, a link leading elsewhere


def test_a_snapshot_the_server_answers_otherwise_is_forgotten(tmp_path: Path) -> None:
    folder = CacheFolder(tmp_path)
    folder.write("opening-x.bin", KIND, "anything")
    handoff = Handoff(tmp_path, "opening-x.bin")
    listing = '{"jsonrpc":"2.0","id":"toolbridge-opening-1","method":"tools/list"}'
    handoff.replayed = [(listing, "toolbridge-opening-1", '{"tools":[]}')]
    seen = _Seen(None, handoff)
    message = types.JSONRPCResponse(jsonrpc="2.0", id="toolbridge-opening-1", result={"tools": [1]})
    assert seen.answered_before(message, message.model_dump_json(by_alias=True) + "\n")
    assert not folder.path("opening-x.bin").exists()
    assert seen.list_changed  # a 2025 client is told to list again
    same = Handoff(tmp_path, "opening-y.bin", replayed=[("{}", "p", '{"tools":[]}')])
    folder.write("opening-y.bin", KIND, "anything")
    answer = types.JSONRPCResponse(jsonrpc="2.0", id="p", result={"tools": []})
    assert _Seen(None, same).answered_before(answer, answer.model_dump_json(by_alias=True))
    assert folder.path("opening-y.bin").exists()
    # A 2026-07-28 list (stateless): no notification reaches a client that has no listen
    # stream open yet, but the snapshot is forgotten all the same, so the next start is right.
    folder.write("opening-z.bin", KIND, "anything")
    meta = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}
    modern = json.dumps({"jsonrpc": "2.0", "id": "q", "method": "tools/list", "params": meta})
    later = Handoff(tmp_path, "opening-z.bin", replayed=[(modern, "q", '{"tools":[]}')])
    seen = _Seen(None, later)
    message = types.JSONRPCResponse(jsonrpc="2.0", id="q", result={"tools": [1]})
    assert seen.answered_before(message, message.model_dump_json(by_alias=True) + "\n")
    assert not folder.path("opening-z.bin").exists()
    assert not seen.list_changed


def test_the_end_of_stdin_keeps_the_opening_at_once_when_it_is_answered(tmp_path: Path) -> None:
    """A client that lists and leaves: kept before the server is stopped (the SDK's client
    kills the server's process group soon after closing its stdin)."""
    recorder, folder = _recorded(tmp_path)
    recorder.read(_line({"jsonrpc": "2.0", "id": 0, "method": "tools/list"}))
    recorder.close()
    assert read_snapshot(folder, "opening-test.bin") is None  # the list is not answered yet
    recorder.written(_answer(0, '{"tools":[]}'))
    snapshot = read_snapshot(folder, "opening-test.bin")
    assert snapshot is not None and [r for _, r in snapshot.openings[0]] == ['{"tools":[]}']
