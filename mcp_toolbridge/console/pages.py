"""The console's pages and the requests they make, on Starlette (which the MCP SDK already
brings), rendered on the server with Jinja2 (autoescaped, and every character that hides or
reorders text shown as its escape: rendering.py). Every page works without script;
``static/console.js`` only keeps the live parts current: it listens to ``/events``
(server-sent events: the desk and the audit stream changed) and fetches the part again.

GET never changes anything; the only POST answers a waiting confirmation, and carries the
session's CSRF token (guard.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mcp_toolbridge.bridge import Outcome
from mcp_toolbridge.console.chart import draw
from mcp_toolbridge.console.desk import CHOICES, NOTHING_WAITS, Desk, answer_of
from mcp_toolbridge.console.feed import AuditFeed, Filter
from mcp_toolbridge.console.guard import KEEPER_KEY, SESSION_KEY, USER_KEY, Gatekeeper
from mcp_toolbridge.console.rendering import environment
from mcp_toolbridge.console.search import Searcher
from mcp_toolbridge.console.sessions import Connections
from mcp_toolbridge.console.views import Serving, Someone, local_caller, tool_rows
from mcp_toolbridge.host import visible

EVENTS_MAX_S = 300.0
"""An event stream ends after this long (the browser reconnects at once): no stream outlives
a shutdown by more than the server's grace period, and none is held forever."""
PING_S = 15.0
MAX_QUERY = 500


