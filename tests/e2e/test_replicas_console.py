"""The console of a service of replicas (``serve --http --state redis://… --console``): two
replicas sharing a real Redis, HAProxy in front, each serving the console at ``/console``.
Whichever replica serves a person's page, it shows the whole service:

- a headless call waiting on one replica is answered in the console of another (both
  protocol eras), once: two people answering at once on two replicas, one answer is taken;
- the timeline holds every replica's calls, with the replica that ran each, and filters by
  replica; neither it nor the shared stream ever holds a call's arguments;
- the sessions page lists who is connected on which replica; a replica killed leaves it (its
  sessions and its questions), and an answer for its question is refused;
- a console session opened through the load balancer holds on every replica behind it;
- the one-time URL a replica prints opens on another, once, and its replica prints the next.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from mcp_toolbridge.console.service import local_user
from mcp_toolbridge.state import RedisLink
from tests.console.conftest import Person
from tests.console.test_approvals import _call
from tests.console.test_questions import _CSRF
from tests.support.browser import chromium, need_chromium
from tests.support.cluster import Cluster, cluster
from tests.support.manifests import agentcli_manifest, echo_tool

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

_ECHO = "import json, sys\nprint(json.dumps({'echo': json.load(sys.stdin)}))\n"
_CONSOLE = re.compile(r"console also at \S+/console/\?token=(?P<token>\S+)")
# Made at run time so that no scanner of this repository finds a key in it.
GITHUB_TOKEN = "ghp_" + "".join(chr(ord("a") + (i * 7) % 26) for i in range(36))


QUESTIONS = {"questions": [{"question": "Which database?", "options": [{"label": "sqlite"}]}]}


def _catalog(folder: Path) -> Path:
    confirm = echo_tool("confirm_echo")
    confirm.pop("annotations")  # destructive by default: the policy asks first
    agentcli_manifest(folder, [echo_tool(), confirm], {"echo": _ECHO})
    return folder


@asynccontextmanager
async def _service(work: Path) -> AsyncIterator[Cluster]:
    folder = _catalog(work / "manifests")
    args = ("--sandbox", "off", "--workspace", str(work), "--console", "127.0.0.1:0")
    # No deadline around the yield: it would run through the body (a module's tests) and
    # cancel whichever test it found running; each step of the start has its own guard.
    async with cluster(work, ("r1", "r2"), *args, str(folder)) as running:
        yield running


@pytest.fixture(scope="module")
async def service(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    async with _service(tmp_path_factory.mktemp("console-replicas")) as running:
        yield running


class _At:
    def __init__(self, url: str) -> None:
        self.url = url


_OPENED: set[str] = set()
"""The printed tokens the tests opened already (each opens once)."""


async def console_url(
    service: Cluster, through: str | None = None, *, printed_by: str | None = None
) -> str:
    """The console's URL at a replica (``through`` its name) or the load balancer, with a
    one-time token a replica (``printed_by``, else any) printed on stderr that no test opened
    yet: once one is opened, on any replica, the replica that printed it prints the next."""
    names = [printed_by] if printed_by is not None else list(service.replicas)
    with anyio.fail_after(30):
        while True:
            lines = [x for name in names for x in service.replicas[name].lines]
            fresh = [m["token"] for x in lines if (m := _CONSOLE.search(x))]
            fresh = [token for token in fresh if token not in _OPENED]
            if fresh:
                break
            await anyio.sleep(0.05)  # a bounded wait for the line after the one awaited
    token = fresh[-1]
    _OPENED.add(token)
    base = service.direct(through) if through is not None else service.url
    return base.rsplit("/mcp", 1)[0] + f"/console/?token={token}"


@asynccontextmanager
async def person(service: Cluster, through: str | None = None) -> AsyncIterator[Person]:
    async with Person.at(_At(await console_url(service, through))) as me:  # type: ignore[arg-type]
        yield me


async def until(me: Person, path: str, ok: Callable[[str], bool]) -> str:
    """The part at ``path`` once ``ok`` holds for it: read again at each event of the page's
    own stream (at most a second apart: the stream may be another replica's)."""
    heard = anyio.Event()

    async def listen(events: httpx2.Response) -> None:
        async for line in events.aiter_lines():
            if line.startswith("event:"):
                heard.set()

    with anyio.fail_after(30):
        async with (
            me.http.stream("GET", me.base + "/events") as events,
            anyio.create_task_group() as group,
        ):
            group.start_soon(listen, events)
            while not ok(html := await me.page(path)):
                with anyio.move_on_after(1):
                    await heard.wait()
                heard = anyio.Event()
            group.cancel_scope.cancel()
    return html


def _last_line(service: Cluster, name: str, tool: str) -> dict[str, Any]:
    return [line for line in service.audit(name) if line["tool"] == tool][-1]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_call_waiting_on_one_replica_is_approved_in_the_console_of_another(
    service: Cluster, mode: str
) -> None:
    text = f"use {GITHUB_TOKEN} ({mode})"
    async with person(service, "r2") as me:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(
                _call, service.direct("r1"), mode, "confirm_echo", {"text": text}, result
            )
            [waiting] = await me.waiting()
            assert waiting.startswith("r1.")  # the question is r1's, shown by r2
            page = await me.page()
            assert "confirm_echo" in page and "<dt>Replica</dt><dd>r1</dd>" in page
            assert "[REDACTED:github-pat]" in page and GITHUB_TOKEN not in page
            link = RedisLink(service.redis.url())
            try:
                kept = await link.run("HGETALL", "tb:desk:r1")
            finally:
                await link.aclose()
            assert kept and GITHUB_TOKEN.encode() not in b"".join(kept.values())
            assert (await me.answer(waiting, "once")).status_code == 303
        called, _ = result
        assert not called.is_error, called
        shown = text.replace(GITHUB_TOKEN, "[REDACTED:github-pat]")  # the result's redaction
        assert called.structured_content == {"echo": {"text": shown}}
        again = await me.answer(waiting, "deny")
        assert again.status_code == 409  # answered: a second answer is refused
    line = _last_line(service, "r1", "confirm_echo")
    assert (line["outcome"], line["answer"]) == ("ok", "once")
    assert line["answeredBy"] == f"console:{local_user()}"


async def test_two_people_answering_at_once_on_two_replicas_one_answer_is_taken(
    service: Cluster,
) -> None:
    async with person(service, "r1") as first, person(service, "r2") as second:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(
                _call, service.direct("r2"), "auto", "confirm_echo", {"text": "x"}, result
            )
            [waiting] = await first.waiting()
            statuses: dict[str, int] = {}

            async def answer(who: Person, choice: str) -> None:
                statuses[choice] = (await who.answer(waiting, choice)).status_code

            async with anyio.create_task_group() as answering:
                answering.start_soon(answer, first, "once")
                answering.start_soon(answer, second, "deny")
        assert sorted(statuses.values()) == [303, 409], statuses
        taken = next(choice for choice, status in statuses.items() if status == 303)
        assert result[0].is_error is (taken == "deny")
    line = _last_line(service, "r2", "confirm_echo")
    assert line["answer"] == {"once": "once", "deny": "reject"}[taken]


async def test_a_question_of_the_question_tool_on_one_replica_is_answered_on_another(
    service: Cluster,
) -> None:
    async with person(service, "r1") as me:
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_call, service.direct("r2"), "legacy", "question", QUESTIONS, result)
            [waiting] = await me.waiting()
            page = await me.page()
            assert "Which database?" in page and "On replica r2" in page
            csrf = _CSRF.search(page)
            assert csrf is not None
            posted = await me.http.post(
                f"{me.base}/answer/{waiting}",
                data={"csrf": csrf["csrf"], "choice": "answer", "q1": ["sqlite", "nope"]},
            )
            assert posted.status_code == 303
        assert result[0].structured_content == {"answers": [["sqlite"]]}


