"""Error results every client can show: the message as text, no structuredContent that could
break the tool's outputSchema, the error code (and the tool's own failure value) in _meta.

Through the SDK's client in both protocol eras; the SDK client, like the TypeScript one,
checks structuredContent against the outputSchema and raises when it does not match."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_toolbridge.bridge import Bridge
from mcp_toolbridge.executors import ExecRequest, ExecResult
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_bridge
from mcp_toolbridge.server.toolbridge_server import INTERNAL_ERROR, ToolbridgeServer
from tests.support.results import text_of
from tests.support.schema_tools import FAILURES, Failure, write_catalog, write_policy

MODES = ["auto", "legacy"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def client(mode: str, tmp_path: Path) -> AsyncIterator[Client]:
    folder = write_catalog(tmp_path / "m", agentpm_timeout_ms=3000)
    settings = Settings(
        paths=[folder], policy_file=write_policy(tmp_path / "policy.toml"), audit=False
    )
    loaded = load_catalog(settings, BUILTIN_SPECS)
    assert not loaded.problems, [p.render() for p in loaded.problems]
    async with open_bridge(settings, loaded) as bridge:
        server = ToolbridgeServer(bridge)
        async with Client(server.server, mode=mode, raise_exceptions=True) as c:
            yield c


async def test_the_tools_with_output_schemas_publish_them(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert all(tools[name].output_schema for name in ("rl_echo", "rl_fail", "apm-slug"))


@pytest.mark.parametrize("failure", FAILURES, ids=lambda f: f"{f.tool}-{f.code}")
async def test_a_failure_is_text_with_its_code_in_meta_and_no_structured_content(
    client: Client, failure: Failure
) -> None:
    with anyio.fail_after(20):
        result = await client.call_tool(failure.tool, failure.arguments)
    assert result.is_error is True
    assert result.structured_content is None
    assert failure.says in text_of(result)
    assert result.meta is not None
    assert result.meta["toolbridge/code"] == failure.code
    assert result.meta.get("toolbridge/details") == failure.details


async def test_successes_of_the_same_tools_still_carry_structured_content(
    client: Client, mode: str
) -> None:
    echoed = await client.call_tool("rl_echo", {"message": "hi"})
    slug = await client.call_tool("apm-slug", {"text": "Hello"})
    assert echoed.is_error is False and echoed.structured_content == {"message": "hi"}
    value = {"ok": True, "slug": "hello"}
    # The 2025 era needs an object root: a oneOf output schema is published wrapped.
    expected = value if mode == "auto" else {"result": value}
    assert slug.is_error is False and slug.structured_content == expected


class Exploding:
    """An executor with a bug: what the server's last line of defence is for."""

    async def run(self, request: ExecRequest) -> ExecResult:
        raise RuntimeError("secret internals: /private/path")


async def test_a_bug_in_the_server_is_a_fixed_message_with_no_traceback(
    tmp_path: Path, mode: str
) -> None:
    folder = write_catalog(tmp_path / "m")
    loaded = load_catalog(Settings(paths=[folder], audit=False), BUILTIN_SPECS)
    server = ToolbridgeServer(Bridge(loaded.catalog, {"exec": Exploding()}))
    async with Client(server.server, mode=mode, raise_exceptions=True) as client:
        result = await client.call_tool("rl_echo", {"message": "hi"})
    assert result.is_error is True and result.structured_content is None
    assert text_of(result) == INTERNAL_ERROR
    assert result.meta is not None and result.meta["toolbridge/code"] == "server.internal"
