"""End to end with an independent client: the MCP Inspector's headless CLI (pinned 2.12.0).

Installed by scripts/install-inspector into .ci/node/; skipped without node or without it.
The stdio run uses the config `mcp-toolbridge config` prints, so the snippet is what starts
the server; the HTTP run talks to uvicorn in this process with a bearer token.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_toolbridge.cli.main import main
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.inspector import require_inspector, run_inspector

pytestmark = pytest.mark.e2e

TOKEN = "inspector-e2e-token-0123456789"

require_inspector()


async def _inspect(home: Path, *argv: str) -> Any:
    done = await run_inspector(home, *argv)
    assert done.returncode == 0, done.error
    return done.result


async def test_the_inspector_lists_and_calls_over_stdio_from_the_printed_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "--client", "claude-desktop"]) == 0
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(capsys.readouterr().out, encoding="utf-8")
    target = ["--config", str(config), "--server", "toolbridge"]
    listed = await _inspect(tmp_path, *target, "--method", "tools/list")
    assert {"word_count", "slugify", "tool_search"} <= {t["name"] for t in listed["tools"]}
    called = await _inspect(
        tmp_path,
        *target,
        "--method",
        "tools/call",
        "--tool-name",
        "word_count",
        "--tool-args-json",
        json.dumps({"text": "one two"}),
    )
    assert called["structuredContent"] == {"words": 2, "lines": 1, "characters": 7}


async def test_the_inspectors_second_start_is_answered_from_the_start_up_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second stdio start from the same config answers the Inspector's initialize and
    tools/list from the start-up cache (cache/front.py) with what the first start answered;
    a call after the opening is the real server's."""
    assert main(["config", "--client", "claude-desktop"]) == 0
    config = tmp_path / "claude_desktop_config.json"
    config.write_text(capsys.readouterr().out, encoding="utf-8")
    target = ["--config", str(config), "--server", "toolbridge", "--method"]
    cold, warm = [await run_inspector(tmp_path, *target, "tools/list") for _ in range(2)]
    assert cold.returncode == warm.returncode == 0, (cold.error, warm.error)
    assert "from the start-up cache" not in cold.stderr
    assert "from the start-up cache" in warm.stderr
    assert warm.result == cold.result
    call = ["tools/call", "--tool-name", "slugify", "--tool-args-json", '{"text": "A b"}']
    called = await run_inspector(tmp_path, *target, *call)
    assert called.returncode == 0, called.error
    assert "from the start-up cache" in called.stderr
    assert called.result["structuredContent"] == {"result": {"ok": True, "slug": "a-b"}}


async def test_the_inspector_lists_and_calls_over_http_with_the_bearer_token(
    tmp_path: Path,
) -> None:
    settings = Settings(audit=False)
    loaded = load_catalog(settings, BUILTIN_SPECS)
    async with open_runtime(settings, loaded) as runtime, anyio.create_task_group() as tg:
        server = ToolbridgeServer(runtime.bridge, on_session_end=runtime.end_session)
        service = HttpService(server, HttpOptions(port=0, token=TOKEN))
        url = await tg.start(service.serve)
        auth = ["--transport", "http", "--header", f"Authorization: Bearer {TOKEN}"]
        try:
            listed = await _inspect(tmp_path, url, *auth, "--method", "tools/list")
            called = await _inspect(
                tmp_path,
                url,
                *auth,
                "--method",
                "tools/call",
                "--tool-name",
                "slugify",
                "--tool-args-json",
                json.dumps({"text": "Hello World"}),
            )
        finally:
            service.stop()
    assert "word_count" in {t["name"] for t in listed["tools"]}
    assert called["isError"] is False, called
    assert "hello-world" in json.dumps(called["structuredContent"])
