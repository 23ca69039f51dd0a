"""A real Redis (Debian's ``redis-server``) on 127.0.0.1 and a free port, for the shared-state
tests: started with the configuration operators use (deploy/redis.conf: an append-only log,
no eviction), in a folder of its own, stopped with the test run. Started and restarted in
the foreground: ``start`` returns once the server logs that it accepts connections (an
event on its stdout, not a poll).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import uuid
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server")
READY = b"Ready to accept connections"
CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "redis.conf"
START_TIMEOUT_S = 20.0


def need_redis() -> str:
    """The redis-server binary, or skip (CI installs it: .ci/run)."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server; .ci/run does)")
    return REDIS_SERVER


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process; ``url(db)`` names a database of it (without the password,
    which a test gives the way it means to)."""

    def __init__(self, folder: Path, port: int | None = None, password: str | None = None) -> None:
        self.folder = folder
        self.port = port or free_port()
        self.password = password
        """``requirepass``: every client must give it (none: Redis asks none)."""
        self.process: subprocess.Popen[bytes] | None = None
        self.log: list[bytes] = []

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        binary = need_redis()
        argv = [binary, str(CONFIG), "--port", str(self.port), "--bind", "127.0.0.1"]
        argv += ["--dir", str(self.folder)]
        if self.password is not None:
            argv += ["--requirepass", self.password]
        self.process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        assert self.process.stdout is not None
        for line in self.process.stdout:  # ends when the server exits
            self.log.append(line)
            if READY in line:
                return self
        raise RuntimeError(b"redis-server did not start:\n" + b"".join(self.log[-20:]))

    def stop(self, *, kill: bool = True) -> None:
        """Kill it (or, not ``kill``, shut it down: its log is written out first)."""
        if self.process is not None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=10)
            if self.process.stdout is not None:
                self.process.stdout.close()
            self.process = None

    def restart(self) -> None:
        """Shut it down and start it again on the same port, with the data it had."""
        self.stop(kill=False)
        self.start()

    def memory(self) -> int:
        """used_memory in bytes (INFO memory), through redis-cli."""
        auth = {"REDISCLI_AUTH": self.password} if self.password is not None else {}
        out = subprocess.run(
            ["redis-cli", "-p", str(self.port), "info", "memory"],
            env={**os.environ, **auth},
            capture_output=True,
            check=True,
            timeout=10,
        ).stdout.decode()
        return int(
            next(line.split(":")[1] for line in out.splitlines() if line.startswith("used_memory:"))
        )


def unique_prefix() -> str:
    return f"t{uuid.uuid4().hex[:10]}:"
