"""Access tokens checked at the HTTP edge: the MCP SDK's ``TokenVerifier`` for tokens an
OAuth authorization server issued for this MCP server.

- **JWT access tokens** (RFC 9068) are validated here, locally, with PyJWT: the signature
  against the issuer's published keys (its ``jwks_uri``, from its RFC 8414 or OpenID
  Connect metadata), only with an algorithm of the allow-list (asymmetric ones: never
  ``none``, never an HMAC whose secret would be a public key), with a key whose type and
  ``alg`` fit that algorithm; then ``iss`` (exactly the issuer), ``aud`` (this server's
  canonical URL, RFC 8707: a token minted for another resource is refused), ``exp`` and
  ``nbf`` (with a small clock skew).
- **A JWT checked once** is remembered (by its SHA-256, the last :data:`MAX_REMEMBERED`)
  until it expires: its signature, issuer and audience cannot change, so a later request with
  the same token checks only the time (``exp`` and ``nbf``, with the skew).
- **Keys** are fetched at start-up and kept. A token signed with a key id (``kid``) not
  among them makes the server fetch the keys again (the issuer rotated them), at most once
  per :data:`REFETCH_AFTER_S` whatever the tokens say; keys older than :data:`KEYS_MAX_AGE_S`
  are fetched again before use.
- **ID tokens** of the web console's sign-in in the browser (console_login.py) are checked
  with the same keys and algorithms: ``iss``, ``aud`` the console's client, ``exp``, ``iat``,
  ``sub`` and the sign-in's ``nonce``; never remembered.
- **Opaque tokens** (anything that is not a JWS) are sent to the issuer's introspection
  endpoint (RFC 7662) when the server has introspection credentials. An active answer is
  kept (by the token's SHA-256, the last :data:`MAX_REMEMBERED`) for
  ``AuthOptions.introspection_cache_s`` (default :data:`INTROSPECTION_CACHE_S`), never beyond
  the token's own ``exp``: a token the issuer revokes is honoured at most that long. An
  inactive or failed answer is never kept (the next request asks again). With ``0`` every
  request asks, and a revoked token is refused at the next one. Without credentials opaque
  tokens are refused. At most :data:`MAX_INTROSPECTIONS` questions are out at once; a token
  that finds no place within :data:`FETCH_TIMEOUT_S` is refused (retry): before, a flood of
  made-up tokens, before any credential counted, had the server open a connection to the
  issuer for each (400 at once from 400 requests), its descriptors and the issuer's rate
  limits used up for every caller.

The token is never logged, kept beyond the request or passed on: what is remembered is keyed
by its digest and holds the caller without the token; the server turns it into a
:class:`~mcp_toolbridge.host.Caller` (``server.host.caller_of``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.provider import AccessToken

from mcp_toolbridge.errors import ExecError
from mcp_toolbridge.executors import fetch_plain
from mcp_toolbridge.server.auth_options import KEY_TYPES, AuthOptions, invalid
from mcp_toolbridge.server.refusals import REFUSAL, refuse, refuse_claims, shown

if TYPE_CHECKING:
    import jwt

log = logging.getLogger("mcp_toolbridge.auth")

REFETCH_AFTER_S = 30.0
"""An unknown key id fetches the issuer's keys again at most this often."""
KEYS_MAX_AGE_S = 3600.0
MAX_REMEMBERED = 10_000
"""Tokens remembered at most, JWTs and introspected ones each (least recently used go)."""
MAX_DOCUMENT_BYTES = 1 << 20
FETCH_TIMEOUT_S = 10.0
MAX_INTROSPECTIONS = 16
"""Introspection requests out to the issuer at once, from this process."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be (RFC 8414 path insertion, then OpenID Connect
    discovery inserted and appended), in the order the MCP authorization spec gives."""
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{base}/.well-known/oauth-authorization-server",
            f"{base}/.well-known/openid-configuration",
        ]
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{base}{path}/.well-known/openid-configuration",
    ]