class Pages:
    """The console's routes over its desk, audit feed and the serving runtime."""

    def __init__(
        self,
        *,
        desk: Desk,
        feed: AuditFeed,
        serving: Serving,
        searcher: Searcher | None = None,
        connections: Connections,
        local_session: str,
    ) -> None:
        self.desk = desk
        self.feed = feed
        self.serving = serving
        self.searcher = searcher or Searcher(serving)
        self.connections = connections
        self.local_session = local_session
        self.stopping = anyio.Event()
        self.env = environment()

    def app(self) -> Starlette:
        static = StaticFiles(packages=[("mcp_toolbridge.console", "static")])
        return Starlette(
            routes=[
                Route("/", self.approvals),
                Route("/part/approvals", self.approvals_part),
                Route("/answer/{waiting_id}", self.answer, methods=["POST"]),
                Route("/timeline", self.timeline),
                Route("/part/timeline", self.timeline_part),
                Route("/catalog", self.catalog),
                Route("/search", self.search),
                Route("/sessions", self.sessions),
                Route("/part/sessions", self.sessions_part),
                Route("/events", self.events),
                Route("/favicon.ico", lambda _request: Response(status_code=204)),
                Mount("/static", static, name="static"),
            ]
        )

    # -- rendering ---------------------------------------------------------------------------

    async def _render(self, request: Request, name: str, **values: Any) -> HTMLResponse:
        sid = request.scope[SESSION_KEY]
        keeper: Gatekeeper = request.scope[KEEPER_KEY]
        template = self.env.get_template(name)
        html = template.render(
            base=request.scope.get("root_path", ""),
            csrf=keeper.csrf(sid),
            user=request.scope[USER_KEY],
            waiting_count=await self.desk.count(),
            shared=self.feed.shared,
            now=time.time(),
            **values,
        )
        return HTMLResponse(html)

    # -- approvals ---------------------------------------------------------------------------

    async def approvals(self, request: Request) -> Response:
        waiting = await self.desk.listing()
        return await self._render(request, "approvals.html", waiting=waiting, page="approvals")

    async def approvals_part(self, request: Request) -> Response:
        waiting = await self.desk.listing()
        return await self._render(request, "approvals_part.html", waiting=waiting)

    async def answer(self, request: Request) -> Response:
        async with request.form(max_files=0, max_fields=200, max_part_size=8192) as form:
            given = str(form.get("csrf", ""))
            choice = str(form.get("choice", ""))
            values = {key: [str(v) for v in form.getlist(key)] for key in form}
        keeper: Gatekeeper = request.scope[KEEPER_KEY]
        if not keeper.csrf_ok(request.scope[SESSION_KEY], given):
            return PlainTextResponse("The form's CSRF token is missing or wrong.", 403)
        if choice not in (*CHOICES, "answer", "decline"):
            return PlainTextResponse("choice must be once, always or deny.", 400)
        by = f"console:{request.scope[USER_KEY]}"
        waiting = await self.desk.find(request.path_params["waiting_id"])
        answer = answer_of(waiting, choice, values, by) if waiting is not None else None
        refused: str | None = NOTHING_WAITS
        if waiting is not None and answer is not None:
            refused = await self.desk.give(waiting, answer)
        if refused is not None:
            return PlainTextResponse(refused, 409)
        base = request.scope.get("root_path", "")
        return RedirectResponse(f"{base}/", status_code=303)

    # -- timeline ----------------------------------------------------------------------------

    def _timeline_values(self, request: Request) -> dict[str, Any]:
        keep = Filter.of(request.query_params)
        now = time.time()
        return {
            "filter": keep,
            "entries": self.feed.entries(keep),
            "chart": draw(self.feed.minutes(now, keep)),
            "tools": self.feed.tools(),
            "callers": self.feed.callers(),
            "replicas": self.feed.replicas(),
            "outcomes": [o.value for o in Outcome],
        }

    async def timeline(self, request: Request) -> Response:
        return await self._render(
            request, "timeline.html", page="timeline", **self._timeline_values(request)
        )

    async def timeline_part(self, request: Request) -> Response:
        return await self._render(request, "timeline_part.html", **self._timeline_values(request))

    # -- catalog, search, sessions -----------------------------------------------------------

    def _someone(self, label: str) -> Someone:
        """The caller the catalog's choice names: its label, or the label as the page shows
        it (characters that hide text escaped, rendering.py)."""
        people = self.feed.people
        found = people.get(label) or next(
            (p for k, p in people.items() if visible(k) == label), None
        )
        return found or local_caller(self.local_session)

    async def catalog(self, request: Request) -> Response:
        label = request.query_params.get("caller", "local")[:200]
        who = self._someone(label)
        rows = await tool_rows(self.serving, who)
        people = sorted({"local", *self.feed.people})
        return await self._render(
            request, "catalog.html", page="catalog", rows=rows, who=who, people=people
        )

    async def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()[:MAX_QUERY]
        hits = await self.searcher.search(query) if query else None
        return await self._render(request, "search.html", page="search", query=query, hits=hits)

    async def sessions(self, request: Request) -> Response:
        rows = await self.connections.listing()
        return await self._render(request, "sessions.html", page="sessions", rows=rows)

    async def sessions_part(self, request: Request) -> Response:
        rows = await self.connections.listing()
        return await self._render(request, "sessions_part.html", rows=rows)

    # -- live --------------------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        """Server-sent events: ``desk`` when a confirmation arrives or goes, ``audit`` when a
        call ends, ``sessions`` when who is connected changed (with replicas: the registry;
        else with each call) (``data`` is the new version); a comment every few seconds
        keeps it open.

        The versions are read before the response starts: the page fetches its parts once
        the stream is open (console.js), so a change the stream does not report is in them."""
        desk_seen, audit_seen = self.desk.version, self.feed.version
        sessions_seen = self.connections.version

        async def stream() -> AsyncIterator[str]:
            nonlocal desk_seen, audit_seen, sessions_seen
            yield "retry: 2000\n\n"
            with anyio.move_on_after(EVENTS_MAX_S):
                while not self.stopping.is_set():
                    with anyio.move_on_after(PING_S):
                        async with anyio.create_task_group() as group:
                            for wait in (
                                partial(self.desk.changed, desk_seen),
                                partial(self.feed.changed, audit_seen),
                                partial(self.connections.changed, sessions_seen),
                                self.stopping.wait,
                            ):
                                group.start_soon(_first, group.cancel_scope, wait)
                    if self.desk.version != desk_seen:
                        desk_seen = self.desk.version
                        yield f"event: desk\ndata: {desk_seen}\n\n"
                    if self.feed.version != audit_seen:
                        audit_seen = self.feed.version
                        yield f"event: audit\ndata: {audit_seen}\n\n"
                        if not self.feed.shared:  # one process: a call may be a new client
                            yield f"event: sessions\ndata: {audit_seen}\n\n"
                    if self.connections.version != sessions_seen:
                        sessions_seen = self.connections.version
                        yield f"event: sessions\ndata: {sessions_seen}\n\n"
                    yield ": ping\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")


async def _first(scope: anyio.CancelScope, wait: Callable[[], Awaitable[object]]) -> None:
    """Wait, then end the waits beside this one (the first to finish wins)."""
    await wait()
    scope.cancel()
