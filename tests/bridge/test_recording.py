"""serve --record DIR writes trace frames; replay DIR serves them back without running tools."""

from __future__ import annotations

import json
import logging
import os
import random
import string
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_toolbridge.bridge.recording import (
    CALL,
    NO_RECORDING,
    RESULT,
    Recorder,
    ReplayExecutor,
    canonical,
    match_key,
)
from mcp_toolbridge.host import LOCAL, CallContext, Caller
from mcp_toolbridge.leaks import SecretScanSettings
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from tests.support.manifests import FAIL, agentcli_manifest, echo_tool

pytestmark = pytest.mark.e2e
_rng = random.Random(26)
GITHUB = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(36))
"""A real-looking GitHub token, which the secret scan finds (rule ``github-pat``)."""

COUNTER = (
    "import json, os, sys\n"
    "args = json.load(sys.stdin)\n"
    "path = os.environ['COUNTER_FILE']\n"
    "n = int(open(path).read() or 0) + 1 if os.path.exists(path) else 1\n"
    "open(path, 'w').write(str(n))\n"
    "print(json.dumps({'count': n, 'text': args['text']}))\n"
)


def _catalog(tmp_path: Path) -> Path:
    counter = {
        **echo_tool("count", bin="counter"),
        "envPassthrough": ["COUNTER_FILE", "API_TOKEN"],
    }
    counter["schema"]["properties"]["api_key"] = {"type": "string"}
    agentcli_manifest(
        tmp_path / "tools",
        [counter, echo_tool("fails", bin="fail")],
        {"counter": COUNTER, "fail": FAIL},
    )
    return tmp_path / "tools"


