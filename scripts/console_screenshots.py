"""The screenshots of docs/console.md, taken in Debian's Chromium through Playwright: run by
``scripts/console-screenshots`` (nothing is downloaded; install chromium with apt-get).

The console runs beside the bundled example catalog and the locked tools (in a temporary
workspace), a headless SDK client makes a few calls over streamable HTTP (one of them waits
for an answer), and each page is captured at 1100x720 into docs/console/; then, when the
OpenID provider the tests run is installed (scripts/install-oidc), the sign-in page of the
console at the path of a server that an authorization server protects."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import Page, ViewportSize, async_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcp_toolbridge.console import Console, ConsoleOptions
from mcp_toolbridge.runtime import Settings, load_catalog, open_runtime
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.browser import CHROMIUM, FLAGS
from tests.support.oidc import oidc_provider, oidc_skip_reason

OUT = ROOT / "docs" / "console"
SIZE: ViewportSize = {"width": 1100, "height": 720}


async def _calls(url: str, waiting: list[Any]) -> None:
    async with (
        httpx2.AsyncClient(timeout=120) as http,
        Client(streamable_http_client(url, http_client=http), mode="legacy") as client,
    ):
        await client.call_tool("word_count", {"text": "one two three"})
        await client.call_tool("slugify", {"text": "A console a person would rather look at"})
        await client.call_tool("get_time", {"timezone": "Europe/Helsinki"})
        await client.call_tool("hash_text", {"text": "x", "algorithm": "nope"})
        await client.call_tool("tool_search", {"query": "count words"})
        waiting.append(
            await client.call_tool(
                "write",
                {"file_path": "notes/todo.md", "content": "- ship the console\n"},
            )
        )


async def _shot(page: Page, name: str) -> None:
    await page.screenshot(path=str(OUT / f"{name}.png"))
    print(f"docs/console/{name}.png")


async def _sign_in_page(browser: Any, workdir: Path) -> None:
    """The console's sign-in page, with a console client at a real OpenID provider."""
    from tests.console.test_login import console_with_login

    if (why := oidc_skip_reason()) is not None:
        print(f"docs/console/sign-in.png not taken: {why}")
        return
    (workdir / "oidc").mkdir(parents=True)
    async with (
        oidc_provider(workdir / "oidc") as provider,
        console_with_login(workdir, provider) as (_, _console, base),
    ):
        page = await browser.new_page(viewport={"width": 1100, "height": 420})
        await page.goto(base + "/")
        await _shot(page, "sign-in")


async def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        workspace = Path(tmp)
        settings = Settings(workspace=workspace, audit_path=workspace / "audit.ndjson")
        loaded = load_catalog(settings, locked=True)
        console = Console(ConsoleOptions(port=0))
        async with open_runtime(settings, loaded, observers=(console.feed.observe,)) as runtime:
            server = ToolbridgeServer(
                runtime.bridge, on_session_end=runtime.end_session, console=console.host
            )
            console.attach(runtime, connections=server.connected, local_session=server.session_id)
            service = HttpService(server, HttpOptions(port=0))
            async with anyio.create_task_group() as group, async_playwright() as driver:
                await group.start(console.serve)
                url = await group.start(service.serve)
                browser = await driver.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                page = await browser.new_page(viewport=SIZE)
                await page.goto(console.url)
                answered: list[Any] = []
                group.start_soon(_calls, url, answered)
                card = page.locator(".card")
                await card.wait_for(timeout=60_000)
                await _shot(page, "approvals")
                await card.get_by_role("button", name="Allow once").click()
                await page.get_by_text("Nothing is waiting").wait_for()
                base = console.url.split("/?", 1)[0]
                await page.goto(base + "/timeline")
                await _shot(page, "timeline")
                await page.goto(base + "/catalog")
                await _shot(page, "catalog")
                await page.goto(base + "/search?q=count+the+words+in+a+text")
                await _shot(page, "search")
                async with (
                    httpx2.AsyncClient() as http,
                    Client(streamable_http_client(url, http_client=http), mode="legacy") as other,
                ):
                    await other.list_tools()
                    await page.goto(base + "/sessions")
                    await _shot(page, "sessions")
                await _sign_in_page(browser, workspace / "signin")
                await browser.close()
                service.stop()
                console.stop()


if __name__ == "__main__":
    anyio.run(main)
