"""replay DIR reads its recordings as data a stranger may have written: a file planted in DIR
(a FIFO, a link, another user's, a huge one) or a line that is not a frame stops the start
saying which, and a recorded result is served as a result and nothing more (red-team pass of
2026-11-29, 8th)."""

from __future__ import annotations

import json
import os
import pwd
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.bridge import recording
from mcp_toolbridge.bridge.recording import CALL, NO_RECORDING, RESULT, ReplayExecutor, match_key
from mcp_toolbridge.errors import ConfigError
from tests.support.manifests import agentcli_manifest, echo_tool

pytestmark = pytest.mark.e2e


def _catalog(tmp_path: Path) -> Path:
    agentcli_manifest(tmp_path / "tools", [echo_tool("echo")], {"echo": "print('{}')\n"})
    return tmp_path / "tools"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "TOOLBRIDGE_CACHE_DIR": str(tmp_path / "cache"),
    }


def _frames(
    arguments: dict[str, Any], result: Any, error: Any = None, *, tool: str = "echo", n: int = 1
) -> str:
    """One recorded call (number ``n``) of ``tool``, as serve --record writes it, with
    ``result`` and ``error`` as given (a stranger's recording sets what it likes)."""
    call = {"frame": CALL, "call_id": n, "tool": tool, "match": match_key(tool, arguments)}
    done = {"frame": RESULT, "call_id": n, "executed": True, "result": result, "error": error}
    return json.dumps(call) + "\n" + json.dumps(done) + "\n"


async def _replay(tmp_path: Path, record: Path) -> tuple[int, str]:
    """``mcp-toolbridge replay`` over ``record``, a real process given no client: the status
    and stderr of a start that fails (a start that succeeds waits on stdin, closed here)."""
    argv = [sys.executable, "-m", "mcp_toolbridge", "replay", str(record), str(_catalog(tmp_path))]
    with anyio.fail_after(30):  # a FIFO held the start forever
        done = await anyio.run_process(
            [*argv, "--no-audit"], input=b"", env=_env(tmp_path), check=False
        )
    return done.returncode, done.stderr.decode()


def _plant_fifo(path: Path) -> None:
    os.mkfifo(path)


def _plant_link(path: Path) -> None:
    other = path.parent.parent / "elsewhere.jsonl"
    other.write_text(_frames({"text": "x"}, {"ok": True, "value": {"from": "the link"}}))
    path.symlink_to(other)


def _plant_folder(path: Path) -> None:
    path.mkdir()


@pytest.mark.parametrize(
    ("plant", "said"),
    [
        (_plant_fifo, "is not a regular file"),
        (_plant_link, "a link is not followed"),
        (_plant_folder, "is not a regular file"),
    ],
    ids=["fifo", "link", "folder"],
)
async def test_a_file_planted_in_the_recording_folder_stops_replay_saying_which(
    tmp_path: Path, plant: Any, said: str
) -> None:
    """Before: a FIFO named ``x.jsonl`` held replay's start forever (read_text waits for a
    writer), a link was followed to any file the user may read."""
    record = tmp_path / "rec"
    record.mkdir()
    (record / "calls-1.jsonl").write_text(_frames({"text": "a"}, {"ok": True, "value": {}}))
    plant(record / "calls-2.jsonl")
    status, stderr = await _replay(tmp_path, record)
    assert status == 2
    assert f"replay: {record / 'calls-2.jsonl'}" in stderr and said in stderr
    assert "Traceback" not in stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="making a file of another user needs root")
async def test_another_users_file_in_the_recording_folder_stops_replay(tmp_path: Path) -> None:
    """A folder others may write (a shared ``/tmp/rec``): their file is not served as ours."""
    record = tmp_path / "rec"
    record.mkdir()
    planted = record / "calls-0.jsonl"
    planted.write_text(_frames({"text": "a"}, {"ok": True, "value": {"do": "rm -rf ~"}}))
    nobody = pwd.getpwnam("nobody")
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    status, stderr = await _replay(tmp_path, record)
    assert status == 2 and f"{planted} belongs to another user" in stderr


