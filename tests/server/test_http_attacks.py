"""One caller against the others on an OAuth-protected ``serve --http``: what one identity can
do to the places every caller shares (the red-team pass of 2026-11-29; docs/security.md, "The
HTTP edge and the console"). Real provider, real HTTP, raw requests as a hostile client
sends them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import httpx2
import pytest

from mcp_toolbridge.console.desk import MAX_WAITING_PER_CALLER
from mcp_toolbridge.runtime import Settings
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.http_sessions import MAX_SESSIONS_PER_CALLER
from tests.console.conftest import Person, mounted_serving
from tests.support.httpserve import (
    ACCEPT,
    LEGACY_VERSION,
    answer_from,
    call,
    modern,
    modern_headers,
    request,
)
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.oauth import (
    AGENT,
    AGENT_SECRET,
    REPORTER,
    REPORTER_SECRET,
    needs_oidc,
    protected_server,
)
from tests.support.oidc import Provider

pytestmark = [needs_oidc, pytest.mark.anyio]


def _settings(tmp_path: Path) -> Settings:
    agentcli_manifest(tmp_path / "m", [echo_tool("status")], {"echo": ECHO})
    return Settings(paths=[tmp_path / "m"], audit_path=tmp_path / "audit.ndjson")


def _opening() -> dict[str, object]:
    params = {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "hoarder", "version": "0"},
    }
    return request("initialize", params)


async def _initialize(http: httpx2.AsyncClient, url: str, token: str) -> httpx2.Response:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    return await http.post(url, json=_opening(), headers=headers)


async def test_one_caller_cannot_take_every_session_place(
    tmp_path: Path, provider: Provider
) -> None:
    """An agent opens sessions and never ends them: past its share it gets 503, while another
    caller still opens one; an ended session frees a place for it again."""
    async with protected_server(_settings(tmp_path), provider) as served:
        hoarder = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
        other = await provider.client_credentials(REPORTER, REPORTER_SECRET, resource=served.url)
        opened: list[str] = []
        limits = httpx2.Limits(max_connections=8)
        async with httpx2.AsyncClient(timeout=60, limits=limits) as http:

            async def hoard() -> None:
                response = await _initialize(http, served.url, hoarder)
                assert response.status_code == 200, response.text
                opened.append(response.headers["mcp-session-id"])

            async with anyio.create_task_group() as group:
                for _ in range(MAX_SESSIONS_PER_CALLER):
                    group.start_soon(hoard)
            assert len(set(opened)) == MAX_SESSIONS_PER_CALLER
            refused = await _initialize(http, served.url, hoarder)
            assert refused.status_code == 503, refused.text
            assert "mcp-session-id" not in refused.headers
            theirs = await _initialize(http, served.url, other)
            assert theirs.status_code == 200, theirs.text
            ended = await http.delete(
                served.url,
                headers={
                    "Authorization": f"Bearer {hoarder}",
                    "Mcp-Session-Id": opened[0],
                    "MCP-Protocol-Version": LEGACY_VERSION,
                },
            )
            assert ended.status_code == 200, ended.text
            again = await _initialize(http, served.url, hoarder)
            assert again.status_code == 200, again.text


async def _headless_call(
    http: httpx2.AsyncClient, url: str, token: str, text: str
) -> dict[str, object]:
    """A 2026-07-28 ``tools/call`` of ``note`` (destructive: the policy asks) by a client that
    cannot ask (no elicitation): its confirmation waits in the console. Its JSON-RPC answer."""
    message = modern(call("note", {"text": text}))
    headers = {**modern_headers(message), "Authorization": f"Bearer {token}"}
    response = await http.post(url, json=message, headers=headers)
    assert response.status_code == 200, response.text
    return answer_from(response.content)


async def test_one_caller_cannot_fill_the_consoles_desk(tmp_path: Path, provider: Provider) -> None:
    """A headless agent makes calls that ask, until its share of the console's desk is full:
    its next one is refused at once, saying why, while another caller's call still reaches
    the person."""
    auth = AuthOptions(issuer=provider.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth) as (url, console):
        flooder = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        other = await provider.client_credentials(REPORTER, REPORTER_SECRET, resource=url)
        limits = httpx2.Limits(max_connections=MAX_WAITING_PER_CALLER + 8)
        async with (
            Person.at(console) as me,
            httpx2.AsyncClient(timeout=120, limits=limits) as http,
            anyio.create_task_group() as group,
        ):
            for n in range(MAX_WAITING_PER_CALLER):
                group.start_soon(_headless_call, http, url, flooder, f"flood {n}")
            await me.waiting(MAX_WAITING_PER_CALLER)
            refused = await _headless_call(http, url, flooder, "one more")
            result = refused["result"]
            assert isinstance(result, dict) and result["isError"], refused
            assert "already wait for a person's answer" in json.dumps(result)
            answered: list[dict[str, object]] = []

            async def theirs() -> None:
                answered.append(await _headless_call(http, url, other, "mine"))

            group.start_soon(theirs)
            ids = await me.waiting(MAX_WAITING_PER_CALLER + 1)
            page = await me.page()
            assert "report-agent" in page  # the other caller's call is on the desk
            for waiting in ids:
                await me.answer(waiting, "deny")
        assert answered and "rejected this call" in json.dumps(answered[0])


async def _headless_question(
    http: httpx2.AsyncClient, url: str, token: str, text: str
) -> dict[str, object]:
    """A 2026-07-28 ``question`` call of a client that cannot ask: its form waits in the
    console. Its JSON-RPC answer."""
    message = modern(call("question", {"questions": [{"question": text}]}))
    headers = {**modern_headers(message), "Authorization": f"Bearer {token}"}
    response = await http.post(url, json=message, headers=headers)
    assert response.status_code == 200, response.text
    return answer_from(response.content)


async def test_a_callers_questions_and_confirmations_share_its_place_on_the_desk(
    tmp_path: Path, provider: Provider
) -> None:
    """A headless agent fills its share of the desk with confirmations and a question tool's
    form: its next confirmation and its next question are refused at once, saying why, while
    another caller's question still reaches the person, who sees whose it is. (One form
    only: a form waits inside its call, which holds one of the bridge's places for running
    tools, twice the cores.)"""
    auth = AuthOptions(issuer=provider.issuer, scopes=("tools",))
    async with mounted_serving(tmp_path, auth=auth, locked=("question",)) as (url, console):
        flooder = await provider.client_credentials(AGENT, AGENT_SECRET, resource=url)
        other = await provider.client_credentials(REPORTER, REPORTER_SECRET, resource=url)
        limits = httpx2.Limits(max_connections=MAX_WAITING_PER_CALLER + 8)
        async with (
            Person.at(console) as me,
            httpx2.AsyncClient(timeout=120, limits=limits) as http,
            anyio.create_task_group() as group,
        ):
            group.start_soon(_headless_question, http, url, flooder, "which one?")
            await me.waiting(1)
            for n in range(MAX_WAITING_PER_CALLER - 1):
                group.start_soon(_headless_call, http, url, flooder, f"flood {n}")
            await me.waiting(MAX_WAITING_PER_CALLER)
            with anyio.fail_after(30):  # refused at once; before, they waited on the desk
                confirmation = await _headless_call(http, url, flooder, "one more")
                question = await _headless_question(http, url, flooder, "one more?")
            for refused in (confirmation, question):
                result = refused["result"]
                assert isinstance(result, dict) and result["isError"], refused
                assert "already wait for a person's answer" in json.dumps(result)
            answered: list[dict[str, object]] = []

            async def theirs() -> None:
                answered.append(await _headless_question(http, url, other, "mine?"))

            group.start_soon(theirs)
            ids = await me.waiting(MAX_WAITING_PER_CALLER + 1)
            page = await me.page()
            assert "Asked by report-agent" in page
            forms = set(re.findall(r'class="card question" id="waiting-([^"]+)"', page))
            assert len(forms) == 2
            for waiting in ids:
                await me.answer(waiting, "decline" if waiting in forms else "deny")
        assert answered and "declined" in json.dumps(answered[0])


async def test_anothers_session_cannot_be_listened_to_resumed_or_ended(
    tmp_path: Path, provider: Provider
) -> None:
    """With another identity's token, a known session id is 404 for its GET stream, a resume
    (``Last-Event-ID``) and a DELETE, as for POST (test_oauth_people.py); the session goes on."""
    async with protected_server(_settings(tmp_path), provider) as served:
        mine = await provider.client_credentials(AGENT, AGENT_SECRET, resource=served.url)
        theirs = await provider.client_credentials(REPORTER, REPORTER_SECRET, resource=served.url)
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await _initialize(http, served.url, mine)
            assert opened.status_code == 200, opened.text
            session = opened.headers["mcp-session-id"]
            first = next(
                line.split(":", 1)[1].strip()
                for line in opened.text.splitlines()
                if line.startswith("id:")
            )
            as_them = {
                "Authorization": f"Bearer {theirs}",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": LEGACY_VERSION,
                "Accept": "text/event-stream",
            }
            listened = await http.get(served.url, headers=as_them)
            resumed = await http.get(served.url, headers={**as_them, "Last-Event-ID": first})
            ended = await http.delete(served.url, headers=as_them)
            assert [listened.status_code, resumed.status_code, ended.status_code] == [404] * 3
            headers = {
                **ACCEPT,
                "Authorization": f"Bearer {mine}",
                "Mcp-Session-Id": session,
                "MCP-Protocol-Version": LEGACY_VERSION,
            }
            still = await http.post(served.url, json=request("tools/list"), headers=headers)
            assert still.status_code == 200, still.text
            assert answer_from(still.content)["result"]["tools"]
