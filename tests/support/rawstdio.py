"""A raw JSON-RPC client for `python -m mcp_toolbridge serve`: bytes on the server's stdin,
one JSON object per line back from its stdout, no SDK in between (so a test can send what no
well-behaved client would)."""

from __future__ import annotations

import copy
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
"""The per-request envelope of a 2026-07-28 request. Never put in a message as it is: a test
that sets the client's capabilities in one message would set them in every later one of the
process (``modern`` copies it)."""
MAX_LINE = 64 << 20
ANSWER_WITHIN_S = 60.0
"""How long an answer is waited for by default: a guard against a hang, not a timing (a
server starting on a loaded 2-core machine takes several seconds to answer initialize)."""
REPO = Path(__file__).resolve().parents[2]
_started = itertools.count()


def request(request_id: object, method: str, params: object = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def modern(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """A 2026-07-28 request: ``params._meta`` carries the protocol version."""
    return request(request_id, method, {**(params or {}), "_meta": copy.deepcopy(MODERN_META)})


class PipeReader(ByteReceiveStream):
    """The read end of an OS pipe, owned by the test: closing it really closes the pipe, so
    the server's next write fails as it would if the client process had died."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd: int | None = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while self.fd is not None:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, max_bytes)
            except BlockingIOError:
                continue
            if not chunk:
                raise anyio.EndOfStream
            return chunk
        raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class RawServer:
    """One server process, the write end of its stdin and the read end of its stdout."""

    def __init__(self, process: Process, stdout: PipeReader, stderr_path: Path) -> None:
        self.process = process
        self.stdout = stdout
        self.stderr_path = stderr_path
        self._lines = BufferedByteReceiveStream(stdout)
        self.seen: list[dict[str, Any]] = []
        """Every message read so far, in order."""

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send_json(self, message: object) -> None:
        await self.send(json.dumps(message).encode() + b"\n")

    async def read_message(self) -> dict[str, Any]:
        """The next line of stdout, which must be one JSON-RPC 2.0 object."""
        line = await self._lines.receive_until(b"\n", MAX_LINE)
        message = json.loads(line)
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", line[:200]
        self.seen.append(message)
        return message

    async def answer_to(
        self, request_id: object, within_s: float = ANSWER_WITHIN_S
    ) -> dict[str, Any]:
        """Read until the response to ``request_id`` (a result or an error) arrives."""
        with anyio.fail_after(within_s):
            while True:
                message = await self.read_message()
                if message.get("id") == request_id and ("result" in message or "error" in message):
                    return message

    async def call(
        self, message: dict[str, Any], within_s: float = ANSWER_WITHIN_S
    ) -> dict[str, Any]:
        await self.send_json(message)
        return await self.answer_to(message["id"], within_s)

    async def initialize(self) -> None:
        """Open a 2025-era session: initialize, then notifications/initialized."""
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-test-client", "version": "0"},
        }
        answer = await self.call(request("init", "initialize", params))
        assert answer["result"]["protocolVersion"] == "2025-11-25"
        await self.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()

    async def wait_exit(self, within_s: float) -> int:
        with anyio.fail_after(within_s):
            return await self.process.wait()


@asynccontextmanager
async def raw_server(
    workdir: Path, *serve_args: str, audit: Path | None = None, env: dict[str, str] | None = None
) -> AsyncIterator[RawServer]:
    """Start ``serve *serve_args`` (stderr to a file in ``workdir``; audit lines to ``audit``,
    else none; ``env`` added to its environment); kill it on the way out if the test has not
    ended it."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(workdir), **(env or {})}
    stderr_path = workdir / f"server-stderr-{next(_started)}.txt"
    read_fd, write_fd = os.pipe()
    auditing = ["--audit", str(audit)] if audit is not None else ["--no-audit"]
    try:
        with stderr_path.open("wb") as stderr:
            process = await anyio.open_process(
                [sys.executable, "-m", "mcp_toolbridge", "serve", *auditing, *serve_args],
                env=env,
                stdout=write_fd,
                stderr=stderr,
                cwd=REPO,
            )
    finally:
        os.close(write_fd)
    stdout = PipeReader(read_fd)
    try:
        yield RawServer(process, stdout, stderr_path)
    finally:
        if process.returncode is None:
            process.kill()
        with anyio.move_on_after(5, shield=True):
            await process.wait()
        await process.aclose()
        await stdout.aclose()
