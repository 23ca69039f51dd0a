from __future__ import annotations

import functools
import tracemalloc
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import pytest

from mcp_toolbridge.builtins.session import Sessions
from mcp_toolbridge.builtins.web.fetch import SPEC, WebFetchTool
from mcp_toolbridge.errors import (
    ArgumentsError,
    ExecError,
    ExecTimeoutError,
    ExecTransportError,
    PermissionDeniedError,
)
from mcp_toolbridge.executors.base import CallContext, ExecRequest, ExecResult
from mcp_toolbridge.schemas import compile_schema
from tests.support.tls_certs import tls_contexts
from tests.support.web_fixture import Reply, Seen, WebServer, serving

WAIT_S = 10.0
PUBLIC_UNREACHABLE = "93.184.216.34"

PAGE = b"""<!doctype html><html><head><title>Test page</title>
<style>body { color: red }</style><script>var leaked = "SCRIPT-TEXT";</script></head>
<body><h1>Main heading</h1>
<p>Some <b>bold</b> text with a <a href="https://example.org/x">link</a>.</p>
<ul><li>one</li><li>two</li></ul>
<noscript>NOSCRIPT-TEXT</noscript><iframe src="/ad">IFRAME-TEXT</iframe>
<script>document.write("SCRIPT-TWO")</script></body></html>"""


class Resolver:
    """A test DNS: host -> answers, one per call (the last answer repeats); records calls."""

    def __init__(self, table: Mapping[str, Sequence[Sequence[str]]]) -> None:
        self.table = table
        self.calls: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        answers = self.table.get(host)
        if answers is None:
            raise OSError(f"no such test host {host}")
        seen = self.calls.count(host)
        return list(answers[min(seen, len(answers)) - 1])


def resolver(**hosts: str | list[str]) -> Resolver:
    table = {
        name.replace("_", "."): [[value] if isinstance(value, str) else value]
        for name, value in hosts.items()
    }
    return Resolver(table)


def redirect(seen: Seen) -> Reply:
    return Reply(302, b"", headers={"Location": seen.query["to"][0]})


def routes(**extra: Any) -> dict[str, Any]:
    return {
        "/page": Reply(body=PAGE),
        "/redirect": redirect,
        "/secret": Reply(body=b"internal secret", content_type="text/plain"),
        "/loop": Reply(302, b"", headers={"Location": "/loop"}),
        **extra,
    }


async def fetch(tool: WebFetchTool, url: str, session: str = "s1", **args: Any) -> ExecResult:
    arguments = {"url": url, **args}
    assert compile_schema(SPEC.input_schema).validate(arguments) == []
    with anyio.fail_after(WAIT_S):
        return await tool.run(
            ExecRequest(
                spec=tool.spec,
                arguments=arguments,
                timeout_s=WAIT_S,
                context=CallContext(session_id=session),
            )
        )


def loopback_tool(dns: Resolver, **kwargs: Any) -> WebFetchTool:
    return WebFetchTool(Sessions(), allow_loopback=True, resolver=dns, **kwargs)


def redirect_url(server: WebServer, to: str) -> str:
    return server.url(f"/redirect?to={quote(to, safe='')}", host="public.test")


async def test_html_becomes_markdown_without_scripts_styles_noscript_or_iframes() -> None:
    with serving(routes()) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/page", "public.test")
        )
    assert result.ok and not result.truncated
    value = result.value
    content = value["content"]
    assert value["title"] == "Test page"
    assert value["format"] == "markdown"
    assert "# Main heading" in content
    assert "**bold**" in content
    assert "[link](https://example.org/x)" in content
    assert "- one" in content and "- two" in content
    for dropped in ("SCRIPT-TEXT", "SCRIPT-TWO", "NOSCRIPT-TEXT", "IFRAME-TEXT", "color: red"):
        assert dropped not in content
    assert result.http_status == 200


