from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import anyio
import httpx2
import pytest

from mcp_toolbridge import __version__
from mcp_toolbridge.errors import (
    ArgumentsError,
    ExecOutputError,
    ExecTimeoutError,
    ExecTransportError,
    PermissionDeniedError,
    SecretError,
)
from mcp_toolbridge.executors.base import ExecRequest, ExecResult, Executor
from mcp_toolbridge.executors.http import HttpExecutor, host_allowed
from mcp_toolbridge.model import ToolSpec
from tests.support.http_fixture import FixtureServer, http_spec, running_server

WAIT_S = 5.0
SECRET = "tok/en s3cr3t"


def call(
    spec: ToolSpec,
    arguments: Mapping[str, Any] | None = None,
    *,
    secrets: Mapping[str, str] | None = None,
    timeout_s: float = WAIT_S,
    max_output_bytes: int = 1024 * 1024,
) -> ExecRequest:
    return ExecRequest(
        spec=spec,
        arguments=dict(arguments or {}),
        timeout_s=timeout_s,
        secrets=dict(secrets or {}),
        max_output_bytes=max_output_bytes,
    )


async def run(executor: HttpExecutor, request: ExecRequest) -> ExecResult:
    with anyio.fail_after(WAIT_S + 1):
        return await executor.run(request)


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with running_server() as running:
        yield running


@pytest.fixture
async def executor() -> AsyncIterator[HttpExecutor]:
    async with HttpExecutor.open() as opened:
        _: Executor = opened  # mypy checks that HttpExecutor satisfies the protocol
        yield opened


class Recorder:
    """A MockTransport handler that keeps the requests it saw and answers with ``reply``."""

    def __init__(self, reply: object = None) -> None:
        self.requests: list[httpx2.Request] = []
        self.reply = {"ok": True} if reply is None else reply

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(200, json=self.reply)


async def run_mock(handler: Any, request: ExecRequest) -> ExecResult:
    """Run on a client whose transport is ``handler`` (no network), closing it afterwards."""
    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        return await run(HttpExecutor(client), request)


# Request building (MockTransport: what goes on the wire) ------------------------------------


async def test_url_placeholders_are_percent_encoded_and_other_arguments_become_the_query():
    recorder = Recorder()
    spec = http_spec("https://api.example/users/{user}/repos?sort=asc")
    arguments = {
        "user": "a b/c",
        "tags": ["x", "y z"],
        "filter": {"k": 1},
        "limit": 5,
        "flag": True,
        "skip": None,
    }

    result = await run_mock(recorder, call(spec, arguments))

    sent = recorder.requests[0]
    assert result.ok and result.value == {"ok": True} and result.http_status == 200
    assert sent.method == "GET"
    assert sent.url.raw_path.decode() == (
        "/users/a%20b%2Fc/repos?sort=asc&tags=x&tags=y%20z"
        "&filter=%7B%22k%22%3A1%7D&limit=5&flag=true"
    )
    assert sent.content == b""


async def test_arguments_not_in_the_url_are_sent_as_a_json_body_for_post():
    recorder = Recorder()
    spec = http_spec("https://api.example/items/{id}", method="post")

    await run_mock(recorder, call(spec, {"id": 7, "name": "n", "tags": ["a"]}))

    sent = recorder.requests[0]
    assert sent.method == "POST"
    assert sent.url.path == "/items/7"
    assert json.loads(sent.content) == {"name": "n", "tags": ["a"]}
    assert sent.headers["content-type"] == "application/json"


async def test_default_headers_are_sent_and_manifest_headers_override_them_with_secrets():
    recorder = Recorder()
    spec = http_spec(
        "https://api.example/x",
        headers={"accept": "application/vnd.api+json", "Authorization": "Bearer ${secret:api/key}"},
    )

    await run_mock(recorder, call(spec, secrets={"api/key": SECRET}))

    sent = recorder.requests[0]
    assert sent.headers["user-agent"] == f"mcp-toolbridge/{__version__}"
    assert sent.headers.get_list("accept") == ["application/vnd.api+json"]
    assert sent.headers["authorization"] == f"Bearer {SECRET}"


async def test_a_url_placeholder_without_its_argument_is_an_arguments_error_naming_it():
    recorder = Recorder()
    spec = http_spec("https://api.example/users/{user}")

    with pytest.raises(ArgumentsError, match=r'URL placeholder \{user\} needs the argument "user"'):
        await run_mock(recorder, call(spec, {"other": 1}))

    assert recorder.requests == []


