"""The TypeScript SDK's client (``@modelcontextprotocol/client`` 2.4.0, pinned in
tests/fixtures/ts-client/package-lock.json) as an independent client: the SDK most editors and
assistants are built on, in both protocol eras. scripts/install-ts-client installs it (CI
does); :func:`require_ts_client` skips a test module without node or without it.

:func:`run_ts_client` gives tests/fixtures/ts-client/client.mjs a plan (the era, the server,
the answer to confirmations, the calls) and returns what the client saw.
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from tests.support.node import find_node
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "ts-client"
INSTALLED = FIXTURE / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"
MIN_NODE = (20, 0)


def require_ts_client() -> None:
    if find_node(MIN_NODE) is None:
        pytest.skip(
            "node 20+ is not installed: the TypeScript client needs it", allow_module_level=True
        )
    if not INSTALLED.is_file():
        pytest.skip(
            "the TypeScript SDK's client is not installed: run scripts/install-ts-client (npm)",
            allow_module_level=True,
        )


async def run_ts_client(plan: dict[str, Any]) -> dict[str, Any]:
    """Run client.mjs with ``plan`` (its header says the shape) and return its report."""
    node = find_node(MIN_NODE)
    assert node is not None
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    with anyio.fail_after(120):  # a guard: each step has its own 60 s bound in the client
        done = await anyio.run_process(
            [node, str(FIXTURE / "client.mjs")],
            input=json.dumps(plan).encode(),
            cwd=FIXTURE,
            env=env,
            check=False,
        )
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, stderr
    report: dict[str, Any] = json.loads(done.stdout)
    report["stderr"] = stderr
    return report
