"""Redaction: secret values, ``--token=X`` arguments, URL passwords and secret-looking query
values and argument names hidden before a call is written down (the audit log) or shown to a
person (the console's confirmation)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcp_toolbridge.host import visible
from mcp_toolbridge.secrets import replace_forms

REDACTED = "***"
MAX_ARG_CHARS = 2000
MIN_SECRET_CHARS = 4
"""Secret values shorter than this are not searched for (they would redact ordinary text)."""
_SECRET_NAME = re.compile(
    r"(token|secret|passw(or)?d|pwd|api[-_]?key|apikey|access[-_]?key|auth|credential|"
    r"signature|sig|session[-_]?id|private[-_]?key)",
    re.IGNORECASE,
)


def redact_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every form of each secret value (as written, JSON-escaped, base64, hex,
    percent-encoded...: :func:`~mcp_toolbridge.secrets.secret_forms`) replaced by ``***``."""
    return replace_forms(text, (s for s in secrets if len(s) >= MIN_SECRET_CHARS), REDACTED)


def redact_argv(argv: Sequence[str], secrets: Iterable[str] = ()) -> list[str]:
    """argv with secret values, ``--token=X`` values and the value after ``--token`` hidden."""
    values = tuple(secrets)
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _ = arg.partition("=")
        if arg.startswith("-") and _SECRET_NAME.search(name):
            if eq:
                out.append(f"{name}={REDACTED}")
                continue
            hide_next = True
        out.append(_cap(redact_text(arg, values)))
    return out


def redact_url(url: str, secrets: Iterable[str] = ()) -> str:
    """The URL without a password, with secret-looking query values and secret values hidden."""
    values = tuple(secrets)
    try:
        parts = urlsplit(url)
    except ValueError:
        return _cap(redact_text(url, values))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user = userinfo.partition(":")[0]
        netloc = f"{user}:{REDACTED}@{hostport}" if ":" in userinfo else f"{REDACTED}@{hostport}"
    query = urlencode(
        [
            (k, REDACTED if _SECRET_NAME.search(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="*",
    )
    rebuilt = urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    return _cap(redact_text(rebuilt, values))


def _cap(text: str) -> str:
    if len(text) <= MAX_ARG_CHARS:
        return text
    return f"{text[:MAX_ARG_CHARS]}...(+{len(text) - MAX_ARG_CHARS} chars)"


MAX_SHOWN_ARGUMENTS = 4000
"""How much of a call's redacted arguments (as JSON) a person is shown."""


def redacted_arguments(arguments: Mapping[str, Any]) -> str:
    """A call's arguments as JSON for a person deciding on it: the value of every
    secret-looking name (``token``, ``password``, ``api_key`` ...) hidden, every URL's
    password and secret-looking query values hidden, every character that hides or rewrites
    text escaped (``host.visible``), cut to :data:`MAX_SHOWN_ARGUMENTS`."""
    text = visible(
        json.dumps(_hidden(dict(arguments)), ensure_ascii=False, sort_keys=True, indent=1)
    )
    if len(text) <= MAX_SHOWN_ARGUMENTS:
        return text
    return f"{text[:MAX_SHOWN_ARGUMENTS]} ...(+{len(text) - MAX_SHOWN_ARGUMENTS} chars)"


def _hidden(value: Any, name: str = "") -> Any:
    if name and _SECRET_NAME.search(name) and not isinstance(value, dict | list):
        return REDACTED
    if isinstance(value, dict):
        return {str(k): _hidden(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hidden(v, name) for v in value]
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    return value
