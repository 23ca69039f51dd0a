"""Health checks for load balancers and orchestrators, answered without credentials:

- ``GET /healthz``: 200 while the process serves HTTP (a liveness probe: restart it if not);
- ``GET /readyz``: 200 when it should get traffic, 503 when not: it is stopping (SIGTERM:
  its running calls finish, new ones go elsewhere), or its shared state (Redis) does not
  answer (budgets, limits and grants would be refused). The body says which.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

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
