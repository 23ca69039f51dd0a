"""A tool's own secrets (the ids it declares) in the forms a tool really prints them, with real
children and a real HTTP server: cut in two by the error text's tail or the quoted start of
stdout, JSON-escaped in an error object, a value of several lines on stderr's live log lines.

Each came back in part or whole before the red-team pass of 2026-11-29: the error texts were
cut first and redacted after (so the part of a secret left by the cut matched nothing), an
error object was quoted with ``json.dumps`` (``\\"`` and ``\\u00f6`` for the value's own
characters), and live log lines are redacted one by one (no line holds a value of several
lines)."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_toolbridge.executors.base import ExecRequest
from mcp_toolbridge.executors.exec_tool import ERROR_TEXT_CHARS, QUOTE_BYTES, ExecToolExecutor
from mcp_toolbridge.executors.http import ERROR_EXCERPT_CHARS, HttpExecutor
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ToolSpec
from mcp_toolbridge.secrets import redact, whole_markers
from tests.executors.test_exec_tool import call
from tests.executors.test_http import run
from tests.executors.test_live_lines import Recorded, _spec
from tests.support.http_fixture import http_spec, running_server

SECRET_ID = "demo/key"
SECRET = 'S3cr3t-pa"ss-wörd-0123456789abcdef'
"""A password with characters JSON escapes: a quote and a non-ASCII letter."""
MARK = f"[redacted:{SECRET_ID}]"
HTTP_SECRET = 'S3cr3t-pa"ss\\wd-0123456789abcdef'
"""Header values are ASCII: a quote and a backslash, which JSON escapes."""
LINES = "first-line-of-the-key-AAAA\nsecond-line-of-the-key-BBBB\nthird-CCCC"


def _parts(value: str) -> list[str]:
    """Every piece of ``value`` eight characters long: none may come back."""
    return [value[i : i + 8] for i in range(len(value) - 7)]


def _leaks(text: str, value: str = SECRET) -> list[str]:
    escaped = json.dumps(value)[1:-1]
    return [part for part in _parts(value) + _parts(escaped) if part in text]


async def test_a_secret_cut_by_the_error_texts_tail_is_a_marker(tmp_path: Path):
    stderr = "login failed: " + SECRET + "x" * (ERROR_TEXT_CHARS - 10)
    result = await call(tmp_path, {"stderr": stderr, "exit": 1}, secrets={SECRET_ID: SECRET})
    assert result.error is not None and not result.ok
    assert result.error.startswith("…" + MARK), result.error[:60]
    assert result.error.endswith("x" * 100) and not _leaks(result.error)


async def test_a_secret_cut_by_the_quoted_start_of_stdout_is_a_marker(tmp_path: Path):
    stdout = "y" * (QUOTE_BYTES - 10) + SECRET + " and no JSON"
    try:
        await call(tmp_path, {"stdout": stdout}, secrets={SECRET_ID: SECRET})
    except Exception as exc:  # ExecOutputError: the output is not JSON
        message = str(exc)
    assert "y" * 50 + MARK in message and not _leaks(message), message


async def test_an_error_object_quoted_whole_shows_no_escaped_secret(tmp_path: Path):
    line = json.dumps({"error": {"detail": "bad password " + SECRET, "code": 7}})
    assert json.dumps(SECRET)[1:-1] in line and SECRET not in line  # as a tool writes it
    result = await call(tmp_path, {"stderr": line + "\n", "exit": 2}, secrets={SECRET_ID: SECRET})
    assert result.error == json.dumps({"detail": f"bad password {MARK}", "code": 7})


async def test_a_secret_of_several_lines_is_redacted_from_each_live_log_line(tmp_path: Path):
    log = Recorded()
    request = ExecRequest(
        spec=_spec(tmp_path),
        arguments={"stderr": f"using the key:\n{LINES}\ndone\n", "exit": 1},
        timeout_s=10,
        secrets={SECRET_ID: LINES},
        context=CallContext(log=log),
    )
    result = await ExecToolExecutor({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).run(request)
    sent = [text for _, _, text in log.lines]
    assert sent == ["using the key:", MARK, MARK, MARK, "done"]
    assert result.error == f"using the key:\n{MARK}\ndone"


async def test_an_http_error_body_neither_cuts_nor_escapes_a_secret_into_view():
    with running_server() as server:
        async with HttpExecutor.open() as executor:
            spec = http_spec(server.base_url + "/status/500", headers={"X-Key": "${secret:k}"})
            escaped = await run(executor, _request(spec, HTTP_SECRET))
            assert escaped.error is not None and "[redacted:k]" in escaped.error
            assert not _leaks(escaped.error, HTTP_SECRET), escaped.error  # \" and \\ in the body
            plain = HTTP_SECRET.replace('"', "").replace("\\", "")

            def padded(pad: str) -> ToolSpec:
                headers = {"X-Pad": pad, "X-Key": "${secret:k}"}
                return http_spec(server.base_url + "/status/500", headers=headers)

            body = json.dumps((await run(executor, _request(padded("p"), plain))).value)
            at = body.index("[redacted:k]")  # where the secret stands in the body
            pad = "p" * (1 + ERROR_EXCERPT_CHARS - at - 10)  # now it straddles the cut
            cut = await run(executor, _request(padded(pad), plain))
    assert cut.error is not None
    assert cut.error.endswith("[redacted:k]…"), cut.error[-60:]
    assert not _leaks(cut.error, plain), cut.error[-60:]


def _request(spec: ToolSpec, secret: str) -> ExecRequest:
    return ExecRequest(spec=spec, arguments={}, timeout_s=5, secrets={"k": secret})


def test_a_cut_never_splits_a_marker():
    text = redact(f"ab {SECRET} cd", {SECRET_ID: SECRET})
    inside = text.index(MARK) + 3
    assert whole_markers(text, inside, inside + 1) == (3, 3 + len(MARK))
    assert whole_markers(text, 0, 2) == (0, 2)
