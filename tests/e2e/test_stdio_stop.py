"""SIGTERM to ``serve --console`` over stdio, the way a client that outlives its server's stdin
stops it, and Ctrl-C (SIGINT) at the terminal a person started it from (the README's first
command), with stdin a pipe or a terminal (a pseudo-terminal here), while a person has the
console open (its page, and the page's event stream): the process exits at once (0; 130 for
Ctrl-C, as every verb), says nothing but its own lines on the way, and the console's port is
closed (docs/operating.md, "Over stdio", Stopping).

Before, SIGTERM cancelled the console's uvicorn in the middle of its run: its app's lifespan
was cancelled too, and uvicorn logged a ``CancelledError`` traceback on every stop. Ctrl-C did
not stop the server at all while stdin stayed open, and at a terminal (read in a worker
thread) neither did SIGTERM: each waited for a line or the end of stdin.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.abc import Process

from tests.support.manifests import ECHO, agentcli_manifest, echo_tool

pytestmark = pytest.mark.e2e

NOISE = ("Traceback", "CancelledError", "ERROR", "error:", "without completing response")
_CONSOLE = re.compile(r"console at (http://127\.0\.0\.1:(\d+))/\?token=\S+")


async def _console_url(process: Process, seen: bytearray) -> tuple[str, int]:
    """The console's URL (with its token) and port, from stderr as it comes."""
    assert process.stderr is not None
    with anyio.fail_after(30):
        while (found := _CONSOLE.search(seen.decode(errors="replace"))) is None:
            chunk = await process.stderr.receive()
            seen += chunk
    return found.group(0).split("console at ", 1)[1], int(found.group(2))


async def _drain(process: Process, seen: bytearray) -> None:
    assert process.stderr is not None
    try:
        async for chunk in process.stderr:
            seen += chunk
    except anyio.EndOfStream:
        pass


def _refused(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize("stdin", ["pipe", "terminal"])
@pytest.mark.parametrize(
    ("sent", "status"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"]
)
async def test_a_signal_ends_serve_over_stdio_with_the_console_open(
    tmp_path: Path, sent: signal.Signals, status: int, stdin: str
) -> None:
    tools = agentcli_manifest(tmp_path / "tools", [echo_tool("tool_00")], {"echo": ECHO})
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        "XDG_RUNTIME_DIR": str(tmp_path),
    }
    argv = [sys.executable, "-m", "mcp_toolbridge", "serve", "--no-audit"]
    argv += ["--workspace", str(tmp_path), "--console", "127.0.0.1:0", str(tools.parent)]
    seen = bytearray()
    terminal, ours = os.openpty() if stdin == "terminal" else (-1, -1)
    given: int = ours if stdin == "terminal" else subprocess.PIPE
    async with await anyio.open_process(
        argv, env=env, cwd=tmp_path, stdin=given, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        try:
            url, port = await _console_url(process, seen)
            ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n'
            if process.stdin is not None:
                await process.stdin.send(ping)
            else:
                os.write(terminal, ping)  # typed at the terminal
            assert process.stdout is not None
            with anyio.fail_after(10):
                assert b'"id":1,"result":{}' in await process.stdout.receive()
            async with anyio.create_task_group() as group, httpx2.AsyncClient(timeout=10) as http:
                group.start_soon(_drain, process, seen)
                opened = await http.get(url)  # the one-time URL: a cookie, then the page
                assert opened.status_code == 303, opened.text
                base = url.split("/?", 1)[0]
                assert (await http.get(base + "/")).status_code == 200
                async with http.stream("GET", base + "/events") as events:
                    assert events.status_code == 200  # held open, as the page holds it
                    process.send_signal(sent)
                    with anyio.fail_after(5):
                        assert await process.wait() == status
        finally:
            if process.returncode is None:
                process.kill()
            for fd in (terminal, ours):
                if fd >= 0:
                    os.close(fd)
    stderr = seen.decode(errors="replace")
    assert f"{sent.name}: stopping" in stderr
    noisy = [line for line in stderr.splitlines() if any(n in line for n in NOISE)]
    assert noisy == [], stderr
    assert _refused(port)
