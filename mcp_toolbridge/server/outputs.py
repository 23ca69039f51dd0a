"""Truncated output a client can reach: a ``resource_link`` in the result, read back with
``resources/read``, by a client that has no read tool too.

When a call's output is cut, its whole output sits in a sidecar file of the call's session
(``output_path``). The result then also links to it as a resource, ``toolbridge://output/<random>``,
and who may read that resource depends on where the call ran:

- **In a session** (stdio: the process; a stateful HTTP session): that session only, for as
  long as it lives. The link goes when the session ends, like the sidecar file.
- **Without a session** (2026-07-28 requests over HTTP, ``--stateless``): whoever presents the
  same credentials as the caller (the auth identity when the app has one, else the
  ``Authorization`` header, the bearer token), for :data:`LINK_TTL_S`. The sidecar file of
  such a call goes with its link: when the link has expired, at the next request that finds it
  so, and at the latest when the server stops.

With replicas sharing state (``--state redis://…``), a link of a call without a session is
also kept in Redis with its TTL, its owner and the output itself (up to
:data:`MAX_READ_BYTES`), so any replica answers its ``resources/read``; a session's links stay
with the session's replica, which serves all of the session's requests.

What a read returns is the output as the tool wrote it, with every secret nobody declared
redacted (``screen``: the bridge's secret scan, the same as the call's result got).

Anything else (an unknown URI, an expired link, another session's, another credential's) is
error -32602 "Resource not found" with ``data.uri`` (SEP-2164), in both eras, so nobody learns
that the resource exists. Only files inside the session's own sidecar folder are linked (a
recording's ``output_path`` during replay is not).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.shared.exceptions import MCPError
from mcp_types.version import is_version_at_least

from mcp_toolbridge.state import StateUnavailable

if TYPE_CHECKING:  # a replica's: not imported by a server without shared state
    from mcp_toolbridge.state import SharedStore

log = logging.getLogger("mcp_toolbridge")

SCHEME = "toolbridge://output/"
LINK_TTL_S = 30 * 60.0
"""How long a link of a call without a session can be read."""
MAX_LINKS_PER_OWNER = 1000
"""Links kept per session (or per credential, without a session); past it the oldest go
(their files stay, readable with the read tool)."""
MAX_READ_BYTES = 16 << 20
"""The most of one file resources/read returns (the largest sidecar file: read's)."""
READ_TTL_MS = 5 * 60 * 1000
"""How long a client may cache a read (the output never changes): the 2026 ``ttlMs``."""
LINKED_SINCE = "2025-06-18"
"""The first protocol version with ``resource_link`` content."""
_MIME_TYPES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".html": "text/html",
    ".json": "application/json",
}

Screen = Callable[[str, str], Awaitable[str]]
"""screen(text, tool) -> the text with every secret redacted."""
SidecarDir = Callable[[str], Path | None]
"""sidecar_dir(session_id) -> the session's sidecar folder, if it has one."""
Expired = Callable[[str], None]
"""expired(session_id): the link of a call without a session expired; drop its files."""


def session_owner(scope: str) -> str:
    return f"session:{scope}"


def credential_owner(ctx: ServerRequestContext[Any, Any]) -> str:
    """Who a request is, without its session: the auth identity when the app authenticates
    (the SDK's auth middleware), else the Authorization header it presented (digested)."""
    request = ctx.request
    principal: list[str | None] = []
    if request is not None:
        user = request.scope.get("user")
        if isinstance(user, AuthenticatedUser):
            who = authorization_context(user)
            principal = ["auth", who["client_id"], who["issuer"], who["subject"]]
        else:
            principal = ["header", request.headers.get("authorization")]
    digest = hashlib.sha256(json.dumps(principal).encode()).hexdigest()
    return f"credential:{digest}"


@dataclass(frozen=True, slots=True)
class _Output:
    uri: str
    path: Path
    owner: str
    session_id: str
    tool: str
    size: int
    expires_at: float | None
    """anyio.current_time() after which it is gone; None: it lives as long as its session."""

    @property
    def mime_type(self) -> str:
        return _MIME_TYPES.get(self.path.suffix, "application/octet-stream")

    def resource(self) -> types.Resource:
        return types.Resource(
            uri=self.uri,
            name=self.path.name,
            title=f"The whole output of {self.tool}",
            mime_type=self.mime_type,
            size=self.size,
        )

    def link(self) -> types.ResourceLink:
        return types.ResourceLink(
            uri=self.uri,
            name=self.path.name,
            title=f"The whole output of {self.tool}",
            description=(
                "The result above is cut; this is all of it (read it with resources/read)."
            ),
            mime_type=self.mime_type,
            size=self.size,
        )