def _server(tmp_path: Path, *args: str) -> StdioServerParameters:
    """The server over ``tmp_path``, its workspace (where the counter tool writes)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "COUNTER_FILE": str(tmp_path / "counter"),
        "API_TOKEN": "env-value-never-recorded",
    }
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_toolbridge", *args], env=env
    )


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("count", {"text": "one", "api_key": "sk-live-abcdef"}),
    ("count", {"text": "one", "api_key": "sk-live-abcdef"}),
    ("count", {"text": "two"}),
    ("fails", {"text": "x"}),
    ("count", {"text": 5}),
    ("count", {"text": f"push with {GITHUB}"}),
]


def _comparable(result: Any) -> dict[str, Any]:
    data: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    data.get("_meta", {}).pop("duration_ms", None)
    return data


async def _session(params: StdioServerParameters) -> list[dict[str, Any]]:
    results = []
    async with Client(params) as client:
        for name, arguments in CALLS:
            results.append(_comparable(await client.call_tool(name, arguments)))
    return results


async def test_a_recorded_session_replays_byte_for_byte_without_running_the_tools(
    tmp_path: Path,
) -> None:
    catalog = str(_catalog(tmp_path))
    record = tmp_path / "rec"
    with anyio.fail_after(60):
        recorded = await _session(
            _server(
                tmp_path,
                *("serve", "--no-audit", "--workspace", str(tmp_path)),
                *("--record", str(record), catalog),
            )
        )
        assert [r["structuredContent"].get("count") for r in recorded[:3]] == [1, 2, 3]
        assert recorded[3]["isError"] is True and recorded[4]["isError"] is True
        assert recorded[5]["structuredContent"]["text"] == "push with [REDACTED:github-pat]"
        replayed = await _session(_server(tmp_path, "replay", str(record), catalog, "--no-audit"))
    assert [json.dumps(r, sort_keys=True) for r in replayed] == [
        json.dumps(r, sort_keys=True) for r in recorded
    ]
    assert (tmp_path / "counter").read_text() == "4"  # replay ran nothing
    (path,) = record.glob("*.jsonl")
    assert GITHUB not in path.read_text(encoding="utf-8")


async def test_frames_carry_ids_schema_refs_and_timing_but_no_secret_values(
    tmp_path: Path,
) -> None:
    catalog = _catalog(tmp_path)
    record = tmp_path / "rec"
    settings = Settings(
        paths=[catalog],
        audit=False,
        environ={**os.environ, "COUNTER_FILE": str(tmp_path / "c"), "API_TOKEN": "env-secret"},
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    recorder = Recorder.open(record)
    try:
        async with open_bridge(settings, loaded, observers=(recorder,)) as bridge:
            await bridge.call("count", {"text": "a", "api_key": "sk-live-abcdef"})
            await bridge.call("count", {"text": 7})
    finally:
        recorder.close()
    (path,) = record.glob("*.jsonl")
    text = path.read_text(encoding="utf-8")
    assert "sk-live-abcdef" not in text and "env-secret" not in text
    frames = [json.loads(line) for line in text.splitlines()]
    assert [f["frame"] for f in frames] == [CALL, RESULT, CALL, RESULT]
    call, result, _, refused = frames
    assert call["call_id"] == result["call_id"]
    assert call["tool"] == "count" and call["tool_id"] == "count"
    assert {"input_schema_ref", "output_schema_ref", "ts", "session"} <= set(call)
    assert call["arguments"] == {"text": "a", "api_key": "***"}
    assert result["executed"] is True and result["outcome"] == "ok"
    assert result["result"]["value"] == {"count": 1, "text": "a"}
    assert result["result"]["env_keys"] == [
        "API_TOKEN",
        "COUNTER_FILE",
        "HOME",
        "PATH",
        "TOOLBRIDGE_PROGRESS_FD",
    ]
    assert isinstance(result["duration_ms"], int)
    assert refused["executed"] is False and refused["result"] is None
    assert path.stat().st_mode & 0o777 == 0o600


async def test_a_call_with_no_recording_is_an_error_result_and_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "rec").mkdir()
    settings = Settings(paths=[_catalog(tmp_path)], audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    replay = ReplayExecutor.load(tmp_path / "rec")
    with caplog.at_level(logging.WARNING, logger="mcp_toolbridge"):
        async with open_bridge(settings, loaded, stand_in=replay) as bridge:
            outcome = await bridge.call("count", {"text": "never recorded"})
            invalid = await bridge.call("count", {"text": 1})
    assert outcome.ok is False and outcome.error == NO_RECORDING
    # the caller (a model, a person at the Inspector) is told nothing ran, and how to record it
    assert outcome.error.startswith("no recording for this call: nothing was run")
    assert outcome.error.endswith("record this one with serve --record DIR)")
    assert invalid.error is not None and invalid.error.startswith("invalid arguments")
    assert f"{NO_RECORDING} for count {canonical({'text': 'never recorded'})}" in caplog.text


async def test_a_secret_in_a_calls_arguments_is_recorded_as_its_marker_and_still_replays(
    tmp_path: Path,
) -> None:
    catalog = _catalog(tmp_path)
    record = tmp_path / "rec"
    counter = tmp_path / "c"
    settings = Settings(
        paths=[catalog],
        audit=False,
        workspace=tmp_path,  # where the counter tool may write
        environ={**os.environ, "COUNTER_FILE": str(counter)},
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    recorder = Recorder.open(record)
    secret_call = {"text": f"remote https://x:{GITHUB}@github.com/acme/w.git"}
    plain_call = {"text": "no secret here"}
    try:
        async with open_bridge(settings, loaded, observers=(recorder,)) as bridge:
            first = await bridge.call("count", secret_call)
            second = await bridge.call("count", plain_call)
    finally:
        recorder.close()
    (path,) = record.glob("*.jsonl")
    text = path.read_text(encoding="utf-8")
    assert GITHUB not in text
    call, result, plain, _ = (json.loads(line) for line in text.splitlines())
    redacted = "remote https://x:[REDACTED:github-pat]@github.com/acme/w.git"
    assert call["arguments"] == {"text": redacted}
    assert call["match"] == match_key("count", {"text": redacted})
    assert result["result"]["value"] == {"count": 1, "text": redacted}
    assert plain["arguments"] == plain_call
    assert plain["match"] == match_key("count", plain_call)
    assert counter.read_text() == "2"

    replay = ReplayExecutor.load(record)
    replay.redact_as(SecretScanSettings())
    async with open_bridge(settings, loaded, stand_in=replay) as bridge:
        again = await bridge.call("count", plain_call)
        secret_again = await bridge.call("count", secret_call)
    assert again.ok and again.value == second.value == {"count": 2, "text": "no secret here"}
    assert secret_again.ok and secret_again.value == first.value
    assert first.value == {"count": 1, "text": redacted}
    assert counter.read_text() == "2"  # replay ran nothing


async def test_frames_name_who_called_and_replay_serves_any_caller(tmp_path: Path) -> None:
    """The CALL frame names the caller as the audit line does (subject, client id; null for
    the local caller), never the token; the match ignores who called, so a call alice
    recorded replays for bob and for the local caller alike."""
    catalog = _catalog(tmp_path)
    record = tmp_path / "rec"
    settings = Settings(
        paths=[catalog],
        audit=False,
        workspace=tmp_path,
        environ={**os.environ, "COUNTER_FILE": str(tmp_path / "c")},
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    alice = Caller(subject="alice", client_id="alices-ide", issuer="https://id.example")
    bob = Caller(subject="bob", client_id="ci-agent", issuer="https://id.example")
    recorder = Recorder.open(record)
    try:
        async with open_bridge(settings, loaded, observers=(recorder,)) as bridge:
            by_alice = await bridge.call("count", {"text": "hers"}, CallContext(caller=alice))
            locally = await bridge.call("count", {"text": "mine"}, CallContext(caller=LOCAL))
    finally:
        recorder.close()
    (path,) = record.glob("*.jsonl")
    written = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(f["frame"], f.get("subject"), f.get("client_id")) for f in written] == [
        (CALL, "alice", "alices-ide"),
        (RESULT, None, None),
        (CALL, None, None),
        (RESULT, None, None),
    ]
    assert written[0]["match"] == match_key("count", {"text": "hers"})

    replay = ReplayExecutor.load(record)
    async with open_bridge(settings, loaded, stand_in=replay) as bridge:
        for_bob = await bridge.call("count", {"text": "hers"}, CallContext(caller=bob))
        for_nobody = await bridge.call("count", {"text": "hers"})
        mine_for_alice = await bridge.call("count", {"text": "mine"}, CallContext(caller=alice))
    assert by_alice.value == for_bob.value == for_nobody.value == {"count": 1, "text": "hers"}
    assert locally.value == mine_for_alice.value == {"count": 2, "text": "mine"}
    assert (tmp_path / "c").read_text() == "2"  # replay ran nothing
