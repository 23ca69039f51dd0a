"""Why an access token was refused, for the one who sent it and for the operator.

The SDK's bearer backend only learns that a token is not valid (``verify_token`` returns
None); :data:`REFUSAL` carries the reason, set by the validator in the request's own context
(its task), to the edge that answers ``401`` (auth.py): ``error_description`` says what is
wrong with the token (expired, for another audience, from another issuer, signed with a key
the issuer does not publish...), which its holder can read in it anyway. What points at the
server's own configuration (tokens for another audience or issuer, opaque tokens without
introspection) is also logged as a warning on stderr, once per value seen (at most
:data:`MAX_WARNED` of them): a wrong ``--auth-resource`` behind a proxy refuses every
token, and the operator needs to see why. The token itself is never in either.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jwt

log = logging.getLogger("mcp_toolbridge.auth")

REFUSAL: ContextVar[str | None] = ContextVar("toolbridge_token_refusal", default=None)
"""Why this request's token was refused (None: it was not, or no token was checked)."""
MAX_WARNED = 64
MAX_SHOWN = 200
"""The longest value of a token's claim quoted in a reason."""
_warned: set[str] = set()


def shown(value: Any) -> str:
    """A claim's value as a reason may quote it: printable, bounded."""
    text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def refuse(why: str, *, operator: str | None = None) -> None:
    """Record why this request's token is refused; ``operator``: a hint at the server's
    configuration, logged once per distinct text."""
    REFUSAL.set(why)
    log.info("auth: refused a token: %s", why)
    if operator is not None and operator not in _warned and len(_warned) < MAX_WARNED:
        _warned.add(operator)
        log.warning("%s", operator)


def refuse_claims(exc: jwt.PyJWTError, token: str, *, issuer: str, resource: str | None) -> None:
    """The reason of a JWT whose signature verified and whose claims did not; ``resource``
    None: an ID token (the console's sign-in), whose audience is no server setting."""
    import jwt

    claims: dict[str, Any] = {}
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        pass
    if isinstance(exc, jwt.ExpiredSignatureError):
        refuse(f"the access token has expired; get a new one from {issuer}")
    elif isinstance(exc, jwt.ImmatureSignatureError):
        refuse("the access token is not valid yet (its nbf or iat is ahead of this server's clock)")
    elif isinstance(exc, jwt.InvalidAudienceError) and resource is None:
        refuse(f"the ID token is for {shown(claims.get('aud'))}, not for this client")
    elif isinstance(exc, jwt.InvalidAudienceError):
        audience = shown(claims.get("aud"))
        refuse(
            f"the access token is for {audience}, not for this server ({resource}): ask "
            f"{issuer} for a token for the resource {resource}",
            operator=(
                f"refused tokens for the audience {audience}: this server's resource is "
                f"{resource}; if clients reach this server at {audience}, start it with "
                f"--auth-resource {audience} (or [auth] resource)"
            ),
        )
    elif isinstance(exc, jwt.InvalidIssuerError):
        named = shown(claims.get("iss"))
        refuse(
            f"the access token was issued by {named}; this server accepts the tokens of "
            f"{issuer} alone",
            operator=f"refused tokens of the issuer {named}: --auth-issuer is {issuer}",
        )
    elif isinstance(exc, jwt.MissingRequiredClaimError):
        refuse(f"the access token has no {exc.claim!r} claim, which this server requires")
    else:
        refuse(f"the access token's claims are not valid: {shown(exc)}")