async def test_the_timeline_shows_every_replicas_calls_and_filters_by_replica(
    service: Cluster,
) -> None:
    marker = "marker-7c1e9"
    for name, mode in (("r1", "auto"), ("r2", "legacy")):
        async with Client(service.direct(name), mode=mode) as client:
            result = await client.call_tool("echo", {"text": f"{marker} from {name}"})
            assert not result.is_error
    async with person(service) as me:  # through the load balancer: any replica serves it
        both = await until(
            me, "/part/timeline", lambda h: "<td>r1</td>" in h and "<td>r2</td>" in h
        )
        assert "every replica's" in both
        for _ in range(4):  # round robin over both replicas: the signed session holds
            page = await me.page("/timeline", replica="r1")
            assert 'id="f-replica"' in page and "<td>r1</td>" in page
            assert "<td>r2</td>" not in page
        assert marker not in both  # a record never carries arguments
    link = RedisLink(service.redis.url())
    try:
        stream = await link.run("XRANGE", "tb:audit", "-", "+")
    finally:
        await link.aclose()
    records = [json.loads(fields[b"a"]) for _, fields in stream]
    assert {(r["tool"], r["outcome"]) for r in records} >= {("echo", "ok")}
    assert {fields[b"r"] for _, fields in stream} >= {b"r1", b"r2"}
    assert marker.encode() not in b"".join(b"".join(f.values()) for _, f in stream)