async def _get_json(url: str, *, form: Mapping[str, str] | None = None, auth: str = "") -> Any:
    headers = {"Accept": "application/json"} | ({"Authorization": auth} if auth else {})
    with anyio.fail_after(FETCH_TIMEOUT_S):
        page = await fetch_plain(
            url, params={}, headers=headers, max_bytes=MAX_DOCUMENT_BYTES, form=form
        )
    if page.status != 200 or page.over_cap:
        raise ValueError(f"{url} answered {page.status} {page.reason}")
    return json.loads(page.body)


class TokenValidator:
    """The ``TokenVerifier`` of an MCP server that an OAuth issuer protects."""

    def __init__(
        self,
        options: AuthOptions,
        resource: str,
        *,
        refetch_after_s: float = REFETCH_AFTER_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.options = options.checked()
        # PyJWT (~20 ms to import) loads with a validator (--auth-issuer), not at every start;
        # a broken install still fails at start, not at the first token.
        import jwt  # noqa: F401

        self.clock = clock
        """The wall clock the remembered tokens' times are checked against (a test's own)."""
        self._refetch_after_s = refetch_after_s
        self.resource = resource
        self._audiences = list(dict.fromkeys([resource, resource.rstrip("/"), resource + "/"]))
        self.metadata: dict[str, Any] = {}
        self._keys: dict[str, dict[str, Any]] = {}
        self._unnamed: list[dict[str, Any]] = []
        self._prepared: dict[tuple[int, str], jwt.PyJWK] = {}
        self._remembered: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()
        self._introspected: OrderedDict[bytes, tuple[AccessToken, float]] = OrderedDict()
        self._asking = anyio.CapacityLimiter(MAX_INTROSPECTIONS)
        self._fetched_at = -refetch_after_s
        self._lock = anyio.Lock()

    async def start(self) -> None:
        """Discover the issuer's metadata and fetch its keys; ConfigError when it cannot be
        reached or does not describe itself as the configured issuer."""
        issuer = self.options.issuer
        tried: list[str] = []
        for url in metadata_urls(issuer):
            try:
                found = await _get_json(url)
            except (ExecError, ValueError, TimeoutError) as exc:
                tried.append(f"{url}: {getattr(exc, 'message', exc)}")
                continue
            if isinstance(found, dict) and found.get("issuer") == issuer:
                self.metadata = found
                break
            named = found.get("issuer") if isinstance(found, dict) else None
            tried.append(f"{url}: names the issuer {named!r}, not {issuer!r}")
        else:
            raise invalid(f"no metadata for the issuer {issuer} ({'; '.join(tried)})")
        if not isinstance(self.metadata.get("jwks_uri"), str):
            raise invalid(f"the issuer {issuer} publishes no jwks_uri")
        try:
            await self._fetch_keys()
        except (ExecError, ValueError, TimeoutError) as exc:
            raise invalid(f"cannot fetch the keys of {issuer}: {exc}") from exc

    @property
    def introspects(self) -> bool:
        return self.options.introspection_client_id is not None and isinstance(
            self.metadata.get("introspection_endpoint"), str
        )

    async def _fetch_keys(self) -> None:
        document = await _get_json(self.metadata["jwks_uri"])
        keys = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(keys, list):
            raise ValueError("the key set has no keys")
        usable = [k for k in keys if isinstance(k, dict) and k.get("use", "sig") == "sig"]
        self._keys = {k["kid"]: k for k in usable if isinstance(k.get("kid"), str)}
        self._unnamed = [k for k in usable if not isinstance(k.get("kid"), str)]
        self._prepared.clear()
        self._fetched_at = time.monotonic()

    async def _key_data(self, kid: str | None) -> list[dict[str, Any]]:
        """The published keys a token's ``kid`` may name, fetching again when it names none
        of them (rate-limited) or the keys are old."""
        age = time.monotonic() - self._fetched_at
        if (kid is not None and kid not in self._keys and age >= self._refetch_after_s) or (
            age > KEYS_MAX_AGE_S
        ):
            async with self._lock:
                if time.monotonic() - self._fetched_at >= self._refetch_after_s:
                    try:
                        await self._fetch_keys()
                    except (ExecError, ValueError, TimeoutError) as exc:
                        self._fetched_at = time.monotonic()  # keep the old ones for a while
                        log.warning("auth: cannot fetch the issuer's keys again: %s", exc)
        if kid is None:
            return list(self._unnamed) or list(self._keys.values())
        found = self._keys.get(kid)
        return [found] if found is not None else []

    def _prepared_key(self, data: dict[str, Any], alg: str) -> jwt.PyJWK | None:
        import jwt

        kty, crv = KEY_TYPES[alg]
        if data.get("kty") != kty or (crv is not None and data.get("crv") != crv):
            return None
        if data.get("alg", alg) != alg:
            return None
        slot = (id(data), alg)  # the key sets are replaced whole, never changed in place
        prepared = self._prepared.get(slot)
        if prepared is None:
            try:
                prepared = self._prepared[slot] = jwt.PyJWK(data, algorithm=alg)
            except jwt.PyJWTError:
                return None
        return prepared

    async def verify_token(self, token: str) -> AccessToken | None:
        """An AccessToken for a valid token issued for this server, else None."""
        digest = hashlib.sha256(token.encode()).digest()
        REFUSAL.set(None)
        if token.count(".") == 2:
            known = self._remembered.get(digest)
            if known is not None:
                access, not_before = known
                now = self.clock()
                if not_before <= now and (access.expires_at is None or now < access.expires_at):
                    self._remembered.move_to_end(digest)
                    return access.model_copy(update={"token": token})
                del self._remembered[digest]
                refuse(f"the access token has expired; get a new one from {self.options.issuer}")
                return None
            return await self._verify_jwt(token, digest)
        if not self.introspects:
            refuse(
                "the access token is not a JWT, and this server does not introspect opaque "
                f"tokens: ask {self.options.issuer} for a JWT access token",
                operator="refused opaque access tokens: set [auth] introspection_client_id "
                "and introspection_secret to have the issuer introspect them",
            )
            return None
        kept = self._introspected.get(digest)
        if kept is not None:
            if self.clock() < kept[1]:
                self._introspected.move_to_end(digest)
                return kept[0].model_copy(update={"token": token})
            del self._introspected[digest]
        return await self._introspect(token, digest)

    async def _verify_jwt(self, token: str, digest: bytes) -> AccessToken | None:
        required = ("exp", "iss", "aud")
        claims = await self._decoded(
            token, audience=self._audiences, require=required, resource=self.resource
        )
        if claims is None:
            return None
        access = self._access(token, claims)
        nbf = claims.get("nbf")
        not_before = nbf - self.options.leeway_s if isinstance(nbf, int | float) else 0.0
        _remember(self._remembered, digest, access, not_before)
        return access

    async def verify_id_token(
        self, token: str, *, client_id: str, nonce: str
    ) -> dict[str, Any] | None:
        """The claims of an OpenID Connect ID token (the console's browser sign-in) when it
        is the issuer's, for ``client_id``, of the sign-in whose ``nonce`` it carries, and
        not expired; else None. Checked as access tokens are (the issuer's keys, the
        algorithm allow-list, the leeway), never remembered."""
        claims = await self._decoded(
            token, audience=[client_id], require=("exp", "iat", "iss", "aud", "sub")
        )
        if claims is None:
            return None
        given = claims.get("nonce")
        if not isinstance(given, str) or not hmac.compare_digest(given.encode(), nonce.encode()):
            log.info("auth: refused an ID token: its nonce is not the sign-in's")
            return None
        audience = claims.get("aud")
        if isinstance(audience, list) and len(audience) > 1 and claims.get("azp") != client_id:
            log.info("auth: refused an ID token: several audiences and azp is not the client")
            return None
        return claims

    async def _decoded(
        self,
        token: str,
        *,
        audience: list[str],
        require: tuple[str, ...],
        resource: str | None = None,
    ) -> dict[str, Any] | None:
        """A JWS's claims when one of the issuer's keys verifies it with an allowed algorithm
        and its iss, aud, exp and nbf hold (with the leeway); else None (why in
        :data:`~.refusals.REFUSAL`; ``resource``: an access token's, None for an ID token)."""
        import jwt

        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            refuse("the access token is not a JWT this server can read (its header)")
            return None
        alg = header.get("alg")
        if alg not in self.options.algorithms:
            allowed = ", ".join(self.options.algorithms)
            refuse(f"the access token is signed with {shown(repr(alg))}, not one of {allowed}")
            return None
        kid = header.get("kid") if isinstance(header.get("kid"), str) else None
        for data in await self._key_data(kid):
            key = self._prepared_key(data, alg)
            if key is None:
                continue
            try:
                claims: dict[str, Any] = jwt.decode(
                    token,
                    key=key,
                    algorithms=[alg],
                    audience=audience,
                    issuer=self.options.issuer,
                    leeway=self.options.leeway_s,
                    options={"require": list(require)},
                )
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError as exc:
                refuse_claims(exc, token, issuer=self.options.issuer, resource=resource)
                return None
            return claims
        refuse(
            f"no key {self.options.issuer} publishes verifies the access token's signature "
            f"(its kid: {shown(repr(kid))})"
        )
        return None

    async def _introspect(self, token: str, digest: bytes) -> AccessToken | None:
        options = self.options
        basic = f"{options.introspection_client_id}:{options.introspection_secret}"
        auth = "Basic " + base64.b64encode(basic.encode()).decode()
        form = {"token": token, "token_type_hint": "access_token"}
        with anyio.move_on_after(FETCH_TIMEOUT_S) as waiting:
            await self._asking.acquire()
        if waiting.cancelled_caught:
            refuse(f"{options.issuer} could not be asked about the token (too many at once): retry")
            return None
        try:
            found = await _get_json(self.metadata["introspection_endpoint"], form=form, auth=auth)
        except (ExecError, ValueError, TimeoutError) as exc:
            log.warning("auth: token introspection failed: %s", getattr(exc, "message", exc))
            refuse(f"{self.options.issuer} could not be asked about the token: retry")
            return None
        finally:
            self._asking.release()
        if not isinstance(found, dict) or found.get("active") is not True:
            refuse(f"{self.options.issuer} says the access token is not active (revoked, expired)")
            return None
        now = self.clock()
        audience = found.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        checks = (
            (found.get("iss", options.issuer) == options.issuer, f"from {shown(found.get('iss'))}"),
            (any(a in self._audiences for a in audiences), f"for {shown(audience)}"),
            (
                not isinstance(found.get("exp"), int | float)
                or found["exp"] + options.leeway_s > now,
                "expired",
            ),
            (
                not isinstance(found.get("nbf"), int | float)
                or found["nbf"] - options.leeway_s < now,
                "not valid yet",
            ),
        )
        failed = [why for holds, why in checks if not holds]
        if failed:
            refuse(
                f"the access token is {', '.join(failed)} (the issuer's introspection); this "
                f"server is {self.resource} and accepts the tokens of {options.issuer}"
            )
            return None
        access = self._access(token, {"iss": options.issuer, **found})
        if options.introspection_cache_s > 0:
            until = now + options.introspection_cache_s
            if isinstance(found.get("exp"), int | float):
                until = min(until, float(found["exp"]))
            _remember(self._introspected, digest, access, until)
        return access

    def _access(self, token: str, claims: dict[str, Any]) -> AccessToken:
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = (
            scope.split() if isinstance(scope, str) else [s for s in scope if isinstance(s, str)]
        )
        groups: list[str] = []
        for name in self.options.group_claims:
            value = claims.get(name)
            values = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            groups += [v for v in values if isinstance(v, str)]
        client = claims.get("client_id", claims.get("azp"))
        subject = claims.get("sub")
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=client if isinstance(client, str) else "",
            scopes=scopes,
            expires_at=int(exp + self.options.leeway_s) if isinstance(exp, int | float) else None,
            resource=self.resource,
            subject=subject if isinstance(subject, str) else None,
            claims={"iss": claims.get("iss"), "groups": groups},
        )


def _remember(
    kept: OrderedDict[bytes, tuple[AccessToken, float]],
    digest: bytes,
    access: AccessToken,
    when: float,
) -> None:
    """Keep what a token (by its digest) was found to be, without the token itself; the
    least recently used goes beyond :data:`MAX_REMEMBERED`."""
    kept[digest] = (access.model_copy(update={"token": ""}), when)
    if len(kept) > MAX_REMEMBERED:
        kept.popitem(last=False)
