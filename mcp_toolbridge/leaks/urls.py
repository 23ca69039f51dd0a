"""Secrets in the user information of a URL: only the credential is the secret, never the host.

A rule that takes "any value after a key" can take a URL's credentials with the rest of the
URL: ``generic-username`` (a component of ``generic-password``) reads ``user:`` in
``https://user:ghp_...@github.com/x.git`` as a key and takes ``ghp_...@github.com/x.git`` as
its value, and ``generic-password`` takes the whole URL after ``password=``. Replaced as found,
the host and the path would go with the secret, and the model would no longer know what the
URL was. :func:`credential_part` cuts such a value at the ``@`` that ends the user
information: what is left is the password (or, in a URL without one, the user name that holds
the token), which is then replaced alone, under the provider's rule when one also found it.
"""

from __future__ import annotations

import re

USERINFO = re.compile(r"://([^\s/?#'\"`<>\\]{1,512})@(?=[\w\[])")
"""``://<user information>@host``, matched where ``://`` follows a scheme's character: group 1
is the user information (RFC 3986: no ``/``, ``?`` or ``#`` inside), up to the last ``@``
before the host as URL parsers read it, so a password with a raw ``@`` in it is taken whole."""
SCHEME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+.-")
MAX_OCCURRENCES = 64
"""Occurrences of one value looked at (a value repeated more often is cut where those are)."""


def userinfo_ends(text: str) -> list[tuple[int, int, int]]:
    """(start of the user information, start of its password or of itself when it has none,
    the ``@`` after it) for every URL with user information in ``text``."""
    if "://" not in text or "@" not in text:
        return []
    found = []
    at = text.find("://", 1)
    while at != -1:  # str.find, then the regex there: a fast pass over long text
        match = USERINFO.match(text, at) if text[at - 1] in SCHEME_CHARS else None
        if match is not None:
            start, end = match.span(1)
            colon = text.find(":", start, end)
            found.append((start, colon + 1 if colon != -1 else start, end))
        at = text.find("://", at + 3)
    return found


def credential_part(value: str, text: str, ends: list[tuple[int, int, int]]) -> list[str]:
    """The parts of ``value`` to replace instead of it where it runs past the ``@`` ending the
    user information of a URL in ``text`` (``ends``: :func:`userinfo_ends`): the part before
    that ``@`` when it starts inside the user information, else the URL's password. Empty
    when no occurrence of ``value`` does (it is replaced as it is)."""
    if "@" not in value or not ends:
        return []
    parts: dict[str, None] = {}
    at = text.find(value)
    seen = 0
    while at != -1 and seen < MAX_OCCURRENCES:
        seen += 1
        for start, password, end in ends:
            if at <= end < at + len(value):
                parts[text[at:end] if at >= start else text[password:end]] = None
                break
        at = text.find(value, at + 1)
    return [part for part in parts if part]
