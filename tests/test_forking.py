"""A cache writer forked by forking.write_behind outlives the process that forked it: a client
that ends the server's whole process group (the MCP SDK's stdio client does) or its
descendants leaves the writer at work, in real processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.fresh_python import ROOT

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="writers are forked on Linux")

SERVER = """
import os, sys, time
from pathlib import Path
from mcp_toolbridge.forking import write_behind

go, done = Path(sys.argv[1]), Path(sys.argv[2])

def work():
    while not go.exists():  # the test says when: after it has ended this process's group
        time.sleep(0.05)
    done.write_text(f"{os.getpid()} {os.getsid(0)} {os.getppid()}")

assert write_behind(work)
print("forked", flush=True)
time.sleep(600)  # until the test kills the group
"""


def _wait_for(path: Path, limit_s: float) -> str:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)  # written by another process: look again
    raise AssertionError(f"{path} was never written")


def _run_then_kill_group(script: str, go: Path, done: Path) -> tuple[int, str]:
    """Start ``script`` as the SDK's stdio client starts a server (its own session), read its
    first line, and end its whole process group as that client does on its way out: the
    server's pid and that line."""
    server = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), str(go), str(done)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        start_new_session=True,
        text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline().strip()
        os.killpg(server.pid, signal.SIGKILL)
        server.wait(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stdout is not None:
            server.stdout.close()
    return server.pid, line


def test_a_writer_survives_the_end_of_its_process_group(tmp_path: Path) -> None:
    go, done = tmp_path / "go", tmp_path / "done"
    server_pid, line = _run_then_kill_group(SERVER, go, done)
    assert line == "forked"
    go.write_text("now")
    pid, session, parent = map(int, _wait_for(done, 60).split())
    assert session != server_pid  # another session (and process group) than the server's
    assert parent != server_pid and pid != server_pid  # and outside the server's tree


LISTENING_SERVER = """
import socket, sys, time
from pathlib import Path
from mcp_toolbridge.forking import write_behind

go, done = Path(sys.argv[1]), Path(sys.argv[2])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()

def work():
    while not go.exists():
        time.sleep(0.05)
    done.write_text("written")

assert write_behind(work)
print(listener.getsockname()[1], flush=True)
time.sleep(600)
"""


def test_a_writer_holds_no_socket_of_the_server(tmp_path: Path) -> None:
    """serve --http's port is free once the server ends, though its cache writer works on."""
    go, done = tmp_path / "go", tmp_path / "done"
    _, line = _run_then_kill_group(LISTENING_SERVER, go, done)
    port = int(line)
    try:
        with socket.socket() as again:
            again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            again.bind(("127.0.0.1", port))  # EADDRINUSE while anyone still listens on it
            again.listen()
    finally:
        go.write_text("now")  # the writer, still waiting until now, ends
    assert _wait_for(done, 60) == "written"
