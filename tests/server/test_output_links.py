"""Truncated output a client can reach: a truncated bash result carries a resource_link to
its whole output, which its session reads with resources/read and nobody else can, in both
protocol eras, in memory and over HTTP.

Over HTTP a 2026-07-28 call has no session: its link is bound to the caller's credentials (an
auth identity here: the SDK's token verifier with two users) and expires.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.shared.exceptions import MCPError

from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server import outputs
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.served import locked_settings

SEQ_ALLOWED = """
default_action = "by-safety"
[requires]
fs.read = ["{workspace}"]
fs.write = ["{workspace}"]
[[rules]]
permission = "bash"
pattern = { prefix = "seq " }
action = "allow"
"""
COMMAND = "seq 1 100000"
"""589 KB of output, past the 200 KB bash shows inline."""
MODES = ["auto", "legacy"]
TOKENS = {"alice-token": "alice", "bob-token": "bob"}


@asynccontextmanager
async def _served(settings: Settings) -> AsyncIterator[ToolbridgeServer]:
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=True)
    assert not loaded.errors, [p.render() for p in loaded.errors]
    async with open_runtime(settings, loaded) as runtime:
        yield ToolbridgeServer(
            runtime.bridge,
            on_session_end=runtime.end_session,
            sidecar_dir=runtime.sessions.sidecar_dir,
        )


def _settings(folder: Path) -> Settings:
    folder.mkdir()
    return locked_settings(folder, SEQ_ALLOWED)


def _link(result: types.CallToolResult) -> types.ResourceLink:
    assert result.meta is not None and result.meta["truncated"] is True, result.meta
    [link] = [c for c in result.content if isinstance(c, types.ResourceLink)]
    assert link.uri.startswith("toolbridge://output/") and link.mime_type == "text/plain"
    return link


def _whole(read: types.ReadResourceResult, uri: str) -> str:
    [contents] = read.contents
    assert isinstance(contents, types.TextResourceContents) and contents.uri == uri
    return contents.text


async def _refused(client: Client, uri: str) -> None:
    with pytest.raises(MCPError) as caught:
        await client.read_resource(uri, cache_mode="bypass")
    assert caught.value.code == types.INVALID_PARAMS
    assert caught.value.error.message == "Resource not found"
    assert caught.value.error.data == {"uri": uri}


@pytest.mark.parametrize("mode", MODES)
async def test_a_truncated_bash_result_links_its_whole_output_which_its_session_reads(
    tmp_path: Path, mode: str
) -> None:
    settings = _settings(tmp_path / "one")
    with anyio.fail_after(30):
        async with _served(settings) as server, Client(server.server, mode=mode) as client:
            result = await client.call_tool("bash", {"command": COMMAND})
            link = _link(result)
            read = await client.read_resource(link.uri)
            whole = _whole(read, link.uri)
            listed = await client.list_resources()
            await _refused(client, link.uri + "x")
            # Another server is another session (stdio: another process): not found.
            other_settings = _settings(tmp_path / "two")
            async with _served(other_settings) as other, Client(other.server, mode=mode) as peer:
                await _refused(peer, link.uri)
    assert whole.startswith("--- stdout ---\n1\n2\n") and "\n99999\n100000\n" in whole
    assert len(whole.encode()) == link.size
    assert [r.uri for r in listed.resources] == [link.uri]
    if mode == "auto":  # the 2026-07-28 caching hints: private, a read for 5 minutes
        assert (read.cache_scope, read.ttl_ms) == ("private", outputs.READ_TTL_MS)
        assert (listed.cache_scope, listed.ttl_ms) == ("private", 0)


@asynccontextmanager
async def _http(tmp_path: Path, **options: Any) -> AsyncIterator[str]:
    settings = locked_settings(tmp_path, SEQ_ALLOWED)
    async with _served(settings) as server, anyio.create_task_group() as tg:
        service = HttpService(server, HttpOptions(port=0, **options))
        url = await tg.start(service.serve)
        try:
            yield url
        finally:
            service.stop()


@asynccontextmanager
async def _client(url: str, mode: str, token: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient(headers=headers) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
            yield client


async def test_over_http_a_session_reads_its_links_another_session_does_not_and_they_end_with_it(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with _http(tmp_path) as url, _client(url, "legacy") as other:
            async with _client(url, "legacy") as owner:
                result = await owner.call_tool("bash", {"command": COMMAND})
                link = _link(result)
                assert "\n100000\n" in _whole(await owner.read_resource(link.uri), link.uri)
                await _refused(other, link.uri)
                assert (await other.list_resources()).resources == []
            assert result.meta is not None
            sidecar = anyio.Path(result.meta["output_path"])
            with anyio.fail_after(5):
                while await sidecar.exists():  # noqa: ASYNC110 - a session's end is not observable
                    await anyio.sleep(0.01)
            async with _client(url, "legacy") as later:
                await _refused(later, link.uri)


async def test_behind_the_bearer_token_a_2026_call_reads_its_own_link(tmp_path: Path) -> None:
    token = "a-long-random-bearer-token-0123456789"
    with anyio.fail_after(30):
        async with _http(tmp_path, token=token) as url, _client(url, "auto", token) as client:
            link = _link(await client.call_tool("bash", {"command": COMMAND}))
            assert "\n100000\n" in _whole(await client.read_resource(link.uri), link.uri)


class _Users:
    """The SDK's token verifier: two users, each with a token of their own."""

    async def verify_token(self, token: str) -> AccessToken | None:
        user = TOKENS.get(token)
        if user is None:
            return None
        return AccessToken(token=token, client_id=f"{user}-app", scopes=[], subject=user)


