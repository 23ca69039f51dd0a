"""The live channel through the SDK's client: a running tool's stderr lines and its progress
channel reach the client during the call, at the level the client asked for, with secrets
redacted; in memory in both eras, over real stdio and over HTTP.

The tool blocks on a FIFO until the client has heard its token line, so a line that were sent
only with the result would never release it: the call would hang until ``fail_after``."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_toolbridge.runtime import Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import write_script

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")  # setLevel

SECRET = "s3cr3t-live-token-value"
SECRET_ENV = {"TOOLBRIDGE_SECRET_DEMO_TOKEN": SECRET}
REDACTED = "[redacted:demo/token]"
TOOL_NAME = "live_report"

TOOL = """
import json, os, sys
with open(sys.argv[1], encoding="utf-8") as payload:
    args = json.load(payload)
channel = os.fdopen(int(os.environ["TOOLBRIDGE_PROGRESS_FD"]), "w")
def report(**line):
    channel.write(json.dumps(line) + "\\n")
    channel.flush()
print("starting", file=sys.stderr, flush=True)
report(progress=1, total=3, message="one")
report(log="disk almost full", level="warning")
print("token " + os.environ["DEMO_TOKEN"], file=sys.stderr, flush=True)
report(progress=2, total=3)
if args.get("release"):
    with open(args["release"], encoding="utf-8") as fifo:  # until the client heard the token
        fifo.read()
