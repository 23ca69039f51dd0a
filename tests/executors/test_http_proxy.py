"""A Runloop http tool goes out through the operator's proxy (``HTTP_PROXY``, ``HTTPS_PROXY``
in the server's environment), and the proxy changes nothing the server checks: the net scope
is judged on the target host, never the proxy's; a redirect is still followed by the server,
hop by hop, each hop judged; a proxy variable a manifest sets (an AgentPM tool's ``env``) or a
secret named like one never reaches the server's HTTP client; the proxy's credentials reach
the proxy and no call's text.

A real ``mcp-toolbridge serve`` process (the SDK client over stdio), a real forward proxy on
127.0.0.1 (below, anyio: absolute-form requests and ``CONNECT`` tunnels) and real HTTP(S)
servers. The proxy is what resolves the API's names (``api.example.test`` and the like resolve
nowhere else): a request that reached an API went through it.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import anyio.abc
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from tests.support.cli import run_cli
from tests.support.manifests import write_script
from tests.support.results import text_of
from tests.support.tls_certs import tls_contexts
from tests.support.web_fixture import Reply, Route, Seen, serving

pytestmark = pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning")

API, ELSEWHERE = "api.example.test", "metadata.example.test"
CREDENTIALS = "proxy-user:proxy-pass-0451"
HEAD_LIMIT = 64 * 1024


class ForwardProxy:
    """A forward proxy on 127.0.0.1 that knows some host names (each a port of 127.0.0.1):
    ``GET http://host:port/path`` is forwarded with ``Connection: close`` and the answer sent
    back whole; ``CONNECT host:port`` is tunnelled. Each request line is recorded in ``seen``,
    each ``Proxy-Authorization`` value in ``credentials``; an unknown host gets a 502."""

    def __init__(self, names: dict[str, int]) -> None:
        self.names = names
        self.seen: list[str] = []
        self.credentials: list[str] = []
        self.port = 0

    async def _open(self, host: str) -> anyio.abc.SocketStream | None:
        port = self.names.get(host)
        return None if port is None else await anyio.connect_tcp("127.0.0.1", port)

    async def handle(self, client: anyio.abc.SocketStream) -> None:
        async with client:
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer and len(buffer) < HEAD_LIMIT:
                    try:
                        buffer += await client.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        return
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                line, *fields = head.decode("latin-1").split("\r\n")
                method, target, _ = line.split(" ")
                self.seen.append(f"{method} {target}")
                headers = [field.partition(":") for field in fields]
                self.credentials += [
                    v.strip() for k, _, v in headers if k.lower() == "proxy-authorization"
                ]
                if method == "CONNECT":
                    await self._tunnel(client, target, buffer)
                    return
                length = next((int(v) for k, _, v in headers if k.lower() == "content-length"), 0)
                while len(buffer) < length:
                    buffer += await client.receive()
                body, buffer = buffer[:length], buffer[length:]
                url = urlsplit(target)
                upstream = await self._open(url.hostname or "")
                if upstream is None:
                    await client.send(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                    continue
                kept = [
                    f"{k}:{v}"
                    for k, _, v in headers
                    if k.lower() not in ("connection", "proxy-connection", "proxy-authorization")
                ]
                path = url.path + (f"?{url.query}" if url.query else "")
                out = "\r\n".join([f"{method} {path} HTTP/1.1", *kept, "Connection: close"])
                async with upstream:
                    await upstream.send(out.encode("latin-1") + b"\r\n\r\n" + body)
                    answer = b""
                    while True:
                        try:
                            answer += await upstream.receive()
                        except (anyio.EndOfStream, anyio.BrokenResourceError):
                            break
                await client.send(answer)

    async def _tunnel(self, client: anyio.abc.SocketStream, target: str, early: bytes) -> None:
        upstream = await self._open(target.rpartition(":")[0])
        if upstream is None:
            await client.send(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            return
        await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pump(source: anyio.abc.SocketStream, sink: anyio.abc.SocketStream) -> None:
            try:
                async for chunk in source:
                    await sink.send(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            with anyio.CancelScope(shield=True):
                await sink.send_eof()

        async with upstream, anyio.create_task_group() as tg:
            if early:
                await upstream.send(early)
            tg.start_soon(pump, client, upstream)
            tg.start_soon(pump, upstream, client)


@asynccontextmanager
async def proxying(names: dict[str, int]) -> AsyncIterator[ForwardProxy]:
    proxy = ForwardProxy(names)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    proxy.port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, proxy.handle)
        yield proxy
        tg.cancel_scope.cancel()


def _redirect(seen: Seen) -> Reply:
    return Reply(302, b"", headers={"Location": seen.query["to"][0]})


ROUTES: dict[str, Route] = {
    "/data": Reply(body=b'{"data": "from the API"}', content_type="application/json"),
    "/redirect": _redirect,
}


def _runloop(folder: Path, tools: dict[str, str], **extra: Any) -> None:
    entries = [
        {
            "id": name,
            "description": f"Gets {name} from the API",
            "transport": {"kind": "http", "method": "GET", "url": url, **extra.get(name, {})},
            "input_schema": {"type": "object"},
            "result_schema": {"type": "object"},
            "secrets": ["http_proxy"] if name == "with_secret" else [],
            "annotations": {"readOnlyHint": True},
        }
        for name, url in tools.items()
    ]
    folder.mkdir(parents=True)
    (folder / "tools.json").write_text(json.dumps({"version": 1, "tools": entries}), "utf-8")


def _agentpm(folder: Path, proxy_url: str) -> None:
    """An AgentPM tool whose entrypoint sets HTTP_PROXY (and the others) to ``proxy_url``."""
    write_script(folder / "main.py", "import json, sys\nprint(json.dumps({'ok': True}))\n")
    env = dict.fromkeys(("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY"), proxy_url)
    doc = {
        "kind": "tool",
        "name": "sets-proxy",
        "version": "1.0.0",
        "description": "Sets proxy variables for itself",
        "files": ["main.py"],
        "entrypoint": {"command": sys.executable, "args": ["main.py"], "env": env},
        "inputs": {"type": "object"},
        "outputs": {"type": "object"},
    }
    (folder / "agent.json").write_text(json.dumps(doc), "utf-8")


@asynccontextmanager
async def served(
    tmp_path: Path, paths: list[Path], env: dict[str, str], host: str = API
) -> AsyncIterator[Client]:
    policy = tmp_path / "policy.toml"
    policy.write_text(
        f'default_action = "allow"\nextends = "none"\n[requires]\nnet.hosts = ["{host}"]\n',
        "utf-8",
    )
    argv = ["-m", "mcp_toolbridge", "serve", "--no-audit", "--sandbox", "off"]
    argv += ["--no-index-cache", "--policy", str(policy), *map(str, paths)]
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    server = StdioServerParameters(
        command=sys.executable, args=argv, env={**clean, **env}, cwd=str(tmp_path)
    )
    with (tmp_path / "stderr.txt").open("w", encoding="utf-8") as log:
        async with Client(stdio_client(server, errlog=log)) as client:
            yield client


async def test_an_http_tool_goes_through_the_operators_proxy_judged_by_its_target(
    tmp_path: Path,
) -> None:
    with serving(ROUTES) as api, serving(ROUTES) as elsewhere:
        names = {API: api.port, ELSEWHERE: elsewhere.port}
        async with proxying(names) as proxy, proxying(names) as planted:
            data = f"http://{API}:{api.port}/data"
            away = quote(f"http://{ELSEWHERE}:{elsewhere.port}/data", safe="")
            _runloop(
                tmp_path / "h",
                {
                    "api_data": data,
                    "away": f"http://{ELSEWHERE}:{elsewhere.port}/data",
                    "redirected": f"http://{API}:{api.port}/redirect?to={away}",
                    "with_secret": data,
                },
                with_secret={"headers": {"X-Key": "${secret:http_proxy}"}},
            )
            _agentpm(tmp_path / "pm", f"http://127.0.0.1:{planted.port}")
            operator = f"http://{CREDENTIALS}@127.0.0.1:{proxy.port}"
            env = {"HTTP_PROXY": operator, "https_proxy": operator}
            env["TOOLBRIDGE_SECRET_HTTP_PROXY"] = f"http://127.0.0.1:{planted.port}"
            with anyio.fail_after(60):
                async with served(tmp_path, [tmp_path / "h", tmp_path / "pm"], env) as client:
                    first = await client.call_tool("api_data", {})
                    listed = {tool.name for tool in (await client.list_tools()).tools}
                    with pytest.raises(MCPError, match="Unknown tool: away"):
                        await client.call_tool("away", {})
                    redirected = await client.call_tool("redirected", {})
                    planted_call = await client.call_tool("sets-proxy", {})
                    after = await client.call_tool("api_data", {})
                    secret = await client.call_tool("with_secret", {})
    assert first.structured_content == {"data": "from the API"}, first
    assert after.structured_content == secret.structured_content == first.structured_content
    assert not planted_call.is_error, planted_call
    # The proxy (127.0.0.1, granted nothing) carried every request the scope let out, and only
    # those: the host not granted was refused before it, the redirect's second hop too.

    redirect = f"GET http://{API}:{api.port}/redirect?to={away}"
    assert proxy.seen == [f"GET {data}", redirect, f"GET {data}", f"GET {data}"]
    assert "away" not in listed and "api_data" in listed  # its host is not granted
    said = text_of(redirected)
    assert redirected.is_error and f"redirect to {ELSEWHERE}" in said and "not allowed" in said
    assert [hit.path for hit in elsewhere.hits] == []
    assert planted.seen == [] and planted.credentials == []
    expected = "Basic " + base64.b64encode(CREDENTIALS.encode()).decode()
    assert proxy.credentials and set(proxy.credentials) == {expected}
    for result in (first, redirected, planted_call, after, secret):
        assert "proxy-pass" not in json.dumps(result.model_dump(mode="json"))


async def test_an_https_tool_tunnels_through_the_proxy_and_checks_the_targets_certificate(
    tmp_path: Path,
) -> None:
    """``ALL_PROXY`` alone, an https URL: a ``CONNECT`` tunnel to the target, whose certificate
    (for api.example.test, trusted through ``SSL_CERT_FILE``) is checked end to end; the
    redirect's second hop is judged by its host as over plain HTTP."""
    server_tls, _ = tls_contexts(tmp_path, API)
    with serving(ROUTES, tls=server_tls) as api:
        async with proxying({API: api.port}) as proxy:
            data = f"https://{API}:{api.port}/data"
            away = quote(f"https://{ELSEWHERE}/data", safe="")
            tools = {"api_data": data, "redirected": f"{data[:-5]}/redirect?to={away}"}
            _runloop(tmp_path / "h", tools)
            env = {"ALL_PROXY": f"http://127.0.0.1:{proxy.port}"}
            env["SSL_CERT_FILE"] = str(tmp_path / "ca.pem")
            with anyio.fail_after(60):
                async with served(tmp_path, [tmp_path / "h"], env) as client:
                    first = await client.call_tool("api_data", {})
                    redirected = await client.call_tool("redirected", {})
    assert first.structured_content == {"data": "from the API"}, first
    assert set(proxy.seen) == {f"CONNECT {API}:{api.port}"}, proxy.seen
    assert [hit.path for hit in api.hits] == ["/data", "/redirect"]
    said = text_of(redirected)
    assert f"redirect to {ELSEWHERE}" in said and "not allowed" in said, said