def test_recordings_larger_than_the_cap_in_all_are_refused_before_they_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replay keeps every recorded result in memory: past the cap, counted over every file of
    the folder, the file that passes it is refused whole (the cap lowered here, to keep the
    test small)."""
    record = tmp_path / "rec"
    record.mkdir()
    (record / "calls-1.jsonl").write_text(_frames({"text": "a"}, {"ok": True, "value": "x" * 3000}))
    (record / "calls-2.jsonl").write_text(_frames({"text": "b"}, {"ok": True, "value": "y" * 3000}))
    monkeypatch.setattr(recording, "MAX_RECORDING_BYTES", 4096)
    with pytest.raises(ConfigError, match=r"calls-2.jsonl has \d+ bytes, more than the \d+ left"):
        ReplayExecutor.load(record)
    monkeypatch.setattr(recording, "MAX_RECORDING_BYTES", 8192)
    assert len(ReplayExecutor.load(record)) == 2


@pytest.mark.parametrize(
    ("line", "said"),
    [
        (b"[" * 100_000, "RecursionError"),
        (b"\xff\xfe{}", "UnicodeDecodeError"),
        (b'{"frame": "CT_TOOL_CALL", ', "Expecting property name"),
    ],
    ids=["nested", "not-utf8", "cut"],
)
async def test_a_line_that_is_not_a_frame_stops_replay_naming_the_line(
    tmp_path: Path, line: bytes, said: str
) -> None:
    """Before: a line nested 100,000 deep or not UTF-8 ended replay with a traceback."""
    record = tmp_path / "rec"
    record.mkdir()
    good = _frames({"text": "a"}, {"ok": True, "value": {}}).encode()
    (record / "calls.jsonl").write_bytes(good + line + b"\n")
    status, stderr = await _replay(tmp_path, record)
    assert status == 2
    assert f"{record / 'calls.jsonl'}:3: not a JSON frame ({said}" in stderr
    assert "Traceback" not in stderr


async def test_a_result_of_the_wrong_shape_is_served_as_a_plain_result(tmp_path: Path) -> None:
    """Before: an ``error`` that is a string, not an object, ended replay's start with an
    AttributeError; a field of the wrong type (a list as ``text``) reached the wire. Each
    field is now taken only with its own type; a recorded ``output_path`` outside the
    session's sidecar folder links nothing (held)."""
    record = tmp_path / "rec"
    record.mkdir()
    wrong = {"ok": "yes", "value": {"v": 1}, "text": ["not", "text"], "exit_code": "0"}
    outside = {"ok": True, "value": {"v": 2}, "truncated": True, "output_path": "/etc/passwd"}
    (record / "calls.jsonl").write_text(  # a recording of a tool not served matches nothing
        _frames({"text": "string error"}, None, "boom")
        + _frames({"text": "wrong types"}, wrong, n=2)
        + _frames({"text": "outside"}, outside, n=3)
        + _frames({"text": "x"}, {"ok": True}, tool="not_served", n=4)
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_toolbridge", "replay", str(record), str(_catalog(tmp_path)), "--no-audit"],
        env=_env(tmp_path),
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            failed = await client.call_tool("echo", {"text": "string error"})
            typed = await client.call_tool("echo", {"text": "wrong types"})
            linked = await client.call_tool("echo", {"text": "outside"})
            unknown = await client.call_tool("echo", {"text": "x"})
    assert failed.is_error and "tool failed" in failed.content[0].text  # type: ignore[union-attr]
    assert typed.is_error  # "ok": "yes" is not true
    assert linked.structured_content == {"v": 2}
    assert not any(block.type == "resource_link" for block in linked.content)
    assert unknown.is_error and unknown.content[0].text == NO_RECORDING  # type: ignore[union-attr]


async def test_a_recording_folder_inside_a_grant_is_warned_about(tmp_path: Path) -> None:
    """Found by the same pass: inside the workspace a served tool read every recorded call and
    planted a recording of its own. The folder is now hidden and held in every sandbox
    (tests/sandbox/test_trust_recording.py); the start says so, and what the tools that run in
    the server still see; outside every grant it is silent."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    said = []
    for record in (workspace / "rec", tmp_path / "rec"):
        argv = [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit"]
        argv += ["--workspace", str(workspace), "--record", str(record), str(_catalog(tmp_path))]
        with anyio.fail_after(60):
            done = await anyio.run_process(argv, input=b"", env=_env(tmp_path), check=False)
        assert done.returncode == 0, done.stderr.decode()
        said.append(done.stderr.decode())
    inside, outside = said
    assert f"*** WARNING: --record {workspace / 'rec'} is inside {workspace}" in inside
    assert "hidden and read-only in every sandbox" in inside
    assert "record outside every grant" in inside
    assert "WARNING: --record" not in outside
