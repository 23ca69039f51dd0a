"""Both HTTP paths fail the same way: the Runloop http tools (HttpExecutor) and the web
built-ins' GETs (fetch_pinned for web_fetch, fetch_plain for web_search) map each failure of
the exchange to one error code and one message, and cap bodies alike. Real peers on
127.0.0.1; every client limit is LIMIT_S, well inside the overall deadline WAIT_S."""

from __future__ import annotations

import gzip
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

import anyio
import httpx2
import pytest

from mcp_toolbridge.errors import ErrorCode, ExecError
from mcp_toolbridge.executors import ExecRequest, HttpExecutor, fetch_pinned, fetch_plain
from mcp_toolbridge.executors.http_errors import host_label, http_error
from tests.support.http_fixture import http_spec
from tests.support.raw_http import Answer, closed_port, raw_server, unanswered_port

WAIT_S = 5.0
LIMIT_S = 0.3
CAP = 10_000


@dataclass(frozen=True)
class Got:
    size: int
    """How many body bytes the path kept."""
    over: bool
    """Whether the path said the body was larger than the cap."""


async def runloop_tool(url: str) -> Got:
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(LIMIT_S)) as client:
        request = ExecRequest(
            spec=http_spec(url), arguments={}, timeout_s=WAIT_S, max_output_bytes=CAP
        )
        result = await HttpExecutor(client).run(request)
    return Got(result.stdout_bytes, result.truncated)


async def web_fetch_get(url: str) -> Got:
    async def pin(target: object, hop: int) -> list[str]:
        return ["127.0.0.1"]

    page = await fetch_pinned(
        url, pin, max_bytes=CAP, connect_timeout_s=LIMIT_S, read_timeout_s=LIMIT_S
    )
    return Got(len(page.body), page.over_cap)


async def web_search_get(url: str) -> Got:
    page = await fetch_plain(
        url,
        params={},
        headers={},
        max_bytes=CAP,
        connect_timeout_s=LIMIT_S,
        read_timeout_s=LIMIT_S,
    )
    return Got(len(page.body), page.over_cap)


Path = Callable[[str], Awaitable[Got]]
PATHS = pytest.mark.parametrize("path", [runloop_tool, web_fetch_get, web_search_get])


async def fails(path: Path, url: str) -> ExecError:
    with anyio.fail_after(WAIT_S + 1), pytest.raises(ExecError) as caught:
        await path(url)
    return caught.value