async def test_text_format_drops_markup_and_html_format_returns_the_source() -> None:
    dns = resolver(public_test="127.0.0.1")
    with serving(routes()) as server:
        url = server.url("/page", "public.test")
        text = await fetch(loopback_tool(dns), url, format="text")
        source = await fetch(loopback_tool(dns), url, format="html")
    assert "Main heading" in text.value["content"]
    assert "#" not in text.value["content"] and "<p>" not in text.value["content"]
    assert "SCRIPT-TEXT" not in text.value["content"]
    assert source.value["content"] == PAGE.decode()


async def test_non_html_text_is_returned_as_it_came_whatever_the_format() -> None:
    body = b'{"items": [1, 2], "html": "<b>x</b>"}'
    extra = {"/data": Reply(body=body, content_type="application/json")}
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")),
            server.url("/data", "public.test"),
            format="markdown",
        )
    assert result.value["content"] == body.decode()
    assert result.value["format"] == "raw"


async def test_declared_charset_is_used_to_decode() -> None:
    body = "<p>café crème</p>".encode("latin-1")
    extra = {"/fr": Reply(body=body, content_type="text/html; charset=iso-8859-1")}
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/fr", "public.test")
        )
    assert result.value["content"] == "café crème"


async def test_binary_content_is_not_shown_but_saved_to_a_sidecar() -> None:
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    extra = {"/img": Reply(body=png, content_type="image/png")}
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/img", "public.test")
        )
    assert result.ok
    assert "content" not in result.value
    assert await anyio.Path(result.value["saved_to"]).read_bytes() == png
    assert "binary" in result.value["note"]


async def test_error_status_is_a_tool_error_with_the_status_and_an_excerpt() -> None:
    with serving(routes()) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")),
            server.url("/missing", "public.test"),
        )
    assert not result.ok
    assert result.http_status == 404
    assert result.error is not None
    assert "HTTP 404" in result.error and "no such page" in result.error


async def test_content_over_200_kb_is_cut_and_the_whole_text_goes_to_a_sidecar() -> None:
    paragraphs = "".join(f"<p>para {n:05d} {'x' * 90}</p>" for n in range(3000))
    extra = {"/big": Reply(body=f"<html><body>{paragraphs}</body></html>".encode())}
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/big", "public.test")
        )
    assert result.ok and result.truncated
    head = result.value["content"]
    assert len(head.encode()) <= 200 * 1024
    assert "para 00000" in head and "para 02999" not in head
    assert result.output_path is not None
    whole = await anyio.Path(result.output_path).read_text()
    assert whole.startswith(head) and "para 02999" in whole
    assert f"the whole text is in {result.output_path} (read it" in (result.text or "")


@functools.cache
def gzip_bomb(megabytes: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"a" * (1024 * 1024)
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


async def test_a_gzip_bomb_is_cut_at_max_bytes_of_decoded_data_while_streaming() -> None:
    bomb = gzip_bomb(200)
    assert len(bomb) < 1024 * 1024
    extra = {
        "/bomb": Reply(body=bomb, content_type="text/plain", headers={"Content-Encoding": "gzip"})
    }
    with serving(routes(**extra)) as server:
        tool = loopback_tool(resolver(public_test="127.0.0.1"))
        tracemalloc.start()
        try:
            result = await fetch(tool, server.url("/bomb", "public.test"), max_bytes=1024 * 1024)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert result.ok
    assert result.stdout_bytes == 1024 * 1024
    assert "larger than max_bytes" in result.value["note"]
    assert set(result.value["content"]) == {"a"}
    assert peak < 40 * 1024 * 1024, f"decoding used {peak} bytes: the cap was not applied"


@pytest.mark.parametrize("wbits", [15, -15], ids=["zlib-deflate", "raw-deflate"])
async def test_deflate_bodies_are_decoded_in_both_wire_forms(wbits: int) -> None:
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = packer.compress(b"deflated text") + packer.flush()
    extra = {
        "/z": Reply(body=body, content_type="text/plain", headers={"Content-Encoding": "deflate"})
    }
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/z", "public.test")
        )
    assert result.value["content"] == "deflated text"


async def test_loopback_is_refused_by_default_before_connecting() -> None:
    with serving(routes()) as server:
        with pytest.raises(PermissionDeniedError, match="loopback"):
            await fetch(WebFetchTool(Sessions()), server.url("/page"))
        assert server.hits == []


