"""The SSRF address policy of web_fetch: which URLs, host names and addresses are refused.

Pure functions, no I/O. The fetch code resolves names itself and asks this module about every
address it got, then connects to exactly that address (see ``executors/http_fetch.py``).

Refused:

- URLs: any scheme but http and https; userinfo (``user:pass@``); a backslash, whitespace or a
  control character in the authority.
- Names: ``localhost`` and anything under it (``localhost.``, ``a.localhost``), and the
  special-use or internal suffixes ``.local``, ``.internal`` (``metadata.google.internal``),
  ``.localdomain``, ``.home.arpa``; names with characters other than letters, digits, ``-``
  and ``_``, or with empty labels.
- IPv4 literals in every spelling a resolver accepts (``127.1``, ``0x7f000001``,
  ``2130706433``, ``0177.0.0.1``): a host whose last label is numeric is parsed as an IPv4
  address the way inet_aton and browsers do, never handed to DNS.
- Addresses that are not global unicast: loopback, private, shared (100.64/10), link-local
  (169.254/16 and its cloud metadata address, fe80::/10), site-local (fec0::/10, which
  Python's ``is_global`` counts as global), unique-local, multicast, reserved,
  unspecified, documentation; and IPv6 forms that embed an IPv4 address (IPv4-mapped
  ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, 6to4 2002::/16, NAT64 64:ff9b::/96 and
  64:ff9b:1::/48, Teredo 2001::/32), whatever the embedded address; IPv6 zone ids.

``allow_loopback`` (for tests only) lets 127.0.0.0/8 and ::1 through; every other refusal stays.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOWED_SCHEMES = frozenset({"http", "https"})
BLOCKED_NAME_SUFFIXES = ("localhost", "local", "internal", "localdomain", "home.arpa")
"""A name equal to one of these, or ending in ``.`` plus one of these, is refused."""

_EMBEDDING_NETWORKS: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (ipaddress.IPv6Network("::ffff:0:0/96"), "an IPv4-mapped"),
    (ipaddress.IPv6Network("::/96"), "an IPv4-compatible"),
    (ipaddress.IPv6Network("2002::/16"), "a 6to4"),
    (ipaddress.IPv6Network("64:ff9b::/96"), "a NAT64"),
    (ipaddress.IPv6Network("64:ff9b:1::/48"), "a local-use NAT64"),
    (ipaddress.IPv6Network("2001::/32"), "a Teredo"),
)
_NAME = re.compile(r"^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?$")
_NUMERIC_LABEL = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)$")
_BAD_AUTHORITY_CHARS = re.compile(r"[\\\s\x00-\x1f\x7f]")


class HostRefused(ValueError):
    """A URL, host or address the policy refuses; the message says which and why."""


@dataclass(frozen=True, slots=True)
class NetPolicy:
    """The address policy. ``allow_loopback`` is for tests only (see the module doc)."""

    allow_loopback: bool = False

    def check_address(self, address: str | IPAddress) -> IPAddress:
        """The parsed address when it may be connected to; :class:`HostRefused` otherwise."""
        ip = _parse_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address):
            if ip.scope_id:
                raise HostRefused(f"address {ip} has a zone id; zone-scoped addresses are refused")
            for network, kind in _EMBEDDING_NETWORKS:
                if ip in network and ip != ipaddress.IPv6Address("::1") and ip.packed != bytes(16):
                    raise HostRefused(
                        f"address {ip} is {kind} IPv6 address (it embeds an IPv4 address); "
                        "such forms are refused because they can reach internal hosts"
                    )
        if ip.is_loopback:
            if self.allow_loopback:
                return ip
            raise HostRefused(f"address {ip} is a loopback address (this machine)")
        site_local = isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local
        if not ip.is_global or ip.is_multicast or ip.is_reserved or ip.is_unspecified or site_local:
            raise HostRefused(f"address {ip} is {_describe(ip)}, not a public internet address")
        return ip

    def check_host(self, host: str) -> IPAddress | None:
        """Check a URL's host before any lookup.

        An IP literal (any spelling) is checked with :meth:`check_address` and returned; a
        name is checked against the name rules and None is returned (resolve it, then check
        every address). Raises :class:`HostRefused`.
        """
        literal = parse_ip_literal(host)
        if literal is not None:
            return self.check_address(literal)
        name = normalize_name(host)
        for suffix in BLOCKED_NAME_SUFFIXES:
            if name == suffix or name.endswith("." + suffix):
                if suffix == "localhost" and self.allow_loopback:
                    return None
                raise HostRefused(
                    f"host {host!r} is a local or internal name (.{suffix}); only public "
                    "internet hosts can be fetched"
                )
        return None


def normalize_name(host: str) -> str:
    """A host name lower-cased without its trailing dot; :class:`HostRefused` when it is not
    a plain DNS name (letters, digits, ``-``, ``_``; no empty label)."""
    name = host.lower()
    if name.endswith("."):
        name = name[:-1]
    labels = name.split(".")
    if not name or len(name) > 253 or not all(_NAME.match(label) for label in labels):
        raise HostRefused(
            f"host {host!r} is not a valid DNS name (use letters, digits, '-' and '.'; "
            "no empty labels, no percent-encoding)"
        )
    return name


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a host names literally, or None for a DNS name.

    Accepts ``[v6]`` and bare IPv6, dotted IPv4, and the legacy IPv4 forms resolvers accept
    (1 to 4 parts, each decimal, octal with a leading ``0`` or hex with ``0x``; the last part
    fills the remaining bytes). A host whose last label is numeric but which is not a valid
    IPv4 address raises :class:`HostRefused` rather than being looked up.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        return _parse_address(text)
    if text.endswith("."):
        text = text[:-1]
    parts = text.split(".")
    if not parts or not _NUMERIC_LABEL.match(parts[-1]):
        return None
    return _legacy_ipv4(host, parts)


def check_url_text(url: str) -> None:
    """Refuse URL text the fetcher must never parse leniently: control characters or
    whitespace anywhere, a backslash or ``@`` in the authority, a scheme other than http(s)."""
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        raise HostRefused("the URL contains a control character (NUL, newline, ...)")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in ALLOWED_SCHEMES:
        shown = scheme.lower() if sep else url[:40]
        raise HostRefused(
            f"only http:// and https:// URLs can be fetched, not {shown!r}; give an absolute URL"
        )
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    if "@" in authority:
        raise HostRefused(
            "URLs with credentials (user:password@host) are refused; remove the part before '@'"
        )
    if _BAD_AUTHORITY_CHARS.search(authority):
        raise HostRefused("the URL's host part contains a backslash or whitespace")


def _legacy_ipv4(host: str, parts: list[str]) -> ipaddress.IPv4Address:
    if len(parts) > 4:
        raise HostRefused(f"host {host!r} looks like an IPv4 address but has too many parts")
    values: list[int] = []
    for part in parts:
        try:
            if part[:2].lower() == "0x":
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            raise HostRefused(f"host {host!r} is not a valid IPv4 address") from None
    *head, last = values
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(values)):
        raise HostRefused(f"host {host!r} is not a valid IPv4 address (a part is too large)")
    number = last
    for index, value in enumerate(head):
        number |= value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def _parse_address(text: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        raise HostRefused(f"{text!r} is not a valid IP address") from None


def _describe(ip: IPAddress) -> str:
    if ip.is_unspecified:
        return "the unspecified address"
    if ip.is_link_local:
        return "a link-local address (this includes cloud metadata services)"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:
        return "a site-local address (fec0::/10: deprecated, still routed on some networks)"
    if ip.is_private:
        return "a private-network address"
    if isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.IPv4Network("100.64.0.0/10"):
        return "a carrier-grade NAT (shared) address"
    return "a reserved or special-purpose address"
