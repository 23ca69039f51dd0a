"""The console beside a real server: the runtime, the MCP server over streamable HTTP and the
console, composed as ``serve --http --console`` composes them, in this process on
127.0.0.1 with free ports; and :class:`Person`, a browser-less person using the console over
real HTTP (its cookie, its CSRF token, its forms)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge.console import Console, ConsoleOptions
from mcp_toolbridge.runtime import BUILTIN_SPECS, Settings, load_catalog, open_runtime
from mcp_toolbridge.server import IssuerLogin
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.http import HttpService
from mcp_toolbridge.server.http_options import HttpOptions
from mcp_toolbridge.server.toolbridge_server import ToolbridgeServer
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import AGENT, AGENT_SECRET
from tests.support.oidc import Provider, oidc_provider

NOTE = "import json, sys\nprint(json.dumps({'noted': json.load(sys.stdin)['text']}))\n"


def catalog(tmp_path: Path) -> Path:
    """``echo`` (declared harmless: allowed) and ``note`` (declares nothing: destructive by
    default, so the default policy asks first)."""
    note = echo_tool("note", bin="note")
    note.pop("annotations")
    note["description"] = "Write a note"
    agentcli_manifest(tmp_path / "tools", [echo_tool("echo"), note], {"echo": ECHO, "note": NOTE})
    return tmp_path / "tools"


@dataclass
class Stack:
    url: str
    """The MCP endpoint."""
    console: Console
    audit: Path


@asynccontextmanager
async def serving(
    tmp_path: Path,
    *,
    stateless: bool = False,
    timeout_s: float = 60.0,
    locked: tuple[str, ...] = (),
    catalog_of: Callable[[Path], Path] = catalog,
) -> AsyncIterator[Stack]:
    """``locked``: serve these locked tools too (none by default: tool_search alone);
    ``catalog_of(tmp_path)``: the manifests' folder (default :func:`catalog`)."""
    audit = tmp_path / "audit.ndjson"
    settings = Settings(
        paths=[catalog_of(tmp_path)], audit_path=audit, timeout_s=timeout_s, locked=locked
    )
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=bool(locked))
    console = Console(ConsoleOptions(port=0))
    async with open_runtime(settings, loaded, observers=(console.feed.observe,)) as runtime:
        server = ToolbridgeServer(
            runtime.bridge, on_session_end=runtime.end_session, console=console.host
        )
        console.attach(runtime, connections=server.connected, local_session=server.session_id)
        service = HttpService(server, HttpOptions(port=0, stateless=stateless))
        async with anyio.create_task_group() as group:
            await group.start(console.serve)
            url = await group.start(service.serve)
            try:
                yield Stack(url, console, audit)
            finally:
                service.stop()
                console.stop()


@asynccontextmanager
async def mounted_serving(
    tmp_path: Path,
    *,
    token: str | None = None,
    auth: AuthOptions | None = None,
    locked: tuple[str, ...] = (),
) -> AsyncIterator[tuple[str, Console]]:
    """``serve --http --console`` in this process, stateless: the MCP endpoint's URL and the
    console, also at ``/console`` of the server (behind ``token`` or the issuer of ``auth``);
    ``locked``: serve these locked tools too."""
    settings = Settings(
        paths=[catalog(tmp_path)], audit_path=tmp_path / "audit.ndjson", locked=locked
    )
    loaded = load_catalog(settings, BUILTIN_SPECS, locked=bool(locked))
    console = Console(ConsoleOptions(port=0))
    async with open_runtime(settings, loaded, observers=(console.feed.observe,)) as runtime:
        server = ToolbridgeServer(runtime.bridge, console=console.host)
        console.attach(runtime, connections=server.connected, local_session=server.session_id)

        def mount(port: int, issuer: IssuerLogin | None) -> Any:
            return console.mounted("/console", port=port, hosts=(), token=token, issuer=issuer)

        options = HttpOptions(port=0, token=token, auth=auth, stateless=True)
        service = HttpService(server, options, console=mount)
        async with anyio.create_task_group() as group:
            await group.start(console.serve)
            url = await group.start(service.serve)
            await console.open_mounted()  # its first one-time URL, as serve prints it
            try:
                yield url, console
            finally:
                service.stop()
                console.stop()


_FORM = re.compile(r'action="(?P<action>[^"]*/answer/(?P<id>[^"]+))"')
_CSRF = re.compile(r'name="csrf" (?:value|content)="(?P<csrf>[0-9a-f]+)"')


class Person:
    """Someone at the console: logged in with the URL's one-time token (the one not yet
    spent: a Console gives the next once one is), answering with its forms."""

    def __init__(self, http: httpx2.AsyncClient, base: str) -> None:
        self.http = http
        self.base = base

    @classmethod
    @asynccontextmanager
    async def at(cls, console: Console) -> AsyncIterator[Person]:
        async with httpx2.AsyncClient(timeout=30) as http:
            first = await http.get(console.url)
            assert first.status_code == 303, first.text
            base = console.url.split("/?", 1)[0]
            yield cls(http, base)

    async def page(self, path: str = "/", **params: Any) -> str:
        response = await self.http.get(self.base + path, params=params)
        assert response.status_code == 200, response.text
        return response.text

    async def waiting(self, count: int = 1) -> list[str]:
        """The ids of the calls waiting, once ``count`` of them wait (the page's own event
        stream says when the desk changes)."""
        with anyio.fail_after(60):  # a first call may warm the secret scan up first
            async with self.http.stream("GET", self.base + "/events") as events:
                ids = _FORM.findall(await self.page())
                if len(ids) >= count:
                    return [i for _, i in ids]
                async for line in events.aiter_lines():
                    if line.startswith("event: desk"):
                        ids = _FORM.findall(await self.page())
                        if len(ids) >= count:
                            return [i for _, i in ids]
        raise AssertionError("the event stream ended")

    async def answer(self, waiting_id: str, choice: str) -> httpx2.Response:
        html = await self.page()
        found = _CSRF.search(html)
        assert found is not None
        return await self.http.post(
            f"{self.base}/answer/{waiting_id}",
            data={"csrf": found["csrf"], "choice": choice},
        )


PEOPLE = {"alice": ["admin", "ops"], "bob": ["staff"]}
"""The people the OpenID provider of the sign-in tests knows, and their groups."""


@pytest.fixture(scope="module")
async def provider(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Provider]:
    """A real OpenID provider (per module) that knows :data:`PEOPLE` and a headless agent."""
    clients = [
        {"client_id": AGENT, "client_secret": AGENT_SECRET, "grant_types": ["client_credentials"],
         "response_types": [], "redirect_uris": [], "groups": ["bots"]},
    ]  # fmt: skip
    async with oidc_provider(
        tmp_path_factory.mktemp("oidc"), accounts=PEOPLE, clients=clients
    ) as running:
        yield running