@pytest.mark.parametrize(
    "host",
    [
        "127.1",
        "0x7f000001",
        "2130706433",
        "0177.0.0.1",
        "[::1]",
        "[0:0:0:0:0:0:0:1]",
        "[::ffff:127.0.0.1]",
        "localhost.",
        "app.localhost",
        "metadata.google.internal",
        "printer.local",
    ],
)
async def test_loopback_and_local_spellings_are_refused_without_a_lookup(host: str) -> None:
    dns = resolver(public_test="127.0.0.1")
    with serving(routes()) as server:
        with pytest.raises(PermissionDeniedError, match="refused"):
            await fetch(WebFetchTool(Sessions(), resolver=dns), server.url("/page", host))
        assert server.hits == []
    assert dns.calls == []


@pytest.mark.parametrize(
    "answer",
    [["10.0.0.1"], ["169.254.169.254"], ["fd00::1"], [PUBLIC_UNREACHABLE, "192.168.1.1"]],
    ids=["private", "metadata", "unique-local", "mixed"],
)
async def test_names_resolving_to_non_public_addresses_are_refused(answer: list[str]) -> None:
    tool = WebFetchTool(Sessions(), resolver=resolver(evil_test=answer))
    with pytest.raises(PermissionDeniedError, match="resolves to"):
        await fetch(tool, "http://evil.test/")


@pytest.mark.parametrize(
    "url",
    [
        "http://user:pw@public.test/",
        "https://token@public.test/",
        "file:///etc/passwd",
        "ftp://public.test/file",
        "gopher://public.test:70/_stats",
        "dict://public.test:11211/stat",
    ],
)
async def test_credentials_and_non_http_schemes_are_refused(url: str) -> None:
    dns = resolver(public_test="127.0.0.1")
    with pytest.raises(ArgumentsError):
        await fetch(loopback_tool(dns), url)
    assert dns.calls == []


@pytest.mark.parametrize(
    "target",
    [
        "http://internal.test:{port}/secret",
        "http://meta.test/latest/meta-data/",
        "http://169.254.169.254/latest/meta-data/",
        "http://0xa9fea9fe/latest/meta-data/",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://[::ffff:a9fe:a9fe]/latest/meta-data/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://user:pw@public.test:{port}/secret",
    ],
)
async def test_every_redirect_hop_is_checked_again(target: str) -> None:
    dns = resolver(public_test="127.0.0.1", internal_test="10.0.0.1", meta_test="169.254.169.254")
    tool = loopback_tool(dns, host_check=lambda host: None)
    with serving(routes()) as server:
        with pytest.raises(PermissionDeniedError, match="redirect 1"):
            await fetch(tool, redirect_url(server, target.format(port=server.port)))
        assert [hit.path for hit in server.hits] == ["/redirect"]


async def test_a_redirect_to_a_non_http_scheme_is_not_followed() -> None:
    with serving(routes()) as server:
        with pytest.raises(ExecError, match="http"):
            await fetch(
                loopback_tool(resolver(public_test="127.0.0.1"), host_check=lambda host: None),
                redirect_url(server, "file:///etc/passwd"),
            )


async def test_redirects_stop_after_five_hops() -> None:
    with serving(routes()) as server:
        with pytest.raises(ExecTransportError, match="too many redirects"):
            await fetch(
                loopback_tool(resolver(public_test="127.0.0.1")),
                server.url("/loop", "public.test"),
            )
        assert len(server.hits) == 6


async def test_a_redirect_to_another_host_is_returned_when_no_scope_check_is_wired() -> None:
    dns = resolver(public_test="127.0.0.1", other_test="127.0.0.1")
    with serving(routes()) as server:
        target = server.url("/secret", "other.test")
        result = await fetch(loopback_tool(dns), redirect_url(server, target))
        assert [hit.path for hit in server.hits] == ["/redirect"]
    assert result.ok
    assert result.value["redirect_to"] == target
    assert dns.calls == ["public.test"]


