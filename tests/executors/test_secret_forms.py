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
import re
import sys
from pathlib import Path

from mcp_toolbridge.executors.base import ExecRequest
from mcp_toolbridge.executors.exec_tool import ERROR_TEXT_CHARS, QUOTE_BYTES, ExecToolExecutor
from mcp_toolbridge.executors.http import ERROR_EXCERPT_CHARS, HttpExecutor
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.model import ExecTransport, ToolSpec
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


ENCODES = r"""
exec >&2
export LC_ALL=C.UTF-8
v="$DEMO_KEY"
printf '%s' "$v" | base64 -w0; echo
printf 'x%s' "$v" | base64 -w0; echo
printf 'user:%s' "$v" | base64 -w0; echo
printf 'xy%s;' "$v" | basenc --base64url -w0; echo
printf 'DB_HOST=db.internal\nDB_PASSWORD=%s\nDB_USER=app\n' "$v" | base64
printf '%s' "$v" | od -An -v -tx1 | tr -d ' \n'; echo
printf '%s' "$v" | PYTHON -c 'import sys,urllib.parse as u;print(u.quote(sys.stdin.read(),safe=""))'
printf '%s\n' "$v" | rev
exit 1
"""
"""A tool that prints its own secret encoded, each line a form a real program writes: base64
of the value alone, at the two other byte alignments after a prefix, URL-safe, inside a file
of several lines that ``base64`` wraps at 76 columns; hex; percent-encoded; reversed."""
BESIDE = [(0, 4), (2, 4), (7, 4), (3, 6), (43, 22), (0, 0), (0, 0), (0, 0)]
"""How many characters before and after each line's marker the bytes around the value decide,
at most: ``x`` is two base64 characters, ``user:`` seven, ``xy`` three, the .env file's lines
before the value 43 and after it 18 (its wrapped block is given back as one line); after the
value, one character it shares with the next bytes, and the padding."""


def _shown(line: str, before: int, after: int) -> bool:
    """True when ``line`` is one marker between at most ``before`` and ``after`` characters."""
    pattern = f"[A-Za-z0-9+/_=-]{{0,{before}}}{re.escape(MARK)}[A-Za-z0-9+/_=-]{{0,{after}}}"
    return re.fullmatch(pattern, line) is not None


async def test_a_secret_a_tool_prints_encoded_is_a_marker_in_its_error_text_and_log(
    tmp_path: Path,
):
    argv = ["/bin/sh", "-c", ENCODES.replace("PYTHON", sys.executable)]
    log = Recorded()
    request = ExecRequest(
        spec=_spec(tmp_path).model_copy(update={"transport": ExecTransport(argv=argv)}),
        arguments={},
        timeout_s=10,
        secrets={SECRET_ID: SECRET},
        context=CallContext(log=log),
    )
    result = await ExecToolExecutor({"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}).run(request)
    assert result.error is not None
    lines = result.error.splitlines()
    assert len(lines) == len(BESIDE), result.error
    wrong = [line for line, at in zip(lines, BESIDE, strict=True) if not _shown(line, *at)]
    assert not wrong, result.error
    sent = [text for _, _, text in log.lines]  # live, line by line: the .env block's 2 lines
    assert sent[:4] + sent[6:] == lines[:4] + lines[5:], sent
    assert re.fullmatch(f"[A-Za-z0-9]{{43}}{re.escape(MARK)}", sent[4]), sent[4]  # wrapped:
    assert re.fullmatch(f"{re.escape(MARK)}[A-Za-z0-9=]{{0,22}}", sent[5]), sent[5]  # its ends


async def test_an_http_error_body_shows_no_encoded_secret():
    with running_server() as server:
        async with HttpExecutor.open() as executor:
            spec = http_spec(server.base_url + "/encoded/401", headers={"X-Key": "${secret:k}"})
            result = await run(executor, _request(spec, HTTP_SECRET))
    assert result.error is not None
    seen = json.loads(result.error[result.error.index("{") :].rstrip("…"))["seen"]
    assert set(seen) == {"base64", "base64url", "hex", "quoted", "reversed"}
    beside = {"base64": (8, 4), "base64url": (3, 6), "hex": (0, 0), "quoted": (0, 0)}
    for key, (before, after) in {**beside, "reversed": (0, 0)}.items():
        pattern = f"[A-Za-z0-9+/_=-]{{0,{before}}}\\[redacted:k\\][A-Za-z0-9+/_=-]{{0,{after}}}"
        assert re.fullmatch(pattern, seen[key]), (key, seen)
