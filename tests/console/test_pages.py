"""What the console's pages show, read as a person would read them (the HTML over real
HTTP): the timeline with its filters and chart, the catalog as the policy treats a caller,
tool_search's ranking with its evidence, and who is connected."""

from __future__ import annotations

import re
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.console.conftest import Person, serving

pytestmark = pytest.mark.anyio


def _rows(html: str) -> list[str]:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return re.findall(r"<tr.*?</tr>", body, flags=re.S)


async def test_the_timeline_lists_calls_filters_them_and_charts_the_hour(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(stack.url, http_client=http)) as client,
        ):
            for text in ("one", "two"):
                assert not (await client.call_tool("echo", {"text": text})).is_error
            assert (await client.call_tool("echo", {"text": 3})).is_error  # invalid arguments
        html = await me.page("/timeline")
        assert len(_rows(html)) == 3
        assert "3 calls in the last hour" in html
        assert "<svg" in html and "<polyline" in html
        failed = await me.page("/timeline", outcome="error")
        [row] = _rows(failed)
        assert "echo" in row and "args.invalid" in row
        part = await me.page("/part/timeline", outcome="ok")
        assert len(_rows(part)) == 2 and "<html" not in part
        nobody = await me.page("/timeline", caller="someone else")
        assert "No calls yet that match the filter" in nobody


async def test_the_catalog_shows_facts_policy_sandbox_and_budget_per_caller(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        html = await me.page("/catalog")
        rows = {re.search(r"<code>(\w+)</code>", r)[1]: r for r in _rows(html)}  # type: ignore[index]
        assert {"echo", "note", "tool_search"} <= rows.keys()
        assert "a-ask" in rows["note"] and "destructive" in rows["note"]
        assert "<em>destructive: yes</em>" in rows["note"]  # inferred, not declared
        assert "destructive: no" in rows["echo"] and "a-allow" in rows["echo"]
        assert "no budget" in rows["echo"]
        assert "network" in rows["echo"]  # its sandbox profile


async def test_search_shows_the_ranking_with_each_legs_evidence(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        html = await me.page("/search", q="write a note")
        rows = _rows(html)
        assert rows and "<code>note</code>" in rows[0]
        assert "note" in rows[0].split("</th>", 1)[1]  # the matched terms
        empty = await me.page("/search", q="zzqx")
        assert "No tool matches" in empty or _rows(empty)


async def test_sessions_lists_who_is_connected(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack, Person.at(stack.console) as me:
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(stack.url, http_client=http), mode="legacy") as client,
        ):
            await client.list_tools()
            html = await me.page("/sessions")
            [row] = _rows(html)
            assert "the local caller" in row and "http" in row and "2025-11-25" in row


async def test_a_restarted_console_shows_the_last_hour_of_the_audit_log(tmp_path: Path) -> None:
    async with serving(tmp_path) as stack:
        async with (
            httpx2.AsyncClient() as http,
            Client(streamable_http_client(stack.url, http_client=http)) as client,
        ):
            await client.call_tool("echo", {"text": "before the restart"})
    with stack.audit.open("a", encoding="utf-8") as log:
        log.write('{"not": "an audit line"}\n')
    async with serving(tmp_path) as again, Person.at(again.console) as me:
        await again.console.history(again.audit)
        [row] = _rows(await me.page("/timeline"))
        assert "echo" in row and "ok" in row
