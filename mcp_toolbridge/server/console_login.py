"""The issuer's side of the web console's sign-in in the browser (``serve --http --auth-issuer
URL --console … --console-client-id ID``; the browser's side, its state and cookies, is
console/login.py): the authorization request and the redemption of its code, with the
console's OAuth client, at the authorization server that protects the MCP endpoint.

- **The authorization request** (OAuth 2.1, RFC 7636, RFC 8707): ``response_type=code``,
  the console's client id and redirect URI, the PKCE challenge (S256), ``state``, ``nonce``,
  ``resource`` = this MCP server's canonical URL (the access token's audience), and the scopes
  the MCP endpoint requires, with ``openid`` first when the issuer is an OpenID provider.
- **The code** is redeemed at the issuer's token endpoint with the PKCE verifier and the
  client's credentials (HTTP Basic, or in the form when the issuer takes only that; a public
  client sends its id alone), through the bounded fetch the introspection uses.
- **The access token** is checked by the MCP endpoint's own validator (tokens.py: signature,
  issuer, audience, expiry, keys; introspection for an opaque one) and must carry the scopes
  the endpoint requires: a token the endpoint would refuse opens no console. **The ID token**
  (when ``openid`` was asked) is checked with the same keys and must carry the sign-in's
  nonce and name the same subject. Neither token is kept, logged or passed on: the caller
  they name is all that leaves here.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any
from urllib.parse import quote, urlencode

import anyio

from mcp_toolbridge.errors import ExecError
from mcp_toolbridge.executors import fetch_plain
from mcp_toolbridge.host import Caller, SignInRefused
from mcp_toolbridge.server.auth import ResourceServer
from mcp_toolbridge.server.host import caller_from
from mcp_toolbridge.server.tokens import FETCH_TIMEOUT_S, MAX_DOCUMENT_BYTES

log = logging.getLogger("mcp_toolbridge.auth")


class IssuerLogin:
    """The console's OAuth client at the issuer of ``guard`` (its metadata is read when the
    server starts, before any sign-in)."""

    def __init__(self, guard: ResourceServer) -> None:
        self._guard = guard

    @property
    def issuer(self) -> str:
        return self._guard.options.issuer

    @property
    def resource(self) -> str:
        """This MCP endpoint's canonical URL (the tokens' audience)."""
        return self._guard.resource

    @property
    def _metadata(self) -> dict[str, Any]:
        return self._guard.validator.metadata

    @property
    def openid(self) -> bool:
        """Whether the issuer is an OpenID provider (then an ID token with the nonce is
        asked for, and required)."""
        scopes = self._metadata.get("scopes_supported")
        return (isinstance(scopes, list) and "openid" in scopes) or isinstance(
            self._metadata.get("id_token_signing_alg_values_supported"), list
        )

    def _endpoint(self, name: str) -> str:
        found = self._metadata.get(name)
        if not isinstance(found, str):
            raise SignInRefused(
                f"the issuer {self.issuer} publishes no {name} in its metadata, so the console "
                f"cannot sign you in there; use GET <console>/sign-in with an access token",
                status=503,
            )
        return found

    def authorization_url(
        self, *, client_id: str, redirect_uri: str, state: str, nonce: str, challenge: str
    ) -> str:
        """Where the browser goes to sign in (SignInRefused 503: the issuer has no
        authorization endpoint)."""
        endpoint = self._endpoint("authorization_endpoint")
        scopes = (["openid"] if self.openid else []) + list(self._guard.options.scopes)
        params = {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "state": state,
            "nonce": nonce,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": self.resource,
        }
        if scopes:
            params["scope"] = " ".join(dict.fromkeys(scopes))
        return endpoint + ("&" if "?" in endpoint else "?") + urlencode(params)

    async def sign_in(
        self,
        *,
        code: str,
        verifier: str,
        redirect_uri: str,
        nonce: str,
        client_id: str,
        secret: str | None,
    ) -> Caller:
        """Redeem ``code`` and check what the issuer gives: the caller the access token names
        (SignInRefused, with a page's status, when the issuer refuses or a token fails)."""
        answer = await self._redeem(code, verifier, redirect_uri, client_id, secret)
        access = answer.get("access_token")
        if not isinstance(access, str) or str(answer.get("token_type", "")).lower() != "bearer":
            raise SignInRefused("the issuer's answer holds no bearer access token", status=502)
        subject = None
        if self.openid:
            id_token = answer.get("id_token")
            claims = (
                await self._guard.validator.verify_id_token(
                    id_token, client_id=client_id, nonce=nonce
                )
                if isinstance(id_token, str)
                else None
            )
            if claims is None:
                raise SignInRefused(
                    "the issuer's ID token is missing or not valid for this sign-in (its "
                    "signature, issuer, audience, expiry or nonce): start again",
                    status=401,
                )
            subject = claims.get("sub")
        checked = await self._guard.validator.verify_token(access)
        if checked is None:
            raise SignInRefused(
                "the issuer's access token is not valid for this server (its signature, "
                f"issuer, audience {self.resource} or expiry): the issuer must issue it for "
                "this resource (RFC 8707)",
                status=401,
            )
        missing = [s for s in self._guard.options.scopes if s not in checked.scopes]
        if missing:
            raise SignInRefused(
                f"the access token lacks the scope {' '.join(missing)} this server requires",
                status=403,
            )
        caller = caller_from(checked)
        if subject is not None and subject != caller.subject:
            raise SignInRefused(
                "the ID token and the access token name different people", status=401
            )
        return caller

    async def _redeem(
        self, code: str, verifier: str, redirect_uri: str, client_id: str, secret: str | None
    ) -> dict[str, Any]:
        endpoint = self._endpoint("token_endpoint")
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "code_verifier": verifier,
            "resource": self.resource,
        }
        headers = {"Accept": "application/json"}
        methods = self._metadata.get("token_endpoint_auth_methods_supported")
        if secret is None:
            form["client_id"] = client_id
        elif isinstance(methods, list) and "client_secret_basic" not in methods:
            form |= {"client_id": client_id, "client_secret": secret}
        else:  # RFC 6749 2.3.1: each part form-encoded, then Basic
            pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        try:
            with anyio.fail_after(FETCH_TIMEOUT_S):
                page = await fetch_plain(
                    endpoint, params={}, headers=headers, max_bytes=MAX_DOCUMENT_BYTES, form=form
                )
        except (ExecError, TimeoutError) as exc:
            log.warning("console sign-in: the token endpoint failed: %s", exc)
            raise SignInRefused(
                f"the issuer's token endpoint did not answer ({getattr(exc, 'message', exc)})",
                status=502,
            ) from exc
        try:
            answer = json.loads(page.body)
        except ValueError:
            answer = None
        if page.status != 200 or page.over_cap or not isinstance(answer, dict):
            error = answer.get("error") if isinstance(answer, dict) else None
            about = answer.get("error_description") if isinstance(answer, dict) else None
            said = ": ".join(str(x)[:300] for x in (error, about) if x) or f"HTTP {page.status}"
            log.info("console sign-in: the issuer refused the code: %s", said)
            raise SignInRefused(f"the issuer refused to redeem the sign-in: {said}", status=502)
        return answer