async def test_a_secret_placeholder_the_call_did_not_resolve_is_a_secret_error_naming_it():
    spec = http_spec("https://api.example/x", headers={"X-Key": "${secret:runloop/mail/key}"})

    with pytest.raises(SecretError, match=r'secret "runloop/mail/key".*TOOLBRIDGE_SECRET_RUNLOOP'):
        await run_mock(Recorder(), call(spec, secrets={"other": "v"}))


async def test_a_secret_in_the_url_is_sent_encoded_and_redacted_from_the_result():
    recorder = Recorder(reply={"echo": f"you sent {SECRET}"})
    spec = http_spec("https://api.example/x?key=${secret:api/key}")

    result = await run_mock(recorder, call(spec, secrets={"api/key": SECRET}))

    assert recorder.requests[0].url.query == b"key=tok%2Fen%20s3cr3t"
    assert result.url == "https://api.example/x?key=[redacted:api/key]"
    assert result.value == {"echo": "you sent [redacted:api/key]"}


async def test_an_undeclared_host_is_denied_before_anything_is_sent():
    recorder = Recorder()
    spec = http_spec("https://evil.example/x", net_hosts=("api.example", "*.trusted.example"))

    with pytest.raises(PermissionDeniedError) as caught:
        await run_mock(recorder, call(spec))

    assert str(caught.value) == (
        "request to evil.example is not allowed: the tool declares net hosts "
        "api.example, *.trusted.example"
    )
    assert recorder.requests == []


async def test_a_redirect_to_another_origin_drops_secret_and_credential_headers():
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.url.host == "a.example":
            return httpx2.Response(307, headers={"Location": "https://b.example/next"})
        return httpx2.Response(200, json={})

    spec = http_spec(
        "https://a.example/start",
        method="POST",
        headers={"X-Api-Key": "${secret:k}", "Authorization": "Basic x", "X-Plain": "p"},
    )

    await run_mock(handler, call(spec, {"a": 1}, secrets={"k": SECRET}))

    second = seen[1]
    assert second.method == "POST" and json.loads(second.content) == {"a": 1}
    assert "x-api-key" not in second.headers and "authorization" not in second.headers
    assert second.headers["x-plain"] == "p"


def test_host_patterns_match_exact_hosts_subdomain_wildcards_and_ports():
    patterns = ("api.example.com", "*.svc.example", "127.0.0.1:8080")

    assert host_allowed("API.example.com", 443, patterns)
    assert host_allowed("a.b.svc.example", 80, patterns)
    assert not host_allowed("svc.example", 80, patterns)
    assert host_allowed("127.0.0.1", 8080, patterns)
    assert not host_allowed("127.0.0.1", 8081, patterns)
    assert not host_allowed("example.com", 443, patterns)


# Against a real HTTP server on 127.0.0.1 ----------------------------------------------------


async def test_get_reaches_the_server_with_path_query_and_default_headers(
    executor: HttpExecutor, server: FixtureServer
):
    spec = http_spec(server.base_url + "/echo/{name}", net_hosts=("127.0.0.1",))

    result = await run(executor, call(spec, {"name": "a/b", "q": "x y"}))

    assert result.ok and result.http_status == 200
    assert result.value["method"] == "GET"
    assert result.value["path"] == "/echo/a%2Fb"
    assert result.value["query"] == "q=x%20y"
    assert result.value["headers"]["user-agent"] == f"mcp-toolbridge/{__version__}"
    assert result.url == server.base_url + "/echo/a%2Fb?q=x%20y"


@pytest.mark.parametrize("value", ["..", ".", ""])
async def test_a_path_placeholder_cannot_leave_its_segment_and_call_another_endpoint(
    executor: HttpExecutor, server: FixtureServer, value: str
):
    """``/`` is encoded, but a value of ``..`` would still climb out of its segment:
    ``DELETE /users/../sessions`` is normalized to ``DELETE /sessions`` on its way out. An
    empty or ``.`` value drops the segment the same way. Refused before anything is sent."""
    spec = http_spec(server.base_url + "/echo/users/{user}/x", net_hosts=("127.0.0.1",))
    control = await run(executor, call(spec, {"user": "%2e%2e", "q": ".."}))
    assert control.value["path"] == "/echo/users/%252e%252e/x" and control.value["query"] == (
        "q=.."
    )  # encoded dots and dots in the query stay where they are

    with pytest.raises(ArgumentsError) as caught:
        await run(executor, call(spec, {"user": value}))

    message = str(caught.value)
    assert "URL placeholder {user}" in message and "one path segment" in message


async def test_secret_header_values_reach_the_server_but_come_back_redacted(
    executor: HttpExecutor, server: FixtureServer
):
    spec = http_spec(server.base_url + "/echo", method="PUT", headers={"X-Key": "${secret:k}"})

    result = await run(executor, call(spec, {"v": 1}, secrets={"k": SECRET}))

    assert result.value["method"] == "PUT"
    assert json.loads(result.value["body"]) == {"v": 1}
    assert result.value["headers"]["x-key"] == "[redacted:k]"


