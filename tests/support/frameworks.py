"""The agent frameworks people build MCP clients with (openai-agents, pydantic-ai,
langchain-mcp-adapters; pinned in tests/fixtures/frameworks/requirements.txt) as independent
clients. scripts/install-frameworks installs them into a virtualenv of their own (CI does);
:func:`require_frameworks` skips a test module without it.

:func:`run_framework` gives tests/fixtures/frameworks/driver.py a plan (the framework, the
server, the calls) and returns what the framework showed (its header says the shape).
"""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import pytest

from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "frameworks"
PYTHON = FIXTURE / ".venv" / "bin" / "python"
STAMP = FIXTURE / ".venv" / ".install-stamp"
FRAMEWORKS = ("openai-agents", "pydantic-ai", "langchain")


def require_frameworks() -> None:
    if not (PYTHON.is_file() and STAMP.is_file()):
        pytest.skip(
            "the agent frameworks are not installed: run scripts/install-frameworks",
            allow_module_level=True,
        )


async def run_framework(plan: dict[str, Any]) -> dict[str, Any]:
    """Run driver.py with ``plan`` under the frameworks' python and return its report."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    env["OPENAI_AGENTS_DISABLE_TRACING"] = "1"  # openai-agents would upload traces
    with anyio.fail_after(120):  # a guard: the driver bounds its own run at 90 s
        done = await anyio.run_process(
            [str(PYTHON), str(FIXTURE / "driver.py")],
            input=json.dumps(plan).encode(),
            cwd=FIXTURE,
            env=env,
            check=False,
        )
    stderr = done.stderr.decode(errors="replace")
    assert done.returncode == 0, stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    report["stderr"] = stderr
    return report
