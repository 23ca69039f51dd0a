"""Secrets in output that is cut before it is shown, through a real server over stdio with the
SDK client in both protocol eras: a read window inside a private key, a grep on its body
lines, a token split by the 2,000-character cut of a line (read, and a live log line) and by
bash's head/tail cut come back as ``[REDACTED:<rule-id>]``, never a fragment the scan did not
recognise; each result still says what was cut. With the secret scan off, the cuts show what
they cut, as before."""

from __future__ import annotations

import json
import os
import random
import string
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from tests.support.manifests import NOT_DESTRUCTIVE, agentcli_manifest
from tests.support.served import OPEN_LOOPBACK_POLICY
from tests.support.web_fixture import Reply, serving

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),  # setLevel
]
MODES = ["auto", "legacy"]
ALNUM = string.ascii_letters + string.digits
_rng = random.Random(41)


def _r(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


GITHUB = "ghp_" + _r(ALNUM, 36)
PEM_LINES = [_r(ALNUM + "+/", 64) for _ in range(24)]
PEM = "\n".join(["-----BEGIN RSA PRIVATE KEY-----", *PEM_LINES, "-----END RSA PRIVATE KEY-----"])
LONG_LINE = "x" * 1974 + " " + GITHUB + " and more"
"""The token starts 25 characters before the 2,000-character cut: 21 of its 36 characters
after ``ghp_`` would show."""
BIG = f"""import sys
token = {GITHUB!r}
total, head = 250 * 1024, 200 * 1024 * 3 // 4
tail = total - (200 * 1024 - head)
sys.stdout.write("a" * (head - 25) + token + "b" * (tail - head - 40 + 25 - 15))
sys.stdout.write(token + "c" * (total - tail - 25))
"""
"""250 KB of stdout, over bash's 200 KB: its first 150 KB and its last 50 KB are shown, a
token straddling each edge (25 of its characters on the shown side)."""
FAILS = f"""import sys
sys.stderr.write("z" * 500 + {GITHUB!r} + "e" * 975)
sys.exit(1)
"""
"""Fails; the error shows the last 1,000 characters of stderr, 25 of them the token's end."""
GARBLED = f"""import sys
sys.stdout.write("o" * 175 + {GITHUB!r} + " is not JSON")
"""
"""Prints what is not JSON; the error quotes the first 200 bytes, 25 of them the token's."""
REPORTER = f"""import json, os
line = json.dumps({{"progress": 1, "total": 2, "message": {LONG_LINE!r}}})
with open(int(os.environ["TOOLBRIDGE_PROGRESS_FD"]), "w") as channel:
    channel.write(line + "\\n")
print("{{}}")
"""
"""Reports progress with a message a token straddles the 2,000-character cut of."""
POLICY = OPEN_LOOPBACK_POLICY
SCAN_OFF = '\n[secret_scan]\nmode = "off"\n'


def _fragments(text: str) -> list[str]:
    """The parts of the secrets that must not show: any key line, any 16 characters of the
    token."""
    found = [line for line in PEM_LINES if line in text]
    found += [GITHUB[i : i + 16] for i in range(len(GITHUB) - 15) if GITHUB[i : i + 16] in text]
    return found


def _workspace(tmp_path: Path) -> Path:
    workspace = Path(os.path.realpath(tmp_path)) / "ws"
    workspace.mkdir()
    (workspace / "id_rsa").write_text(PEM + "\n", encoding="utf-8")
    (workspace / "long.txt").write_text(f"first\n{LONG_LINE}\nlast\n", encoding="utf-8")
    (workspace / "big.py").write_text(BIG, encoding="utf-8")
    return workspace


class Heard:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.long_line = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.lines.append(str(params.data))
        if "more characters" in str(params.data):
            self.long_line.set()


@asynccontextmanager
async def _served(
    tmp_path: Path,
    mode: str,
    heard: Heard | None = None,
    *,
    policy: str = POLICY,
    http_url: str | None = None,
) -> AsyncIterator[Client]:
    """A server over stdio with the locked tools, three manifest exec tools and, given
    ``http_url``, the Runloop HTTP tool ``cut_missing`` that GETs it."""
    workspace = _workspace(tmp_path)
    paths = [str(tmp_path / "m")]
    if http_url is not None:
        tool = {
            "id": "cut.missing",
            "description": "Fetches a page",
            "transport": {"kind": "http", "method": "GET", "url": http_url},
            "input_schema": {"type": "object"},
            "result_schema": {"type": "object"},
        }
        (tmp_path / "h").mkdir()
        manifest = {"version": 1, "tools": [tool]}
        (tmp_path / "h" / "tools.json").write_text(json.dumps(manifest), encoding="utf-8")
        paths.append(str(tmp_path / "h"))
    tools = [
        {
            "name": name,
            "description": "Fails, printing a token",
            "schema": {"type": "object", "properties": {}, "additionalProperties": False},
            "command": [f"./tools/bin/{name}"],
            "annotations": NOT_DESTRUCTIVE,
        }
        for name in ("fails", "garbled", "reporter")
    ]
    scripts = {"fails": FAILS, "garbled": GARBLED, "reporter": REPORTER}
    agentcli_manifest(tmp_path / "m", tools, scripts)
    policy_file = tmp_path / "policy.toml"
    policy_file.write_text(policy.replace("{workspace}", str(workspace)), encoding="utf-8")
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "mcp_toolbridge", "serve", *paths),
            *("--audit", str(tmp_path / "audit.ndjson")),
            *("--locked", "read,grep,bash,web_fetch"),
            *("--policy", str(policy_file), "--workspace", str(workspace)),
        ],
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)},
    )
    level = {"log_level": "info"} if mode == "auto" else {}
    with anyio.fail_after(60):
        async with Client(server, mode=mode, logging_callback=heard, **level) as client:  # type: ignore[arg-type]
            if mode == "legacy" and heard is not None:
                await client.set_logging_level("info")
            yield client