def not_found(uri: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


class Outputs:
    """The output links of every session and credential, and the resources handlers."""

    def __init__(
        self,
        sidecar_dir: SidecarDir | None,
        expired: Expired | None = None,
        shared: SharedStore | None = None,
    ) -> None:
        self._sidecar_dir = sidecar_dir
        self._expired = expired
        self._shared = shared
        self._by_uri: dict[str, _Output] = {}
        self._by_owner: dict[str, OrderedDict[str, _Output]] = {}
        self._expiring: OrderedDict[str, _Output] = OrderedDict()
        """Links of calls without a session, oldest (so, with one TTL, first to expire)
        first."""

    async def link(
        self,
        path: str | None,
        *,
        tool: str,
        session_id: str,
        owner: str,
        sessionless: bool,
        protocol_version: str,
    ) -> types.ResourceLink | None:
        """Register the call's ``output_path`` and return the link for its result; None when
        there is nothing to link or the client's protocol has no resource links."""
        self._sweep()
        if path is None or self._sidecar_dir is None:
            return None
        if not is_version_at_least(protocol_version, LINKED_SINCE):
            return None
        folder = self._sidecar_dir(session_id)
        file = anyio.Path(path)
        if folder is None or Path(path).parent != folder:
            return None
        try:
            size = (await file.stat()).st_size
        except OSError:
            return None
        token = base64.urlsafe_b64encode(secrets.token_bytes(24)).decode()
        expires_at = anyio.current_time() + LINK_TTL_S if sessionless else None
        output = _Output(f"{SCHEME}{token}", Path(path), owner, session_id, tool, size, expires_at)
        self._by_uri[output.uri] = output
        mine = self._by_owner.setdefault(owner, OrderedDict())
        mine[output.uri] = output
        if expires_at is not None:
            self._expiring[output.uri] = output
        while len(mine) > MAX_LINKS_PER_OWNER:
            _, oldest = mine.popitem(last=False)
            self._forget(oldest)
        if expires_at is not None and self._shared is not None:
            await self._share(output, token)
        return output.link()

    async def _share(self, output: _Output, token: str) -> None:
        """Keep a sessionless link in Redis, for any replica to read."""
        assert self._shared is not None
        try:
            async with await anyio.open_file(output.path, "rb") as handle:
                data = await handle.read(MAX_READ_BYTES)
            facts = {"owner": output.owner, "tool": output.tool, "name": output.path.name}
            facts["mime"] = output.mime_type
            await self._shared.put_output(token, facts, data, LINK_TTL_S)
        except (OSError, StateUnavailable) as exc:
            log.warning("a truncated output is readable on this replica only: %s", exc)

    def end_session(self, scope: str) -> None:
        """A session ended: its links go (its files go with its session state)."""
        for output in self._by_owner.pop(session_owner(scope), {}).values():
            self._by_uri.pop(output.uri, None)

    def _forget(self, output: _Output) -> None:
        self._by_uri.pop(output.uri, None)
        self._expiring.pop(output.uri, None)
        mine = self._by_owner.get(output.owner)
        if mine is not None:
            mine.pop(output.uri, None)
            if not mine:
                del self._by_owner[output.owner]
        if output.expires_at is not None and self._expired is not None:
            self._expired(output.session_id)

    def _sweep(self) -> None:
        now = anyio.current_time()
        while self._expiring:
            oldest = next(iter(self._expiring.values()))
            if oldest.expires_at is not None and oldest.expires_at > now:
                return
            self._forget(oldest)

    def _find(self, uri: str, callers: tuple[str, ...]) -> _Output:
        self._sweep()
        output = self._by_uri.get(uri)
        if output is not None and output.expires_at is not None:
            if output.expires_at <= anyio.current_time():
                self._forget(output)
                output = None
        if output is None or output.owner not in callers:
            raise not_found(uri)
        return output

    def listed(self, callers: tuple[str, ...]) -> types.ListResourcesResult:
        """The links of the caller's session (a request without one lists none: a shared
        token would list every client's)."""
        self._sweep()
        sessions = [c for c in callers if c.startswith("session:")]
        resources = [o.resource() for c in sessions for o in self._by_owner.get(c, {}).values()]
        return types.ListResourcesResult(resources=resources, ttl_ms=0, cache_scope="private")

    async def read(
        self, uri: str, callers: tuple[str, ...], screen: Screen | None = None
    ) -> types.ReadResourceResult:
        try:
            output = self._find(uri, callers)
        except MCPError:
            if self._shared is None or not uri.startswith(SCHEME):
                raise
            return await self._read_shared(uri, callers, screen)
        try:
            async with await anyio.open_file(output.path, "rb") as handle:
                data = await handle.read(MAX_READ_BYTES)
        except OSError as exc:
            raise not_found(uri) from exc
        ttl_ms = READ_TTL_MS
        if output.expires_at is not None:
            left = int((output.expires_at - anyio.current_time()) * 1000)
            ttl_ms = max(0, min(ttl_ms, left))
        return await _result(uri, output.mime_type, data, ttl_ms, output.tool, screen)

    async def _read_shared(
        self, uri: str, callers: tuple[str, ...], screen: Screen | None
    ) -> types.ReadResourceResult:
        """A link another replica made (kept in Redis with its owner and TTL)."""
        assert self._shared is not None
        try:
            found = await self._shared.output(uri.removeprefix(SCHEME))
        except StateUnavailable as exc:
            raise not_found(uri) from exc
        if found is None or found[0].get("owner") not in callers:
            raise not_found(uri)
        facts, data, left_s = found
        mime = facts.get("mime", "application/octet-stream")
        ttl_ms = max(0, min(READ_TTL_MS, int(left_s * 1000)))
        return await _result(uri, mime, data, ttl_ms, facts.get("tool", ""), screen)


async def _result(
    uri: str, mime: str, data: bytes, ttl_ms: int, tool: str, screen: Screen | None
) -> types.ReadResourceResult:
    contents: types.TextResourceContents | types.BlobResourceContents
    if screen is not None:  # every sidecar holds text; scanned whatever its suffix says
        data = (await screen(data.decode("utf-8", "replace"), tool)).encode()
    if mime.startswith("text/") or mime == "application/json":
        text = data.decode("utf-8", "replace")
        contents = types.TextResourceContents(uri=uri, mime_type=mime, text=text)
    else:
        blob = base64.b64encode(data).decode()
        contents = types.BlobResourceContents(uri=uri, mime_type=mime, blob=blob)
    return types.ReadResourceResult(contents=[contents], ttl_ms=ttl_ms, cache_scope="private")
