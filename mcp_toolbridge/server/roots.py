"""Following the client's MCP roots: where the workspace of a stdio session is.

A stdio server has one client, so its roots are the process's workspace. The callback given
(see ``ToolbridgeServer(roots=...)``) receives the ``file://`` roots as paths each time they
change, and decides what the workspace becomes.

- 2025 era (roots exist, with ``notifications/roots/list_changed``): after
  ``notifications/initialized``, when the client declared the roots capability, the server
  sends ``roots/list``, and again on every list_changed. A ``tools/call`` that arrives while
  an answer is awaited waits for it (at most ``ROOTS_WAIT_S``), so the first call already
  runs in the folder the client named.
- 2026-07-28 (no server-initiated requests, no list_changed; roots deprecated but still an
  input request): a fresh ``tools/call`` of a tool that works in the workspace, from a client
  whose request declares the roots capability, is answered with an input request for
  ``roots/list``. The client retries the call with its roots, which are applied before the
  call runs. Asking on every such call is how a change of roots is noticed in this era.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
import mcp_types as types
from mcp import MCPDeprecationWarning
from mcp.server import Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.workspace import needs_workspace

log = logging.getLogger("mcp_toolbridge")

RootsChanged = Callable[[Sequence[Path]], Awaitable[None]]
"""Called with the client's ``file://`` roots, as absolute paths, whenever they change."""

ROOTS_KEY = "toolbridge/roots"
"""The key of the roots input request in a 2026 ``InputRequiredResult``."""
ROOTS_WAIT_S = 5.0
"""How long a call waits for the client's answer to ``roots/list`` (2025 era)."""


def file_roots(result: types.ListRootsResult) -> list[Path]:
    """The local folders among the roots: ``file://`` URIs on this host, as paths."""
    found: list[Path] = []
    for root in result.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme != "file" or uri.netloc not in ("", "localhost"):
            log.info("ignoring the MCP root %s: not a local file:// URI", root.uri)
            continue
        path = Path(unquote(uri.path))
        if path.is_absolute():
            found.append(path)
    return found


class RootsFollower:
    """Asks for the client's roots in both eras and reports each change once."""

    def __init__(self, on_change: RootsChanged) -> None:
        self._on_change = on_change
        self._applied: list[Path] | None = None
        self._asked = 0
        """How many roots/list requests were started; only the latest answer is applied."""
        self._settled = anyio.Event()
        self._settled.set()
        self._lock = anyio.Lock()

    def install(self, server: Server[Any]) -> None:
        """Handle the two notifications that start a roots/list (2025 era), and hold calls
        from the moment a client that declares roots is initialized."""
        server.middleware.append(self._expect_roots)
        server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._fetch
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._fetch
        )

    async def _expect_roots(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """``initialize`` is handled before the next message is read: a call that follows it
        finds the roots pending, whichever of the call and ``initialized`` runs first."""
        result = await call_next(ctx)
        if ctx.method == "initialize":
            capabilities = (ctx.params or {}).get("capabilities")
            if isinstance(capabilities, dict) and capabilities.get("roots") is not None:
                self._pending()
        return result

    def _pending(self) -> anyio.Event:
        if self._settled.is_set():
            self._settled = anyio.Event()
        return self._settled

    async def _fetch(self, ctx: ServerRequestContext[Any], _: types.NotificationParams) -> None:
        caps = ctx.session.client_capabilities
        if caps is None or caps.roots is None or not ctx.session.can_send_request:
            self._settled.set()
            return
        self._asked += 1
        number = self._asked
        settled = self._pending()
        try:
            with warnings.catch_warnings():  # deprecated in 2026-07-28, current in 2025 eras
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                answer = ctx.session.list_roots()
            with anyio.fail_after(ROOTS_WAIT_S):
                result = await answer
            if number == self._asked:  # an answer overtaken by a later request is stale
                await self._apply(file_roots(result))
        except (MCPError, TimeoutError) as exc:
            log.warning("the client did not list its roots: %s", exc)
        finally:
            if number == self._asked:
                settled.set()

    async def _apply(self, roots: list[Path]) -> None:
        async with self._lock:
            if roots != self._applied:
                self._applied = roots
                await self._on_change(roots)

    async def before_call(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        spec: ToolSpec,
    ) -> types.InputRequiredResult | None:
        """Bring the workspace up to date before ``spec`` runs; a 2026 result asking for the
        roots when this call must first fetch them."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            with anyio.move_on_after(ROOTS_WAIT_S):
                await self._settled.wait()
            return None
        caps = ctx.session.client_capabilities
        if caps is None or caps.roots is None:
            return None
        answer = (params.input_responses or {}).get(ROOTS_KEY)
        if isinstance(answer, types.ListRootsResult):
            await self._apply(file_roots(answer))
            return None
        fresh = params.request_state is None and not params.input_responses
        if not fresh or not needs_workspace(spec):
            return None
        return types.InputRequiredResult(input_requests={ROOTS_KEY: types.ListRootsRequest()})