async def test_an_error_status_is_a_failed_result_with_the_status_and_a_redacted_body(
    executor: HttpExecutor, server: FixtureServer
):
    spec = http_spec(server.base_url + "/status/404", headers={"X-Key": "${secret:k}"})

    result = await run(executor, call(spec, secrets={"k": SECRET}))

    assert not result.ok and result.http_status == 404
    assert result.error is not None
    assert result.error.startswith("HTTP 404 Not Found: ")
    assert "the fixture failed on purpose" in result.error
    assert SECRET not in result.error and "[redacted:k]" in result.error
    assert result.value["error"] == "the fixture failed on purpose"


async def test_a_long_error_body_is_cut_to_an_excerpt(
    executor: HttpExecutor, server: FixtureServer
):
    result = await run(executor, call(http_spec(server.base_url + "/long-error")))

    assert result.error is not None
    assert result.error.startswith("HTTP 500 Internal Server Error: xxx")
    assert len(result.error) < 600 and result.error.endswith("…")


async def test_a_non_json_success_is_an_output_error_quoting_the_type_and_first_bytes(
    executor: HttpExecutor, server: FixtureServer
):
    with pytest.raises(ExecOutputError) as caught:
        await run(executor, call(http_spec(server.base_url + "/text")))

    assert "text/html; charset=utf-8" in str(caught.value)
    assert "<html><body>hello" in str(caught.value)


async def test_an_empty_success_body_is_an_empty_object(
    executor: HttpExecutor, server: FixtureServer
):
    result = await run(executor, call(http_spec(server.base_url + "/empty")))

    assert result.ok and result.value == {}


@pytest.mark.parametrize("route", ["/big", "/big-stream"])
async def test_a_body_over_the_cap_is_a_truncated_failure(
    executor: HttpExecutor, server: FixtureServer, route: str
):
    spec = http_spec(server.base_url + route)

    result = await run(executor, call(spec, {"n": 200_000}, max_output_bytes=10_000))

    assert not result.ok and result.truncated and result.http_status == 200
    assert result.error is not None and result.error.startswith("response larger than 10000 bytes")
    assert result.stdout_bytes <= 10_000


async def test_a_redirect_chain_within_declared_hosts_is_followed(
    executor: HttpExecutor, server: FixtureServer
):
    spec = http_spec(server.base_url + "/chain/5", net_hosts=(f"127.0.0.1:{server.port}",))

    result = await run(executor, call(spec))

    assert result.ok and result.value == {"done": True}
    assert result.url == server.base_url + "/chain/0"


async def test_more_than_five_redirects_is_a_transport_error(
    executor: HttpExecutor, server: FixtureServer
):
    with pytest.raises(ExecTransportError, match="too many redirects: gave up after 5"):
        await run(executor, call(http_spec(server.base_url + "/chain/6")))


async def test_a_redirect_to_an_undeclared_host_is_denied(
    executor: HttpExecutor, server: FixtureServer
):
    target = f"http://localhost:{server.port}/echo"
    spec = http_spec(server.base_url + "/redirect", net_hosts=("127.0.0.1",))

    with pytest.raises(PermissionDeniedError) as caught:
        await run(executor, call(spec, {"to": target}))

    assert str(caught.value) == (
        f"redirect to localhost:{server.port} is not allowed: the tool declares net hosts 127.0.0.1"
    )


@pytest.mark.parametrize(("code", "method", "body"), [(303, "GET", ""), (307, "POST", "{}")])
async def test_303_switches_post_to_get_without_a_body_and_307_keeps_both(
    executor: HttpExecutor, server: FixtureServer, code: int, method: str, body: str
):
    spec = http_spec(server.base_url + f"/redirect?code={code}&to=/echo/next", method="POST")

    result = await run(executor, call(spec))

    assert result.value["method"] == method
    assert result.value["path"] == "/echo/next"
    assert result.value["body"] == body


async def test_a_response_slower_than_the_deadline_times_out(
    executor: HttpExecutor, server: FixtureServer
):
    with pytest.raises(ExecTimeoutError, match=r"^tool timed out after 0\.3s$"):
        await run(executor, call(http_spec(server.base_url + "/slow"), timeout_s=0.3))


async def test_a_refused_connection_is_a_transport_error_naming_the_host(executor: HttpExecutor):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(ExecTransportError, match=rf"^could not connect to 127\.0\.0\.1:{port}: "):
        await run(executor, call(http_spec(f"http://127.0.0.1:{port}/x")))