async def _text(client: Client, tool: str, arguments: dict[str, object]) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.parametrize("mode", MODES)
async def test_a_read_window_and_a_grep_inside_a_private_key_show_no_key_line(
    tmp_path: Path, mode: str
) -> None:
    async with _served(tmp_path, mode) as client:
        window = await _text(client, "read", {"file_path": "id_rsa", "offset": 3, "limit": 4})
        first = await _text(client, "read", {"file_path": "id_rsa", "limit": 3})
        last = await _text(client, "read", {"file_path": "id_rsa", "offset": 24})
        body = await _text(
            client, "grep", {"pattern": "^[A-Za-z0-9+/]{64}$", "output_mode": "content"}
        )
        whole = await _text(client, "read", {"file_path": "id_rsa"})
    assert window.splitlines()[:4] == [f"{n:>6}\t[REDACTED:private-key]" for n in range(3, 7)]
    assert "showing lines 3-6 of 26; continue with offset=7" in window
    assert first.splitlines()[0] == "     1\t[REDACTED:private-key]"
    assert "showing lines 1-3 of 26" in first
    assert last.splitlines()[-1] == "    26\t[REDACTED:private-key]"
    assert "id_rsa:2:[REDACTED:private-key]" in body.splitlines()
    assert "[REDACTED:private-key]" in whole
    audit = [json.loads(line) for line in (tmp_path / "audit.ndjson").read_text().splitlines()]
    assert [line["tool"] for line in audit] == ["read", "read", "read", "grep", "read"]
    assert [line.get("redacted") for line in audit[:4]] == [{"private-key": 1}] * 4
    assert not any(fragment in json.dumps(audit) for fragment in PEM_LINES)
    for text in (window, first, last, body, whole):
        assert _fragments(text) == [], text


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_split_by_a_line_cut_is_redacted_in_read_and_in_a_live_log_line(
    tmp_path: Path, mode: str
) -> None:
    heard = Heard()
    async with _served(tmp_path, mode, heard) as client:
        read = await _text(client, "read", {"file_path": "long.txt"})
        grep = await _text(client, "grep", {"pattern": "and more", "output_mode": "content"})
        await _text(client, "bash", {"command": "cat long.txt >&2"})
        with anyio.fail_after(10):  # the line's notification may arrive after the result
            await heard.long_line.wait()
    line = read.splitlines()[1]
    assert line == (
        f"     2\t{'x' * 1974} [REDACTED:github-pat]… [line cut at 2000 characters; "
        f"the whole line is {len(LONG_LINE) + 1} bytes]"
    )
    assert "1 line(s) longer than 2000 characters were cut" in read
    assert grep.splitlines()[0] == (
        f"long.txt:2:{'x' * 1974} [REDACTED:github-pat]… [line cut at 2000 characters]"
    )
    [logged] = [text for text in heard.lines if "more characters" in text]
    assert (
        logged == f"{'x' * 1974} [REDACTED:github-pat]… [{len(LONG_LINE) - 2000} more characters]"
    )
    for text in (read, grep, *heard.lines):
        assert _fragments(text) == [], text


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_split_by_bash_head_and_tail_cut_is_redacted(
    tmp_path: Path, mode: str
) -> None:
    async with _served(tmp_path, mode) as client:
        text = await _text(client, "bash", {"command": f"{sys.executable} big.py"})
    assert "[REDACTED:github-pat]" in text
    assert "bytes omitted, full output in" in text
    assert _fragments(text) == [], text[:200]


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_split_by_web_fetch_cuts_is_redacted(tmp_path: Path, mode: str) -> None:
    cap = 200 * 1024  # the content shown; the token starts 25 characters before its end
    page = ("p" * (cap - 25) + GITHUB + "q" * 50_000).encode()
    missing = ("n" * 275 + " " + GITHUB + " gone").encode()  # the error shows 300 characters
    gone = ("g" * 475 + " " + GITHUB + " gone").encode()  # an HTTP tool's error shows 500
    routes = {
        "/page": Reply(body=page, content_type="text/plain; charset=utf-8"),
        "/missing": Reply(status=404, body=missing, content_type="text/plain; charset=utf-8"),
        "/gone": Reply(status=410, body=gone, content_type="text/plain; charset=utf-8"),
    }
    with serving(routes) as web:
        async with _served(tmp_path, mode, http_url=web.url("/gone")) as client:
            fetched = await _text(client, "web_fetch", {"url": web.url("/page")})
            failed = await client.call_tool("web_fetch", {"url": web.url("/missing")})
            http = await client.call_tool("cut_missing", {})
    assert "p" * 100 + "[REDACTED:github-pat]" in fetched
    assert f"content capped at 200 KB: the first {cap} of {len(page)} bytes are shown" in fetched
    assert failed.is_error
    error = "".join(c.text for c in failed.content if isinstance(c, types.TextContent))
    assert error.endswith("n" * 100 + " [REDACTED:github-pat]"), error[-200:]
    assert http.is_error  # a manifest HTTP tool's error shows the first 500 characters
    http_error = "".join(c.text for c in http.content if isinstance(c, types.TextContent))
    assert "g" * 100 + " [REDACTED:github-pat]…" in http_error, http_error
    assert _fragments(fetched) == [] and _fragments(error) == [] and _fragments(http_error) == []


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_split_where_a_manifest_tool_s_error_quotes_its_output_is_redacted(
    tmp_path: Path, mode: str
) -> None:
    async with _served(tmp_path, mode) as client:
        fails = await client.call_tool("fails", {})
        garbled = await client.call_tool("garbled", {})
    errors = []
    for result in (fails, garbled):
        assert result.is_error, result
        errors.append("".join(c.text for c in result.content if isinstance(c, types.TextContent)))
    assert "…[REDACTED:github-pat]" + "e" * 975 in errors[0], errors[0][:300]
    assert "o" * 175 + "[REDACTED:github-pat]'" in errors[1], errors[1]
    for error in errors:
        assert _fragments(error) == [], error


@pytest.mark.parametrize("mode", MODES)
async def test_a_token_split_by_the_cut_of_a_progress_message_is_redacted(
    tmp_path: Path, mode: str
) -> None:
    heard: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append(message)

    async with _served(tmp_path, mode) as client:
        result = await client.call_tool("reporter", {}, progress_callback=on_progress)
    assert not result.is_error, result
    more = len(LONG_LINE) - 2000
    assert heard == [f"{'x' * 1974} [REDACTED:github-pat]… [{more} more characters]"]


@pytest.mark.parametrize("mode", ["auto"])
async def test_with_the_secret_scan_off_the_cuts_show_what_they_cut(
    tmp_path: Path, mode: str
) -> None:
    async with _served(tmp_path, mode, policy=POLICY + SCAN_OFF) as client:
        window = await _text(client, "read", {"file_path": "id_rsa", "offset": 3, "limit": 4})
        read = await _text(client, "read", {"file_path": "long.txt"})
    assert window.splitlines()[:4] == [f"{n:>6}\t{PEM_LINES[n - 2]}" for n in range(3, 7)]
    assert f"{'x' * 1974} {GITHUB[:25]}… [line cut" in read
