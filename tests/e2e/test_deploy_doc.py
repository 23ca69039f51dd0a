"""docs/deploy.md's first command, run as written (bash, a real Redis): only the Redis URL,
the port, the policy and the manifests are this test's. As written before, it exited 2
("refusing to serve on 0.0.0.0 without a bearer token"), and without --allow-host a client
reaching the load balancer by its name was answered 421."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.support.httpserve import ACCEPT, request
from tests.support.manifests import ECHO, agentcli_manifest, echo_tool
from tests.support.rawstdio import REPO
from tests.support.redis_server import RedisServer, free_port, need_redis

pytestmark = pytest.mark.e2e


def _first_block() -> str:
    text = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    found = re.search(r"```\n(.*?)```", text, re.S)
    assert found is not None
    return found.group(1)


async def test_the_first_replica_command_of_deploy_md_serves_the_load_balancers_name(
    tmp_path: Path,
) -> None:
    need_redis()
    agentcli_manifest(tmp_path / "manifests", [echo_tool("echo_a")], {"echo": ECHO})
    (tmp_path / "policy.toml").write_text("", encoding="utf-8")
    redis = RedisServer(tmp_path).start()
    port = free_port()
    block = _first_block()
    for written, ours in (
        ("redis://redis.internal:6379/0", redis.url()),
        ("0.0.0.0:8765", f"0.0.0.0:{port}"),
        ("mcp-toolbridge serve", f"exec {sys.executable} -m mcp_toolbridge serve --no-audit"),
    ):
        assert written in block
        block = block.replace(written, ours)
    script = 'set -e\ncd "$1"\n' + block.replace(
        "\nexec ", '\nprintf %s "$TOOLBRIDGE_TOKEN" >token\nexec ', 1
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(REPO)}
    try:
        process = await anyio.open_process(
            ["bash", "-c", script, "deploy", str(tmp_path)],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
        )
        async with process:
            assert process.stderr is not None
            stream = BufferedByteReceiveStream(process.stderr)
            with anyio.fail_after(60):
                line = b""
                while b"over streamable HTTP at" not in line:
                    try:
                        line = await stream.receive_until(b"\n", 1 << 20)
                    except anyio.IncompleteRead:
                        raise AssertionError(f"it exited: {line!r}") from None
            token = (tmp_path / "token").read_text(encoding="utf-8")
            params = {"protocolVersion": "2025-11-25", "capabilities": {}}
            opening = request("initialize", {**params, "clientInfo": {"name": "t", "version": "0"}})
            headers = {
                **ACCEPT,
                "Host": "tools.example.com:8700",
                "Authorization": f"Bearer {token}",
            }
            async with httpx2.AsyncClient(timeout=30) as http:
                answer = await http.post(
                    f"http://127.0.0.1:{port}/mcp", json=opening, headers=headers
                )
            process.terminate()
            with anyio.fail_after(30):
                await process.wait()
    finally:
        redis.stop()
    assert answer.status_code == 200, answer.text
    assert answer.headers["mcp-session-id"].startswith("r1.")