report(progress=3, total=3, message="done with " + os.environ["DEMO_TOKEN"])
print("done", file=sys.stderr, flush=True)
print(json.dumps({"finished": True}))
"""

POLICY = 'default_action = "allow"\n'


def _manifest(folder: Path) -> Path:
    script = write_script(folder / "live.py", TOOL)
    tool = {
        "id": "live.report",
        "description": "Reports while it runs",
        "transport": {"kind": "exec", "command": str(script), "progress": True},
        "input_schema": {"type": "object", "properties": {"release": {"type": "string"}}},
        "result_schema": {"type": "object"},
        "secrets": ["demo/token"],
    }
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": [tool]}), "utf-8")
    return folder


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    """The manifest folder and the policy file."""
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return _manifest(tmp_path / "m"), policy


def _fifo(tmp_path: Path) -> tuple[Path, Callable[[], None]]:
    path = tmp_path / "release"
    os.mkfifo(path)

    def release() -> None:
        with open(path, "w", encoding="utf-8") as fifo:
            fifo.write("go\n")

    return path, release


class Heard:
    """The client's logging and progress callbacks; releases the tool once it has heard the
    token line."""

    def __init__(self, release: Callable[[], None] | None = None) -> None:
        self.logs: list[tuple[str, str | None, Any]] = []
        self.progress: list[tuple[float, float | None, str | None]] = []
        self._release = release

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.logger, params.data))
        if self._release is not None and str(params.data).startswith("token "):
            release, self._release = self._release, None
            await anyio.to_thread.run_sync(release)

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progress.append((progress, total, message))


def _check_heard_everything(heard: Heard, result: types.CallToolResult) -> None:
    assert result.is_error is False, result
    assert result.structured_content == {"finished": True}
    # stderr (info) and the progress channel are two pipes: in order each, not between them
    assert [text for level, _, text in heard.logs if level == "info"] == [
        "starting",
        f"token {REDACTED}",
        "done",
    ]
    assert [text for level, _, text in heard.logs if level != "info"] == ["disk almost full"]
    assert {logger for _, logger, _ in heard.logs} == {TOOL_NAME}
    assert heard.progress == [(1, 3, "one"), (2, 3, None), (3, 3, f"done with {REDACTED}")]
    assert SECRET not in repr(heard.logs) + repr(heard.progress) + repr(result)


@asynccontextmanager
async def _in_memory(
    tmp_path: Path, heard: Heard, mode: str, log_level: str | None
) -> AsyncIterator[Client]:
    folder, policy = _setup(tmp_path)
    settings = Settings(
        paths=[folder], workspace=tmp_path, policy_file=policy, audit=False, environ=SECRET_ENV
    )
    loaded = load_catalog(settings, locked=True)
    assert not loaded.errors, loaded.errors
    async with open_runtime(settings, loaded) as runtime:
        server = ToolbridgeServer(runtime.bridge)
        async with Client(
            server.server,
            mode=mode,
            raise_exceptions=True,
            logging_callback=heard.on_log,
            log_level=log_level,  # type: ignore[arg-type]
        ) as client:
            yield client


async def _call(client: Client, heard: Heard, release: Path | None) -> types.CallToolResult:
    arguments = {"release": str(release)} if release else {}
    with anyio.fail_after(20):
        return await client.call_tool(TOOL_NAME, arguments, progress_callback=heard.on_progress)


async def test_a_2025_client_hears_the_tool_during_the_call_at_the_level_it_set(
    tmp_path: Path,
) -> None:
    fifo, release = _fifo(tmp_path)
    heard = Heard(release)
    async with _in_memory(tmp_path, heard, "legacy", None) as client:
        assert client.server_capabilities is not None
        assert client.server_capabilities.logging is not None
        await client.set_logging_level("info")
        result = await _call(client, heard, fifo)
    _check_heard_everything(heard, result)


async def test_a_2025_client_that_set_no_level_hears_warnings_only(tmp_path: Path) -> None:
    heard = Heard()
    async with _in_memory(tmp_path, heard, "legacy", None) as client:
        result = await _call(client, heard, None)
        assert heard.logs == [("warning", TOOL_NAME, "disk almost full")]  # default: warning
        await client.set_logging_level("error")
        again = await _call(client, heard, None)
    assert result.is_error is False and again.is_error is False
    assert heard.logs == [("warning", TOOL_NAME, "disk almost full")]  # nothing new at error


async def test_a_2026_request_hears_the_tool_at_the_level_it_opted_in_to(tmp_path: Path) -> None:
    fifo, release = _fifo(tmp_path)
    heard = Heard(release)
    async with _in_memory(tmp_path, heard, "auto", "info") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities is not None
        assert client.server_capabilities.logging is None  # no setLevel: a per-request opt-in
        result = await _call(client, heard, fifo)
    _check_heard_everything(heard, result)


@pytest.mark.parametrize("level", [None, "error"])
async def test_a_2026_request_that_did_not_opt_in_hears_nothing(
    tmp_path: Path, level: str | None
) -> None:
    heard = Heard()
    async with _in_memory(tmp_path, heard, "auto", level) as client:
        result = await _call(client, heard, None)
    assert result.is_error is False
    assert heard.logs == []
    assert [p for p, _, _ in heard.progress] == [1, 2, 3]


def _stdio(folder: Path, policy: Path, tmp_path: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "mcp_toolbridge", "serve", str(folder), "--no-audit"),
            *("--policy", str(policy), "--workspace", str(tmp_path)),
        ],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), **SECRET_ENV},
    )


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_stdio_the_tool_is_heard_during_the_call(tmp_path: Path, mode: str) -> None:
    folder, policy = _setup(tmp_path)
    fifo, release = _fifo(tmp_path)
    heard = Heard(release)
    with anyio.fail_after(30):
        async with Client(
            _stdio(folder, policy, tmp_path),
            mode=mode,
            logging_callback=heard.on_log,
            log_level="info",
        ) as client:
            if mode == "legacy":
                await client.set_logging_level("info")
            result = await _call(client, heard, fifo)
    _check_heard_everything(heard, result)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_http_the_tool_is_heard_on_the_call_stream(tmp_path: Path, mode: str) -> None:
    folder, policy = _setup(tmp_path)
    fifo, release = _fifo(tmp_path)
    heard = Heard(release)
    settings = Settings(
        paths=[folder], workspace=tmp_path, policy_file=policy, audit=False, environ=SECRET_ENV
    )
    loaded = load_catalog(settings, locked=True)
    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as tg:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0))
        url = await tg.start(service.serve)
        try:
            with anyio.fail_after(30):
                async with (
                    httpx2.AsyncClient() as http,
                    Client(
                        streamable_http_client(url, http_client=http),
                        mode=mode,
                        logging_callback=heard.on_log,
                        log_level="info",
                    ) as client,
                ):
                    if mode == "legacy":
                        await client.set_logging_level("info")
                    result = await _call(client, heard, fifo)
        finally:
            service.stop()
    _check_heard_everything(heard, result)