@pytest.mark.parametrize(
    ("name", "value", "scheme"),
    [
        ("ALL_PROXY", f"socks4://{CREDENTIALS}@127.0.0.1:1", "socks4"),
        ("all_proxy", "socks://127.0.0.1:1/", "socks"),  # what GNOME's manual proxy sets
        ("HTTPS_PROXY", f"ftp://{CREDENTIALS}@127.0.0.1:1", "ftp"),
    ],
)
async def test_a_proxy_setting_the_client_cannot_use_is_said_and_nothing_goes_direct(
    tmp_path: Path, name: str, value: str, scheme: str
) -> None:
    """A proxy of a kind the server cannot speak: each call failed with an internal error
    (httpx2's ValueError for the scheme). It is a call error
    naming the variable and the kind, never its credentials; nothing is sent around the
    proxy, and the server goes on serving."""
    with serving(ROUTES) as api:
        _runloop(tmp_path / "h", {"api_data": f"http://{API}:{api.port}/data"})
        with anyio.fail_after(60):
            async with served(tmp_path, [tmp_path / "h"], {name: value}) as client:
                results = [await client.call_tool("api_data", {}) for _ in range(2)]
    assert api.hits == []
    for result in results:
        said = text_of(result)
        assert result.is_error and f"setting {name} names a {scheme}://" in said, said
        assert "proxy-pass" not in said and "proxy-user" not in said, said


