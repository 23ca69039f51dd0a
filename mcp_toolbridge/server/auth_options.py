"""What ``--auth-issuer`` (and the policy file's ``[auth]`` table) tells an HTTP server
(:class:`AuthOptions`), and what it refuses to start with: an issuer that is not https (http
only on a loopback address), an algorithm outside the asymmetric allow-list (never ``none``,
never an HMAC), introspection credentials without their other half, an introspection cache
beyond :data:`MAX_INTROSPECTION_CACHE_S`. tokens.py checks the tokens with them."""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit

from mcp_toolbridge.edge import is_loopback
from mcp_toolbridge.errors import ConfigError, ErrorCode

DEFAULT_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384")
KEY_TYPES = {
    **dict.fromkeys(("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), ("RSA", None)),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", "Ed25519"),
    "Ed25519": ("OKP", "Ed25519"),
}
"""The algorithms a token may be signed with, and the key type (and curve) each needs."""
LEEWAY_S = 30.0
INTROSPECTION_CACHE_S = 30.0
"""How long an active introspection answer is kept by default (never beyond the token's exp)."""
MAX_INTROSPECTION_CACHE_S = 300.0


@dataclass(frozen=True)
class AuthOptions:
    """``serve --http … --auth-issuer URL`` and the policy file's ``[auth]`` table."""

    issuer: str
    resource: str | None = None
    """This MCP endpoint's canonical URL (tokens' ``aud``); None: the URL it listens at."""
    scopes: tuple[str, ...] = ()
    """Scopes every request's token must carry (401/403 name them)."""
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    leeway_s: float = LEEWAY_S
    group_claims: tuple[str, ...] = ("groups", "roles")
    """Claims whose values are the caller's groups (a list of strings, or one string)."""
    introspection_client_id: str | None = None
    introspection_secret: str | None = field(default=None, repr=False)
    """The resource server's own client credentials at the issuer, for RFC 7662."""
    introspection_cache_s: float = INTROSPECTION_CACHE_S
    """How long an opaque token the issuer called active is taken without asking again
    (never beyond its ``exp``): a revoked token is honoured at most this long. 0: ask on
    every request."""

    def checked(self) -> AuthOptions:
        """These options, or ConfigError saying what is wrong with them."""
        if not _acceptable_url(self.issuer):
            raise invalid(
                f"the issuer {self.issuer!r} must be an https URL (http only on a loopback "
                "address), without a query or fragment"
            )
        if self.resource is not None and not _acceptable_url(self.resource):
            raise invalid(f"the resource URL {self.resource!r} must be an http(s) URL")
        unknown = [a for a in self.algorithms if a not in KEY_TYPES]
        if unknown or not self.algorithms:
            raise invalid(
                f"token algorithms {unknown or '[]'} are not allowed: use asymmetric ones "
                f"({', '.join(KEY_TYPES)}); none and HMAC (HS256...) never are"
            )
        if (self.introspection_client_id is None) != (self.introspection_secret is None):
            raise invalid("introspection needs both a client id and its secret")
        if not 0 <= self.introspection_cache_s <= MAX_INTROSPECTION_CACHE_S:
            raise invalid(
                f"introspection_cache_s = {self.introspection_cache_s} is out of range: "
                f"0 (ask the issuer on every request) to {MAX_INTROSPECTION_CACHE_S:g} seconds"
            )
        return self


def invalid(message: str) -> ConfigError:
    """An ``auth:`` setting (or the issuer it names) that cannot serve."""
    return ConfigError(f"auth: {message}", code=ErrorCode.CONFIG_INVALID)


def _acceptable_url(url: str) -> bool:
    parts = urlsplit(url)
    if parts.query or parts.fragment or not parts.hostname:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    return is_loopback(parts.hostname)
