"""``mcp-toolbridge serve --console 127.0.0.1:0`` over real stdio: the server prints the
console's URL (with its token) on stderr, and a headless SDK client's call (it declares no
elicitation) waits there until the person answers, in both protocol eras."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.console.conftest import Person, catalog

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

_CONSOLE = re.compile(r"console at (http://\S+)")


async def _url_from(read_fd: int) -> str:
    """The console's URL from the server's stderr, read until the line arrives."""
    seen = b""
    with anyio.fail_after(30):
        while (found := _CONSOLE.search(seen.decode(errors="replace"))) is None:
            await anyio.wait_readable(read_fd)
            chunk = os.read(read_fd, 65536)
            assert chunk, f"the server ended before it printed the console: {seen!r}"
            seen += chunk
    return found.group(1)


class _Console:
    """Enough of a Console for :meth:`Person.at`: its URL."""

    def __init__(self, url: str) -> None:
        self.url = url


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_serve_over_stdio_with_a_console_waits_for_the_persons_answer(
    tmp_path: Path, mode: str
) -> None:
    audit = tmp_path / "audit.ndjson"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env["XDG_CACHE_HOME"] = os.environ["XDG_CACHE_HOME"]
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "mcp_toolbridge", "serve", "--audit", str(audit), "--locked", "none"),
            *("--console", "127.0.0.1:0", str(catalog(tmp_path))),
        ],
        env=env,
    )
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    with os.fdopen(write_fd, "w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog), mode=mode) as client:
                url = await _url_from(read_fd)
                async with Person.at(_Console(url)) as me:  # type: ignore[arg-type]
                    result: list[Any] = []

                    async def call() -> None:
                        result.append(await client.call_tool("note", {"text": "stdio"}))

                    async with anyio.create_task_group() as group:
                        group.start_soon(call)
                        [waiting] = await me.waiting()
                        await me.answer(waiting, "always")
                    assert result[0].structured_content == {"noted": "stdio"}
                    again = await client.call_tool("note", {"text": "again"})  # always: no ask
                    assert not again.is_error
        finally:
            os.close(read_fd)
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [(line["answer"], line["outcome"]) for line in lines] == [
        ("always", "ok"),
        (None, "ok"),
    ]
    assert lines[0]["answeredBy"].startswith("console:")


class _Stderr:
    """The server's stderr, read as it comes."""

    def __init__(self, read_fd: int) -> None:
        self.fd = read_fd
        self.seen = b""

    async def urls(self, count: int) -> list[str]:
        """The console URLs printed so far, once there are ``count``."""
        with anyio.fail_after(30):
            while len(found := _CONSOLE.findall(self.seen.decode(errors="replace"))) < count:
                await anyio.wait_readable(self.fd)
                chunk = os.read(self.fd, 65536)
                assert chunk, f"the server ended: {self.seen!r}"
                self.seen += chunk
        return found


async def _console_url(env: dict[str, str]) -> tuple[int, str]:
    done = await anyio.run_process(
        [sys.executable, "-m", "mcp_toolbridge", "console-url"], env=env, check=False
    )
    return done.returncode, done.stdout.decode().strip()


async def test_the_printed_url_opens_once_and_console_url_gives_the_next(tmp_path: Path) -> None:
    """Over stdio, as a client such as Claude Desktop starts it (stderr kept in a log): the
    URL printed at start opens once; then the server prints the next, ``mcp-toolbridge
    console-url`` prints the one not yet spent (from an owner-only file in the user's runtime
    folder), the spent one gets a page that says so, and when the server ends its file goes
    and ``console-url`` finds no console."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    env |= {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"], "XDG_RUNTIME_DIR": str(runtime)}
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "mcp_toolbridge", "serve", "--locked", "none"),
            *("--console", "127.0.0.1:0", str(catalog(tmp_path))),
        ],
        env=env,
    )
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    stderr = _Stderr(read_fd)
    kept = runtime / "mcp-toolbridge" / "console"
    with os.fdopen(write_fd, "w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog)):
                [first] = await stderr.urls(1)
                assert await _console_url(env) == (0, first)
                [file] = kept.iterdir()
                assert file.stat().st_mode & 0o777 == 0o600
                assert kept.stat().st_mode & 0o777 == 0o700
                async with Person.at(_Console(first)) as me:  # type: ignore[arg-type]
                    _, second = await stderr.urls(2)
                    assert second != first
                    assert await _console_url(env) == (0, second)
                    spent = await me.http.get(first)
                    assert spent.status_code == 401 and "console-url" in spent.text
                    assert "Calls waiting" in await me.page("/")  # the session goes on
        finally:
            os.close(read_fd)
    assert not file.exists()
    code, printed = await _console_url(env)
    assert code == 1 and printed == ""