async def test_a_redirect_to_a_host_outside_the_granted_scope_is_refused() -> None:
    dns = resolver(public_test="127.0.0.1", other_test="127.0.0.1")

    def scope(host: str) -> str | None:
        return None if host == "public.test" else f"host {host!r} is not in net.hosts"

    with serving(routes()) as server:
        with pytest.raises(PermissionDeniedError, match=r"not in net\.hosts"):
            await fetch(
                loopback_tool(dns, host_check=scope),
                redirect_url(server, server.url("/secret", "other.test")),
            )
        assert [hit.path for hit in server.hits] == ["/redirect"]


async def test_the_connection_goes_to_the_checked_address_without_a_second_lookup() -> None:
    # Later lookups answer an unroutable public address: had the client looked the name up
    # again (or at all: public.test is not in any real DNS), the fetch could not succeed.
    dns = Resolver({"public.test": [["127.0.0.1"], [PUBLIC_UNREACHABLE]]})
    with serving(routes()) as server:
        result = await fetch(loopback_tool(dns), server.url("/page", "public.test"))
        assert server.hits[0].headers["host"] == f"public.test:{server.port}"
    assert result.ok
    assert dns.calls == ["public.test"]


async def test_each_redirect_hop_is_resolved_once_and_checked_again() -> None:
    dns = Resolver({"public.test": [["127.0.0.1"], ["10.0.0.1"]]})
    with serving(routes()) as server:
        with pytest.raises(PermissionDeniedError, match=r"10\.0\.0\.1"):
            await fetch(loopback_tool(dns), redirect_url(server, "/page"))
        assert [hit.path for hit in server.hits] == ["/redirect"]
    assert dns.calls == ["public.test", "public.test"]


async def test_tls_uses_the_original_host_name_for_sni_and_verification(tmp_path: Path) -> None:
    server_tls, client_tls = tls_contexts(tmp_path, "secure.test")
    dns = resolver(secure_test="127.0.0.1", other_test="127.0.0.1")
    with serving(routes(), tls=server_tls) as server:
        tool = loopback_tool(dns, verify=client_tls)
        good = await fetch(tool, server.url("/page", "secure.test", scheme="https"))
        with pytest.raises(ExecTransportError, match=r"other\.test"):
            await fetch(tool, server.url("/page", "other.test", scheme="https"))
    assert good.ok and "# Main heading" in good.value["content"]


async def test_a_server_that_does_not_answer_in_time_is_a_timeout() -> None:
    extra = {"/slow": Reply(body=b"late", hold=True)}
    tool = loopback_tool(resolver(public_test="127.0.0.1"), timeout_s=0.5)
    with serving(routes(**extra)) as server:
        # The page is held for ever: only the tool's deadline ends the fetch (the limit
        # guards against a hang).
        with anyio.fail_after(60), pytest.raises(ExecTimeoutError, match=r"longer than 0\.5s"):
            await fetch(tool, server.url("/slow", "public.test"))


def test_the_spec_declares_net_fetch_for_the_url_and_a_read_only_open_world_tool() -> None:
    assert SPEC.name == "web_fetch"
    assert SPEC.argument_roles == {"url": ("net.fetch",)}
    assert "net.fetch" in SPEC.requires.capabilities
    assert SPEC.safety.read_only and SPEC.safety.open_world
    schema = compile_schema(SPEC.input_schema)
    assert schema.validate({"url": "https://example.com", "format": "text"}) == []
    assert schema.validate({"url": "https://example.com", "format": "pdf"}) != []
    assert schema.validate({"url": "https://example.com", "depth": 2}) != []


async def test_a_page_nested_too_deeply_for_markdown_comes_back_as_text() -> None:
    deep = b"<html><body>" + b"<div>" * 5000 + b"deep text" + b"</div>" * 5000 + b"</body></html>"
    extra = {"/deep": Reply(body=deep)}
    with serving(routes(**extra)) as server:
        result = await fetch(
            loopback_tool(resolver(public_test="127.0.0.1")), server.url("/deep", "public.test")
        )
    assert result.ok
    assert result.value["content"] == "deep text"
    assert "plain text" in result.value["note"]
