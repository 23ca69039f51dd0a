"""Replicas of one service on this machine, as an operator runs them (docs/deploy.md): a real
Redis (deploy/redis.conf), N ``serve --http --state redis://…`` processes, and HAProxy in
front with the configuration deploy/haproxy.py writes, all on 127.0.0.1 and free ports.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process

from tests.support.httpserve import HttpServer, http_server
from tests.support.rawstdio import REPO
from tests.support.redis_server import RedisServer, free_port, need_redis

HAPROXY = shutil.which("haproxy")
KEYS = secrets.token_hex(32)


def need_haproxy() -> str:
    if HAPROXY is None:
        pytest.skip("haproxy is not installed (apt-get install haproxy; .ci/run does)")
    return HAPROXY


def haproxy_module() -> ModuleType:
    """deploy/haproxy.py, the configuration writer operators run."""
    spec = importlib.util.spec_from_file_location(
        "toolbridge_haproxy", REPO / "deploy" / "haproxy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Cluster:
    redis: RedisServer
    replicas: dict[str, HttpServer]
    audits: dict[str, Path]
    url: str
    """The load balancer's MCP endpoint."""
    lb: Process | None = None

    def direct(self, name: str) -> str:
        return self.replicas[name].url

    def kill(self, name: str) -> None:
        """kill -9 the replica."""
        os.kill(self.replicas[name].pid, signal.SIGKILL)

    def audit(self, name: str) -> list[dict[str, Any]]:
        import json

        path = self.audits[name]
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines()]

    def all_audits(self) -> list[dict[str, Any]]:
        return [line for name in self.audits for line in self.audit(name)]


async def _wait_ready(url: str, *, expect: int = 200) -> None:
    """Until the load balancer answers /readyz with ``expect`` (HAProxy starts, its checks
    pass): a bounded poll, since HAProxy announces neither."""
    base = url.rsplit("/mcp", 1)[0]
    async with httpx2.AsyncClient(timeout=2) as http:
        with anyio.fail_after(60):  # a guard: HAProxy's checks pass within seconds
            while True:
                try:
                    if (await http.get(f"{base}/readyz")).status_code == expect:
                        return
                except httpx2.HTTPError:
                    pass
                await anyio.sleep(0.1)


@asynccontextmanager
async def cluster(
    workdir: Path,
    names: tuple[str, ...] = ("r1", "r2", "r3"),
    *serve_args: str,
    per_replica: Mapping[str, tuple[str, ...]] | None = None,
    env: Mapping[str, str] | None = None,
) -> AsyncIterator[Cluster]:
    """``serve_args`` may name ``{lb}``: the load balancer's MCP URL (an OAuth audience)."""
    need_redis()
    haproxy = need_haproxy()
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    redis = RedisServer(workdir / "redis")
    (workdir / "redis").mkdir(exist_ok=True)
    await anyio.to_thread.run_sync(redis.start)
    environ = {"TOOLBRIDGE_STATE_KEYS": KEYS, **(env or {})}
    audits = {name: workdir / f"audit-{name}.ndjson" for name in names}
    lb_process: Process | None = None
    lb_log = (workdir / "haproxy.log").open("wb")
    try:
        async with AsyncExitStack() as stack:
            replicas: dict[str, HttpServer] = {}
            for name in names:
                given = [a.replace("{lb}", url) for a in serve_args]
                args = ["--state", redis.url(), "--replica", name, *given]
                args += (per_replica or {}).get(name, ())
                replicas[name] = await stack.enter_async_context(
                    http_server(workdir, *args, env=environ, audit=audits[name])
                )
            listed = [(n, s.url.split("//")[1].split("/")[0]) for n, s in replicas.items()]
            config = haproxy_module().render(f"127.0.0.1:{port}", listed)
            cfg = workdir / "haproxy.cfg"
            cfg.write_text(config)
            lb_process = await anyio.open_process(
                [haproxy, "-db", "-f", str(cfg)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=lb_log,
            )
            await _wait_ready(url)
            yield Cluster(redis, replicas, audits, url, lb_process)
    finally:
        if lb_process is not None:
            lb_process.kill()
            with anyio.move_on_after(10, shield=True):
                await lb_process.wait()
            await lb_process.aclose()
        lb_log.close()
        redis.stop()