@asynccontextmanager
async def microsocks(tmp_path: Path, user: str, password: str) -> AsyncIterator[tuple[int, Path]]:
    """A real SOCKS5 proxy (Debian's microsocks) on 127.0.0.1, asking ``user`` and
    ``password``: its port, and the file it logs each connection it makes to
    (``client[N] 127.0.0.1: connected to HOST:PORT``)."""
    binary = shutil.which("microsocks")
    if binary is None:
        pytest.skip("microsocks is not installed (apt-get install microsocks; .ci/run does)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "microsocks.log"
    argv = [binary, "-i", "127.0.0.1", "-p", str(port), "-u", user, "-P", password]
    with log.open("wb") as out:
        process = await anyio.open_process(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        with anyio.fail_after(10):  # it says nothing when it listens: try until it accepts
            while True:
                try:
                    await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                    break
                except OSError:
                    await anyio.sleep(0.01)
        yield port, log
    finally:
        process.kill()
        await process.wait()


async def test_a_socks5_proxy_carries_the_http_tools_with_its_credentials(
    tmp_path: Path,
) -> None:
    """``ALL_PROXY=socks5://user:pass@host:port`` (``ssh -D``, a SOCKS gateway) was a call
    error: the socks extra was not installed. A real SOCKS5 proxy now carries the call, the
    scope is still judged on the target, and the credentials reach the proxy, no call's text."""
    with serving(ROUTES) as api:
        async with microsocks(tmp_path, "proxy-user", "proxy-pass-0451") as (port, log):
            _runloop(tmp_path / "h", {"api_data": f"http://127.0.0.1:{api.port}/data"})
            env = {"ALL_PROXY": f"socks5://{CREDENTIALS}@127.0.0.1:{port}"}
            with anyio.fail_after(60):
                async with served(tmp_path, [tmp_path / "h"], env, "127.0.0.1") as client:
                    result = await client.call_tool("api_data", {})
                    wrong = {"ALL_PROXY": f"socks5://proxy-user:wrong@127.0.0.1:{port}"}
                async with served(tmp_path, [tmp_path / "h"], wrong, "127.0.0.1") as client:
                    refused = await client.call_tool("api_data", {})
            carried = log.read_text("utf-8")
    assert result.structured_content == {"data": "from the API"}, result
    assert carried.count(f"connected to 127.0.0.1:{api.port}") == 1, carried
    assert [hit.path for hit in api.hits] == ["/data"]
    said = text_of(refused)
    assert refused.is_error, said
    assert said.endswith("(through the proxy ALL_PROXY names) failed: Invalid username/password")
    for answer in (result, refused):
        assert "proxy-pass" not in json.dumps(answer.model_dump(mode="json"))


async def test_a_proxy_that_is_down_is_named_as_the_one_not_reached(tmp_path: Path) -> None:
    """With the operator's proxy down, a call said "could not connect to api.example.test:
    Connection refused", so the API was taken to be down. The message names the variable
    whose proxy was not reached (never its value: it holds the credentials)."""
    with socket.socket() as probe:  # a port of 127.0.0.1 that nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    _runloop(tmp_path / "h", {"api_data": f"http://{API}:8080/data"})
    env = {"http_proxy": f"http://{CREDENTIALS}@127.0.0.1:{closed}"}
    with anyio.fail_after(60):
        async with served(tmp_path, [tmp_path / "h"], env) as client:
            result = await client.call_tool("api_data", {})
    said = text_of(result)
    assert result.is_error, said
    assert f"could not connect to {API}:8080 (through the proxy http_proxy names)" in said, said
    assert "proxy-pass" not in said and "proxy-user" not in said, said


def test_a_certificate_setting_the_client_cannot_read_is_a_call_error(tmp_path: Path) -> None:
    """``SSL_CERT_FILE`` naming no file: httpx2's FileNotFoundError was an internal error."""
    _runloop(tmp_path / "h", {"api_data": f"https://{API}/data"})
    policy = tmp_path / "policy.toml"
    policy.write_text(f'default_action = "allow"\n[requires]\nnet.hosts = ["{API}"]\n', "utf-8")
    clean = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    argv = ["call", "api_data", str(tmp_path / "h"), "--policy", str(policy), "--no-audit"]
    env = {**clean, "SSL_CERT_FILE": str(tmp_path / "nowhere.pem")}
    done = run_cli([*argv, "--sandbox", "off"], env=env, cwd=tmp_path)
    error = json.loads(done.stdout)["error"]
    assert done.returncode == 1 and "(FileNotFoundError)" in error and "SSL_CERT_FILE" in error