@asynccontextmanager
async def _authenticated(tmp_path: Path, *, stateless: bool) -> AsyncIterator[str]:
    """The ToolbridgeServer in the SDK's own app, which authenticates users (auth identity)."""
    settings = locked_settings(tmp_path, SEQ_ALLOWED)
    async with _served(settings) as server:
        app = server.server.streamable_http_app(
            stateless_http=stateless,
            auth=AuthSettings(
                issuer_url="https://auth.example.com",
                resource_server_url="http://127.0.0.1/mcp",
                validate_token_resource=False,
            ),
            token_verifier=_Users(),
        )
        config = uvicorn.Config(app, log_config=None, log_level="error")
        web = uvicorn.Server(config)
        listening = socket.create_server(("127.0.0.1", 0))  # accepts before uvicorn runs
        port = listening.getsockname()[1]
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: web.serve(sockets=[listening]))
                try:
                    yield f"http://127.0.0.1:{port}/mcp"
                finally:
                    web.should_exit = True
        finally:
            listening.close()


@pytest.mark.parametrize("era", ["2026", "stateless"])
async def test_without_a_session_a_link_is_bound_to_the_callers_identity_and_expires(
    tmp_path: Path, era: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    mode = "auto" if era == "2026" else "legacy"
    with anyio.fail_after(30):
        async with (
            _authenticated(tmp_path, stateless=era == "stateless") as url,
            _client(url, mode, "alice-token") as alice,
            _client(url, mode, "bob-token") as bob,
        ):
            link = _link(await alice.call_tool("bash", {"command": COMMAND}))
            assert "\n100000\n" in _whole(await alice.read_resource(link.uri), link.uri)
            await _refused(bob, link.uri)
            assert (await alice.list_resources()).resources == []  # nothing to list it under
            monkeypatch.setattr(outputs, "LINK_TTL_S", 0.0)
            result = await alice.call_tool("bash", {"command": COMMAND})
            expired = _link(result)
            await _refused(alice, expired.uri)
    assert result.meta is not None
    assert not await anyio.Path(result.meta["output_path"]).exists(), "its files go with the link"


async def test_only_a_file_in_the_callers_sidecar_folder_is_linked_for_a_protocol_with_links(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "sidecars"
    folder.mkdir()
    (folder / "bash-1.txt").write_text("whole\n")
    (tmp_path / "elsewhere.txt").write_text("not a sidecar\n")
    links = outputs.Outputs(lambda session_id: folder if session_id == "s" else None)

    async def link(path: Path, session_id: str = "s", version: str = "2025-11-25") -> Any:
        return await links.link(
            str(path),
            tool="bash",
            session_id=session_id,
            owner="session:",
            sessionless=False,
            protocol_version=version,
        )

    assert await link(folder / "bash-1.txt") is not None
    assert await link(folder / "bash-1.txt", version="2025-03-26") is None
    assert await link(folder / "bash-1.txt", session_id="another") is None
    assert await link(tmp_path / "elsewhere.txt") is None  # e.g. a recording's, under replay
    assert await link(folder / "gone.txt") is None