async def test_a_killed_replicas_sessions_and_questions_leave_every_console(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    async with (
        _service(tmp_path_factory.mktemp("console-kill")) as service,
        person(service, "r2") as me,
        AsyncExitStack() as clients,
    ):
        for name in ("r1", "r2"):  # a 2025 session on each replica
            client = await clients.enter_async_context(Client(service.direct(name), mode="legacy"))
            await client.list_tools()
        listed = await until(
            me, "/part/sessions", lambda h: "<td>r1</td>" in h and "<td>r2</td>" in h
        )
        assert "every live replica's" in listed
        failed: list[BaseException] = []

        async def waiting_call() -> None:
            try:
                await _call(service.direct("r1"), "auto", "confirm_echo", {"text": "x"}, [])
            except Exception as exc:  # its replica is killed under it
                failed.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(waiting_call)
            [waiting] = await me.waiting()
            service.kill("r1")
            gone = await until(me, "/part/sessions", lambda h: "<td>r1</td>" not in h)
            assert "<td>r2</td>" in gone
            await until(me, "/part/approvals", lambda h: waiting not in h)
            refused = await me.answer(waiting, "once")
            assert refused.status_code == 409 and "(r1) stopped" in refused.text
        assert failed
        await clients.aclose()  # the r1 client ends with its dead server, as it may


async def test_a_url_printed_by_one_replica_opens_once_on_another_and_the_next_is_printed(
    service: Cluster,
) -> None:
    """The token r1 printed is kept in Redis: it opens a session on r2, once; opened again,
    on r1 or r2, it gets the page that says it was used; r1 (the token was its) prints the
    next, which opens too."""
    url = await console_url(service, "r2", printed_by="r1")
    token = url.split("token=", 1)[1]
    async with httpx2.AsyncClient(timeout=30) as mine, httpx2.AsyncClient(timeout=30) as theirs:
        assert (await mine.get(url)).status_code == 303
        for name in ("r1", "r2"):
            base = service.direct(name).rsplit("/mcp", 1)[0]
            again = await theirs.get(f"{base}/console/?token={token}")
            assert again.status_code == 401 and "used already" in again.text
            assert (await mine.get(f"{base}/console/")).status_code == 200
        nxt = await console_url(service, "r2", printed_by="r1")  # printed by r1 within seconds
        assert nxt != url and (await theirs.get(nxt)).status_code == 303


async def test_a_console_session_opened_through_the_load_balancer_holds_on_every_replica(
    service: Cluster,
) -> None:
    async with httpx2.AsyncClient(timeout=30) as http:
        opened = await http.get(await console_url(service))
        assert opened.status_code == 303
        cookie = opened.headers["set-cookie"]
        assert cookie.startswith("toolbridge_console_") and "HttpOnly" in cookie
        for name in ("r1", "r2"):
            base = service.direct(name).rsplit("/mcp", 1)[0]
            page = await http.get(f"{base}/console/sessions")
            assert page.status_code == 200, page.text
        name, value = cookie.split(";", 1)[0].split("=", 1)
        forged = value[:-2] + ("AA" if not value.endswith("AA") else "BB")
        refused = await http.get(
            f"{base}/console/sessions", cookies=None, headers={"Cookie": f"{name}={forged}"}
        )
        assert refused.status_code == 401  # a session nobody signed


async def test_in_a_browser_through_the_load_balancer_approve_watch_and_lose_a_replica(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Debian's Chromium (Playwright) at the load balancer's /console: a call waiting on r1
    appears on the page and is allowed with its button; the timeline lists it as r1's and
    filters by replica; the sessions page lists a 2025 session on each replica, and when r1
    is killed its rows leave the page by themselves."""
    need_chromium()
    from playwright.async_api import expect

    async with (
        _service(tmp_path_factory.mktemp("console-browser")) as service,
        chromium() as browser,
        AsyncExitStack() as clients,
    ):
        page = await browser.new_page()
        await page.goto(await console_url(service))
        await page.get_by_text("Nothing is waiting").wait_for()
        result: list[Any] = []
        async with anyio.create_task_group() as group:
            args = {"text": "from the browser"}
            group.start_soon(_call, service.direct("r1"), "legacy", "confirm_echo", args, result)
            card = page.locator(".card", has_text="from the browser")
            await card.wait_for(timeout=60_000)  # by the page's event stream
            await expect(card.locator("dd", has_text=re.compile("^r1$"))).to_have_count(1)
            await card.get_by_role("button", name="Allow once").click()
        assert not result[0].is_error
        await page.get_by_text("Nothing is waiting").wait_for()

        await page.goto(page.url.split("/console/")[0] + "/console/timeline")
        rows = page.locator("table.calls tbody tr")
        await expect(rows.filter(has_text="confirm_echo")).to_have_count(1)
        await page.get_by_label("Replica").select_option("r1")
        await expect(rows).to_have_count(1)
        assert "replica=r1" in page.url

        for name in ("r1", "r2"):  # a 2025 session on each replica
            client = await clients.enter_async_context(Client(service.direct(name), mode="legacy"))
            await client.list_tools()
        await page.goto(page.url.split("/console/")[0] + "/console/sessions")
        replicas = page.locator("table.sessions tbody td:last-child")
        await expect(replicas.filter(has_text="r2")).not_to_have_count(0)
        await expect(replicas.filter(has_text="r1")).not_to_have_count(0)
        service.kill("r1")
        await expect(replicas.filter(has_text="r1")).to_have_count(0, timeout=30_000)
        await expect(replicas.filter(has_text="r2")).not_to_have_count(0)
        await clients.aclose()
