"""The console attacked from where outsiders stand (the red-team pass of 2026-11-29;
docs/security.md, "The HTTP edge and the console"): markup a manifest or a model puts in
front of the person, and the sign-in URL made to send the browser elsewhere. Real servers,
real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.console.conftest import Person, catalog, serving

pytestmark = pytest.mark.anyio

MARKUP = "\"'><img src=x onerror=alert(1)><script>alert(2)</script><svg onload=alert(3)>"
"""What a hostile manifest or model writes where the console shows text."""


def _marked(tmp_path: Path) -> Path:
    """The console's test catalog, ``note``'s description carrying :data:`MARKUP`."""
    folder = catalog(tmp_path)
    manifest = folder / "tools.json"
    tools = json.loads(manifest.read_text(encoding="utf-8"))
    for tool in tools["tools"]:
        if tool["name"] == "note":
            tool["description"] = f"Write a note {MARKUP}"
    manifest.write_text(json.dumps(tools), encoding="utf-8")
    return folder


def _inert(page: str, *, shown: bool = True) -> None:
    """None of the markup is live in ``page`` (``shown``: it is there, as escaped text)."""
    for live in ("<img", "<script>alert", "<svg onload", "onerror=alert(1)>"):
        assert live not in page, live
    assert not shown or "&lt;img src=x onerror=alert(1)&gt;" in page


async def _call(url: str, args: dict[str, Any], out: list[Any]) -> None:
    async with httpx2.AsyncClient(timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="auto") as client:
            out.append(await client.call_tool("note", args))


async def test_markup_in_a_description_or_a_calls_arguments_is_shown_as_text(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, stateless=True, catalog_of=_marked) as stack,
        Person.at(stack.console) as me,
    ):
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, stack.url, {"text": MARKUP}, result)
            [waiting] = await me.waiting()
            _inert(await me.page())
            _inert(await me.page("/part/approvals"))
            await me.answer(waiting, "deny")
        _inert(await me.page("/catalog"))
        _inert(await me.page("/search", q=f"note {MARKUP}"))
        _inert(await me.page("/timeline", tool=MARKUP, caller=MARKUP), shown=False)
        _inert(await me.page("/part/timeline", outcome=MARKUP), shown=False)