def response(body: bytes, *headers: str) -> bytes:
    head = ["HTTP/1.1 200 OK", "Content-Type: application/json", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


@pytest.fixture(scope="module")
def peer() -> Iterator[int]:
    bomb = gzip.compress(b"[" + b"0," * 500_000 + b"0]")
    answers = {
        "/garbage": Answer(b"this is not HTTP\r\n\r\n"),
        "/reset": Answer(response(b"[1,2", "Content-Length: 100"), reset=True),
        "/bad-gzip": Answer(
            response(b"not gzip at all", "Content-Encoding: gzip", "Content-Length: 15")
        ),
        "/brotli": Answer(response(b"\x8b\x00\x80", "Content-Encoding: br", "Content-Length: 3")),
        "/big": Answer(response(b"[" + b"0," * CAP + b"0]", f"Content-Length: {2 * CAP + 2}")),
        "/bomb": Answer(response(bomb, "Content-Encoding: gzip", f"Content-Length: {len(bomb)}")),
        "/silent": Answer(hold=True),
        "/loop": Answer(b"HTTP/1.1 302 Found\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n"),
    }
    with raw_server(answers) as port:
        yield port


def assert_error(error: ExecError, code: ErrorCode, pattern: str) -> None:
    assert error.code == code, error.message
    assert re.fullmatch(pattern, error.message, re.DOTALL), error.message


@PATHS
async def test_a_refused_connection_is_a_transport_error_naming_the_host(path: Path) -> None:
    port = closed_port()

    error = await fails(path, f"http://127.0.0.1:{port}/x")

    assert_error(error, ErrorCode.EXEC_TRANSPORT, rf"could not connect to 127\.0\.0\.1:{port}: .+")


@PATHS
async def test_a_connection_never_established_is_a_timeout_with_the_limit(path: Path) -> None:
    with unanswered_port() as port:
        error = await fails(path, f"http://127.0.0.1:{port}/x")

    assert_error(
        error,
        ErrorCode.EXEC_TIMEOUT,
        rf"could not connect to 127\.0\.0\.1:{port}: (127\.0\.0\.1: )?no connection within 0\.3s",
    )


@PATHS
async def test_a_server_that_never_answers_is_a_timeout_with_the_limit(
    path: Path, peer: int
) -> None:
    error = await fails(path, f"http://127.0.0.1:{peer}/silent")

    assert_error(
        error,
        ErrorCode.EXEC_TIMEOUT,
        rf"timed out waiting for 127\.0\.0\.1:{peer}: nothing received for 0\.3s",
    )


@PATHS
async def test_a_reply_that_is_not_http_is_a_transport_error(path: Path, peer: int) -> None:
    error = await fails(path, f"http://127.0.0.1:{peer}/garbage")

    assert_error(
        error, ErrorCode.EXEC_TRANSPORT, rf"127\.0\.0\.1:{peer} sent an invalid HTTP response: .+"
    )


@PATHS
async def test_a_connection_reset_while_reading_is_a_transport_error(path: Path, peer: int) -> None:
    error = await fails(path, f"http://127.0.0.1:{peer}/reset")

    assert_error(
        error,
        ErrorCode.EXEC_TRANSPORT,
        rf"connection to 127\.0\.0\.1:{peer} failed while reading the response: .+",
    )


@PATHS
@pytest.mark.parametrize("route", ["/bad-gzip", "/brotli"])
async def test_a_body_that_does_not_decode_is_a_transport_error(
    path: Path, peer: int, route: str
) -> None:
    error = await fails(path, f"http://127.0.0.1:{peer}{route}")

    assert_error(
        error,
        ErrorCode.EXEC_TRANSPORT,
        rf"could not decode the response from 127\.0\.0\.1:{peer}: .+",
    )


@pytest.mark.parametrize("path", [runloop_tool, web_fetch_get])  # web_search follows none
async def test_a_redirect_loop_is_a_transport_error_naming_the_last_url(
    path: Path, peer: int
) -> None:
    error = await fails(path, f"http://127.0.0.1:{peer}/loop")

    assert_error(
        error,
        ErrorCode.EXEC_TRANSPORT,
        rf"too many redirects: gave up after 5 \(the last from http://127\.0\.0\.1:{peer}/loop\); "
        "the server may be redirecting in a loop",
    )


@PATHS
@pytest.mark.parametrize("route", ["/big", "/bomb"])
async def test_a_body_over_the_cap_is_flagged_and_never_kept_past_it(
    path: Path, peer: int, route: str
) -> None:
    with anyio.fail_after(WAIT_S):
        got = await path(f"http://127.0.0.1:{peer}{route}")

    assert got.over
    assert got.size <= CAP


def _subclasses(cls: type[Exception]) -> Iterator[type[Exception]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def test_every_timeout_class_maps_to_exec_timeout_and_every_other_failure_to_exec_transport():
    request = httpx2.Request("GET", "http://h.test/", extensions={"timeout": {"read": 2.5}})
    classes = {*_subclasses(httpx2.TransportError), httpx2.DecodingError}
    failures: list[Exception] = [cls("boom", request=request) for cls in classes]
    failures += [
        httpx2.InvalidURL("bad"),
        UnicodeEncodeError("ascii", "é", 0, 1, "ordinal not in range(128)"),
    ]

    codes = {type(exc).__name__: http_error(exc, "h.test").code for exc in failures}

    timeouts = {name for name, code in codes.items() if code == ErrorCode.EXEC_TIMEOUT}
    assert timeouts == {cls.__name__ for cls in _subclasses(httpx2.TimeoutException)}
    assert set(codes.values()) == {ErrorCode.EXEC_TIMEOUT, ErrorCode.EXEC_TRANSPORT}
    read_timeout = httpx2.ReadTimeout("timed out", request=request)
    assert http_error(read_timeout, "h.test").message == (
        "timed out waiting for h.test: nothing received for 2.5s"
    )


def test_the_host_is_named_with_its_port_only_when_the_port_is_not_the_default():
    assert host_label(httpx2.URL("https://api.example/x")) == "api.example"
    assert host_label(httpx2.URL("http://api.example:8080/x")) == "api.example:8080"
    assert host_label(httpx2.URL("http://[::1]:8080/x")) == "[::1]:8080"
