"""The Runloop http tools' shared client, made from the server's environment.

The operator's proxy settings apply (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``,
``NO_PROXY``, either case, as ``urllib.request.getproxies`` reads them), and so do
``SSL_CERT_FILE`` and ``SSL_CERT_DIR``: they are read once, from the server's own environment,
when the first call makes the client. Nothing in the server writes its environment, so neither
a manifest (an exec tool's ``env`` reaches only its process) nor a secret sets them.

An ``http://``, ``https://``, ``socks5://`` or ``socks5h://`` proxy carries the requests. One
the client cannot use (``socks://`` as GNOME sets it, ``socks4://``, ``ftp://``) made every
call fail with an internal error, httpx2's ``ValueError``. It is :class:`ClientSettingError`
now, a call error naming the variable and the kind of proxy, never its value (which may hold
the proxy's credentials), and nothing is sent: a request never goes around a proxy the
operator set."""

from __future__ import annotations

import http.cookiejar
import os
import urllib.request

import httpx2

from mcp_toolbridge.executors.http_errors import host_label

_USABLE = ("http", "https", "socks5", "socks5h")
_SETTINGS = "HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY, SSL_CERT_FILE, SSL_CERT_DIR"


class ClientSettingError(Exception):
    """The server's environment sets up an HTTP client that cannot be made (the message says
    which setting, with no value)."""


def _variable(kind: str, value: str) -> str:
    """The name of the variable that gave ``kind``'s proxy ``value``, as written."""
    wanted = f"{kind}_proxy"
    names = [k for k, given in os.environ.items() if k.lower() == wanted and given == value]
    return names[0] if names else wanted.upper()


def proxy_problem() -> str | None:
    """What is wrong with the proxies the server's environment sets for the client, or None.
    Read as httpx2 reads them (``get_environment_proxies``): ``http``, ``https`` and ``all``,
    a value without a scheme is ``http://``, ``NO_PROXY=*`` turns them all off."""
    proxies = urllib.request.getproxies_environment()
    if "*" in (host.strip() for host in proxies.get("no", "").split(",")):
        return None
    for kind in ("http", "https", "all"):
        value = proxies.get(kind)
        if not value:
            continue
        scheme = value.partition("://")[0].lower() if "://" in value else "http"
        if scheme in _USABLE:
            continue
        return (
            f"the server's proxy setting {_variable(kind, value)} names a {scheme}:// "
            "proxy, which its HTTP client cannot use: only http://, https://, socks5:// and "
            "socks5h:// proxies. Nothing was sent; the operator sets one of those there (or "
            "unsets it) and restarts the server"
        )
    return None


def proxy_variable(url: httpx2.URL) -> str | None:
    """The name of the variable whose proxy a request to ``url`` goes through, or None when it
    goes direct: ``HTTPS_PROXY`` (or ``HTTP_PROXY``) for the URL's scheme before ``ALL_PROXY``,
    as httpx2 picks them, unless ``NO_PROXY`` names the host or a domain above it. Entries
    httpx2 reads more finely (a port, an address range) are read by their host or not at all:
    they can only make a message name a proxy or not, never change where a request goes."""
    proxies = urllib.request.getproxies_environment()
    kind = next((k for k in (url.scheme, "all") if proxies.get(k)), None)
    if kind is None:
        return None
    host = url.host.lower()
    for entry in proxies.get("no", "").split(","):
        name = _no_proxy_host(entry)
        if entry.strip() == "*" or (name and (host == name or host.endswith("." + name))):
            return None
    return _variable(kind, proxies[kind])


def _no_proxy_host(entry: str) -> str:
    """The host a ``NO_PROXY`` entry names: ``.example.com``, ``*.example.com``,
    ``example.com:8080`` and ``[::1]:8080`` name ``example.com`` and ``::1``."""
    name = entry.strip().lower().lstrip("*").lstrip(".")
    if name.startswith("["):
        return name[1:].partition("]")[0]
    if name.count(":") == 1:  # a port (an IPv6 address holds several colons)
        return name.partition(":")[0]
    return name


def reached(url: httpx2.URL) -> str:
    """The host a request to ``url`` talks to, for a message: ``host_label``, and the proxy's
    variable when it goes through one (its value may hold credentials): ``api.example.com
    (through the proxy HTTPS_PROXY names)``, so that a proxy that is down is not taken for the
    API."""
    variable = proxy_variable(url)
    label = host_label(url)
    return f"{label} (through the proxy {variable} names)" if variable else label


def default_client() -> httpx2.AsyncClient:
    """A client with no cookie jar and no client-side timeouts (the per-call deadline
    governs), from the server's environment (see the module doc). Raises
    :class:`ClientSettingError`."""
    if problem := proxy_problem():
        raise ClientSettingError(problem)
    no_cookies = http.cookiejar.CookieJar(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    try:
        return httpx2.AsyncClient(
            timeout=httpx2.Timeout(None), cookies=no_cookies, follow_redirects=False
        )
    except (ValueError, ImportError, OSError, httpx2.InvalidURL) as exc:
        raise ClientSettingError(
            f"the server could not make its HTTP client from its environment "
            f"({type(exc).__name__}): the operator checks {_SETTINGS}. Nothing was sent"
        ) from None
