"""Console sessions that every replica of a service honours (``serve --http --state
redis://…``): behind a load balancer each request of one browser may reach another replica,
so a session cannot live in one process's memory.

The session cookie is signed instead: ``v1.<payload>.<signature>``, the payload naming who
it is and when it ends (:data:`SESSION_S` after sign-in), the signature an HMAC under a key
derived from the request-state keys every replica already shares (``TOOLBRIDGE_STATE_KEYS``:
the newest signs, each opens, so rotating them rotates these too). The CSRF token is an HMAC
of the session under the same key; the cookie's name is derived from it, so two services on
one host keep their sessions apart. One-time tokens (the URL each replica prints, sign-in
passes) are kept in Redis (state/console_share.py), so one issued by one replica opens on
another, once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence

SESSION_S = 12 * 3600.0
"""How long a signed console session lasts; then its person opens the console again."""
_LABEL = b"mcp-toolbridge console v1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SessionSigner:
    """Signs and opens console sessions with keys derived from the shared state keys."""

    def __init__(self, keys: Sequence[str], *, lifetime_s: float = SESSION_S) -> None:
        if not keys:
            raise ValueError("a session signer needs at least one key")
        self._keys = [hmac.new(k.encode(), _LABEL, hashlib.sha256).digest() for k in keys]
        self.lifetime_s = lifetime_s

    def _mac(self, key: bytes, what: bytes) -> bytes:
        return hmac.new(key, what, hashlib.sha256).digest()

    @property
    def tag(self) -> str:
        """A short name of the service's key (the cookie's name carries it)."""
        return self._mac(self._keys[0], b"cookie").hex()[:12]

    def derived(self, label: bytes) -> list[bytes]:
        """Keys for another use of the service's keys, apart from the sessions' (newest
        first: each replica derives the same)."""
        return [self._mac(key, label) for key in self._keys]

    def session(self, who: str, now: float | None = None) -> str:
        """A session id that opens as ``who`` on every replica until it expires."""
        ends = (time.time() if now is None else now) + self.lifetime_s
        payload = _b64(json.dumps({"w": who, "e": round(ends), "n": secrets.token_hex(8)}).encode())
        return f"v1.{payload}.{_b64(self._mac(self._keys[0], payload.encode()))}"

    def open(self, sid: str, now: float | None = None) -> str | None:
        """Who a session id stands for; None: not signed by any key, malformed or expired."""
        parts = sid.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            return None
        _, payload, signature = parts
        try:
            given = _unb64(signature)
            if not any(
                hmac.compare_digest(given, self._mac(key, payload.encode())) for key in self._keys
            ):
                return None
            facts = json.loads(_unb64(payload))
        except ValueError:
            return None
        if not isinstance(facts, dict) or not isinstance(facts.get("w"), str):
            return None
        ends = facts.get("e")
        if not isinstance(ends, int) or ends <= (time.time() if now is None else now):
            return None
        return str(facts["w"])

    def csrf(self, sid: str) -> str:
        return hmac.new(self._keys[0], b"csrf:" + sid.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, sid: str, given: str) -> bool:
        """A CSRF token of the session under any of the keys (a page rendered before a
        rotation still posts)."""
        return any(
            hmac.compare_digest(
                hmac.new(key, b"csrf:" + sid.encode(), hashlib.sha256).hexdigest().encode(),
                given.encode(),
            )
            for key in self._keys
        )
