"""The MCP endpoint as an OAuth 2.1 resource server (the MCP authorization spec, both eras).

- ``GET /.well-known/oauth-protected-resource<path>`` serves this server's protected
  resource metadata (RFC 9728: the resource's canonical URL, its authorization server, the
  scopes), through the SDK's route; the same at ``/.well-known/oauth-protected-resource``.
- Every request to the MCP endpoint needs ``Authorization: Bearer <access token>``, checked by
  the SDK's ``BearerAuthBackend`` with our :class:`~.tokens.TokenValidator`. Without a valid
  token: ``401`` with ``WWW-Authenticate: Bearer resource_metadata="…"`` (and ``scope="…"``
  when scopes are required; ``error="invalid_token"`` when a token was sent). A token without
  a required scope: ``403`` with ``error="insufficient_scope"`` and the scopes needed. A token
  in the URL's query (``access_token=``) is refused with ``400 invalid_request`` before
  anything else, valid or not: it would end up in logs and browser histories. A refused
  token's ``error_description`` says why (refusals.py: expired, another audience...).
- A validated token becomes the request's caller (:func:`~.tokens.caller_of`); the SDK binds
  a stateful session to the identity that opened it (another identity gets 404).
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import parse_qsl

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from mcp_toolbridge.edge import ASGIApp, Receive, Scope, Send, send_json_reply
from mcp_toolbridge.server.auth_options import AuthOptions
from mcp_toolbridge.server.refusals import REFUSAL
from mcp_toolbridge.server.tokens import TokenValidator

RESOURCE_NAME = "mcp-toolbridge"
ROOT_METADATA = "/.well-known/oauth-protected-resource"
QUERY_TOKEN = (
    "access tokens are not accepted in the URL (it ends up in logs and histories): send it "
    "in the Authorization header as 'Bearer <token>'"
)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class RequireCaller:
    """ASGI wrapper of the MCP endpoint: only requests with a validated token that carries
    the required scopes reach it."""

    def __init__(
        self, app: ASGIApp, *, scopes: Sequence[str], metadata_url: str, issuer: str
    ) -> None:
        self._app = app
        self._scopes = tuple(scopes)
        self._metadata_url = metadata_url
        self._issuer = issuer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        if any(name == "access_token" for name, _ in parse_qsl(query, keep_blank_values=True)):
            await self._refuse(send, 400, "invalid_request", QUERY_TOKEN)
            return
        user = scope.get("user")
        if not isinstance(user, AuthenticatedUser):
            sent = any(k.lower() == b"authorization" for k, _ in scope.get("headers", []))
            if sent:
                why = REFUSAL.get() or (
                    "the access token is invalid, expired, revoked, or not issued for this "
                    f"server; get a new one from {self._issuer} for this server"
                )
                await self._refuse(send, 401, "invalid_token", why)
            else:
                why = (
                    f"this server needs an OAuth access token from {self._issuer}: sign in "
                    f"there (this server's metadata: {self._metadata_url}) and send it as "
                    "'Authorization: Bearer <token>'"
                )
                await self._refuse(send, 401, None, why)
            return
        missing = [s for s in self._scopes if s not in user.scopes]
        if missing:
            why = f"the access token lacks the scope {' '.join(missing)}; ask for it and retry"
            await self._refuse(send, 403, "insufficient_scope", why)
            return
        await self._app(scope, receive, send)

    async def _refuse(self, send: Send, status: int, error: str | None, why: str) -> None:
        parts = [f"resource_metadata={_quoted(self._metadata_url)}"]
        if self._scopes:
            parts.append(f"scope={_quoted(' '.join(self._scopes))}")
        if error is not None:
            parts += [f"error={_quoted(error)}", f"error_description={_quoted(why)}"]
        value = {"error": error or "unauthorized", "error_description": why}
        challenge = (b"www-authenticate", ("Bearer " + ", ".join(parts)).encode())
        await send_json_reply(send, status, value, headers=[challenge])


class ResourceServer:
    """What makes an MCP endpoint a protected resource: its token validator, the metadata
    route, and the middleware and wrapper that check each request."""

    def __init__(self, options: AuthOptions, resource: str) -> None:
        self.options = options
        self.resource = resource
        self.validator = TokenValidator(options, resource)
        # The SDK's settings of a resource server; the URLs kept as written (a path-less
        # issuer without a trailing slash: clients compare issuers as strings). The token's
        # audience is checked by the validator (validate_token_resource off).
        self.settings = AuthSettings(
            issuer_url=options.issuer,
            resource_server_url=resource,
            required_scopes=list(options.scopes) or None,
            validate_token_resource=False,
        )
        assert self.settings.resource_server_url is not None
        self.metadata_url = str(build_resource_metadata_url(self.settings.resource_server_url))

    async def start(self) -> None:
        """Discover the issuer and fetch its keys (ConfigError when it cannot)."""
        await self.validator.start()

    def routes(self) -> list[Route]:
        """The metadata at ``/.well-known/oauth-protected-resource/mcp`` (RFC 9728, the URL
        the 401 names) and at the root one too, which a client that reads no
        ``WWW-Authenticate`` tries next (the MCP authorization spec's fallback)."""
        settings = self.settings
        assert settings.resource_server_url is not None
        found = create_protected_resource_routes(
            resource_url=settings.resource_server_url,
            authorization_servers=[settings.issuer_url],
            scopes_supported=settings.required_scopes,
            resource_name=RESOURCE_NAME,
        )
        if found[0].path != ROOT_METADATA:
            found.append(Route(ROOT_METADATA, found[0].endpoint, methods=["GET", "OPTIONS"]))
        return found

    def middleware(self) -> list[Middleware]:
        return [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(self.validator)),
            Middleware(AuthContextMiddleware),
        ]

    def protect(self, app: ASGIApp) -> ASGIApp:
        return RequireCaller(
            app,
            scopes=self.options.scopes,
            metadata_url=self.metadata_url,
            issuer=self.options.issuer,
        )
