"""Health checks for load balancers and orchestrators, answered without credentials, and
the refusal of new work while a replica drains.


- ``GET /healthz``: 200 while the process serves HTTP (a liveness probe: restart it if not);
- ``GET /readyz``: 200 when it should get traffic, 503 when not: it is stopping (SIGTERM:
  its running calls finish, new ones go elsewhere), or its shared state (Redis) does not
  answer (budgets, limits and grants would be refused). The body says which.

While draining (SIGTERM), a POST that would start something new here (no ``Mcp-Session-Id``:
an ``initialize``, or any 2026-07-28 request) is answered ``503`` with ``Retry-After: 1``
before it is read; HAProxy sends such a request to another replica (``retry-on 503``).
Requests of sessions this replica holds still come in: their calls may finish.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_toolbridge.edge import Scope, send_json_reply

HEALTH_PATHS = frozenset({"/healthz", "/readyz"})


def health_routes(server: Any) -> list[Route]:
    """The two routes for ``server`` (a ToolbridgeServer: its ``replica`` and ``draining``)."""

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        replica = server.replica
        reasons = []
        if server.draining:
            reasons.append("stopping: finishing the calls it runs, taking no new ones")
        if replica is not None and not replica.ready:
            reasons.append(f"the shared state (Redis) does not answer replica {replica.name}")
        body: dict[str, Any] = {"status": "unready" if reasons else "ready"}
        if replica is not None:
            body["replica"] = replica.name
        if reasons:
            body["reasons"] = reasons
        return JSONResponse(body, status_code=503 if reasons else 200)

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


class Draining:
    """ASGI middleware: 503 for new work while the server drains (see the module doc)."""

    def __init__(self, app: Any, server: Any, path: str) -> None:
        self._app = app
        self._server = server
        self._path = path

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if (
            self._server.draining
            and scope["type"] == "http"
            and scope.get("method") == "POST"
            and scope.get("path") == self._path
            and not any(k.lower() == b"mcp-session-id" for k, _ in scope.get("headers", ()))
        ):
            error = {"error": "this replica is stopping; send the request again"}
            headers = [(b"retry-after", b"1"), (b"connection", b"close")]
            await send_json_reply(send, 503, error, headers=headers)
            return
        await self._app(scope, receive, send)
