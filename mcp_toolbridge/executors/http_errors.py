"""The one translation of httpx2's exceptions into the call errors a model sees.

Both HTTP paths use it: the Runloop http tools (:mod:`.http`) and the web built-ins' GETs
(:mod:`.http_fetch`). Every message names the host (``host:port`` when the port is not the
scheme's default):

======================================  =====================================================
httpx2 raised                            the model sees
======================================  =====================================================
``ConnectError``                         ``exec.transport``: could not connect to H: <reason>
``ConnectTimeout``                       ``exec.timeout``: could not connect to H: no
                                         connection within Ns
``ReadTimeout``, ``WriteTimeout``,       ``exec.timeout``: timed out waiting for H / sending
``PoolTimeout``                          the request to H / waiting for a connection to H,
                                         with the limit in seconds
``RemoteProtocolError``                  ``exec.transport``: H sent an invalid HTTP response
``ReadError``                            ``exec.transport``: connection to H failed while
                                         reading the response
``DecodingError``                        ``exec.transport``: could not decode the response
``TransportError``, ``InvalidURL``       ``exec.transport``: request to H failed
``UnicodeEncodeError`` (headers)         ``exec.transport``: a header value is not ASCII
======================================  =====================================================

A redirect loop is ``exec.transport`` too (:func:`too_many_redirects`), on both paths.

A timeout is a timeout whichever phase it hit: the limit in the message is the one the
request carried (httpx2 records the client's ``Timeout`` in the request's extensions).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx2

from mcp_toolbridge.errors import ExecError, ExecTimeoutError, ExecTransportError

Scrub = Callable[[str], str]
"""Redacts secrets from a message before it is raised."""

TRANSLATED: tuple[type[Exception], ...] = (
    httpx2.TransportError,
    httpx2.DecodingError,
    httpx2.InvalidURL,
    UnicodeEncodeError,
)
"""What :func:`translated` turns into call errors; anything else passes through."""

_PHASES: dict[type[httpx2.TimeoutException], str] = {
    httpx2.ConnectTimeout: "connect",
    httpx2.ReadTimeout: "read",
    httpx2.WriteTimeout: "write",
    httpx2.PoolTimeout: "pool",
}


def as_is(text: str) -> str:
    """The :data:`Scrub` that keeps the text as it is (no secrets are in play)."""
    return text


def host_label(url: httpx2.URL) -> str:
    """``host``, or ``host:port`` when the URL names a port that is not its scheme's default
    (an IPv6 address in brackets then: ``[::1]:8080``)."""
    if url.port is None:
        return url.host
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{host}:{url.port}"


def detail(exc: BaseException) -> str:
    """The exception's own text, or its class name when it has none."""
    return str(exc) or type(exc).__name__


def timeout_limit(exc: httpx2.TimeoutException) -> float | None:
    """The limit (seconds) of the phase that timed out, from the request's timeout extension."""
    phase = next((name for cls, name in _PHASES.items() if isinstance(exc, cls)), None)
    try:
        limits = exc.request.extensions.get("timeout") or {}
    except RuntimeError:  # raised before a request was attached
        return None
    limit = limits.get(phase) if phase else None
    return float(limit) if isinstance(limit, int | float) else None


def connect_reason(exc: httpx2.ConnectError | httpx2.ConnectTimeout) -> str:
    """Why a connection failed, for ``could not connect to H: <reason>``."""
    if isinstance(exc, httpx2.ConnectTimeout):
        limit = timeout_limit(exc)
        return f"no connection within {limit:g}s" if limit is not None else detail(exc)
    return detail(exc)


def http_error(exc: Exception, host: str, *, tool: str = "", scrub: Scrub = as_is) -> ExecError:
    """The call error for ``exc``, raised while talking to ``host`` (see the module doc)."""

    def transport(text: str) -> ExecError:
        return ExecTransportError(scrub(text), tool=tool)

    def timeout(text: str) -> ExecError:
        return ExecTimeoutError(scrub(text), tool=tool)

    if isinstance(exc, httpx2.ConnectTimeout):
        return timeout(f"could not connect to {host}: {connect_reason(exc)}")
    if isinstance(exc, httpx2.ConnectError):
        return transport(f"could not connect to {host}: {connect_reason(exc)}")
    if isinstance(exc, httpx2.TimeoutException):
        limit = timeout_limit(exc)
        waited = f"{limit:g}s" if limit is not None else "the client's limit"
        if isinstance(exc, httpx2.WriteTimeout):
            return timeout(f"timed out sending the request to {host}: nothing sent for {waited}")
        if isinstance(exc, httpx2.PoolTimeout):
            return timeout(f"timed out waiting for a connection to {host}: none free in {waited}")
        return timeout(f"timed out waiting for {host}: nothing received for {waited}")
    if isinstance(exc, httpx2.RemoteProtocolError):
        return transport(f"{host} sent an invalid HTTP response: {detail(exc)}")
    if isinstance(exc, httpx2.ReadError):
        return transport(f"connection to {host} failed while reading the response: {detail(exc)}")
    if isinstance(exc, httpx2.DecodingError):
        return transport(f"could not decode the response from {host}: {detail(exc)}")
    if isinstance(exc, UnicodeEncodeError):
        return transport(f"request to {host} has a header value that is not ASCII: {exc.reason}")
    return transport(f"request to {host} failed: {detail(exc)}")


def too_many_redirects(
    limit: int, last: str, *, tool: str = "", scrub: Scrub = as_is
) -> ExecTransportError:
    """Redirects were followed ``limit`` times; ``last`` (a URL) redirected once more."""
    return ExecTransportError(
        scrub(
            f"too many redirects: gave up after {limit} (the last from {last}); the server may "
            "be redirecting in a loop"
        ),
        tool=tool,
    )


@contextmanager
def translated(host: str, *, tool: str = "", scrub: Scrub = as_is) -> Iterator[None]:
    """Raise httpx2's exceptions (and header encoding failures) inside as call errors."""
    try:
        yield
    except TRANSLATED as exc:
        raise http_error(exc, host, tool=tool, scrub=scrub) from exc
