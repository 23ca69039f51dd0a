"""The pinned MCP Inspector CLI (2.12.0) as an independent, headless client.

Installed by scripts/install-inspector into .ci/node/; :func:`require_inspector` skips a test
module without node or without it. The Inspector is a TypeScript-SDK client: it checks a
result's structuredContent against the tool's outputSchema, errors included.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.paths import ROOT

INSPECTOR = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"
TOOL_ERROR_EXIT = 5
"""The Inspector's exit status for a result with isError (and for an unknown tool)."""


def require_inspector() -> None:
    if shutil.which("node") is None:
        pytest.skip(
            "node is not installed: the MCP Inspector e2e test needs it", allow_module_level=True
        )
    if not INSPECTOR.exists():
        pytest.skip(
            "the MCP Inspector is not installed: run scripts/install-inspector (npm) first",
            allow_module_level=True,
        )


@dataclass(frozen=True)
class Inspected:
    returncode: int
    result: Any
    """The printed result (``None`` when it printed none)."""
    error: Any
    """The JSON error line on stderr (``None`` when it printed none)."""


async def run_inspector(home: Path, *argv: str) -> Inspected:
    """One ``mcp-inspector --cli ... --format json`` run with a private HOME."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "MCP_STORAGE_DIR": str(home / "storage"),
        "XDG_DATA_HOME": str(home / "data"),
    }
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(INSPECTOR), "--cli", *argv, "--format", "json"], env=env, check=False
        )
    return Inspected(done.returncode, _last_json(done.stdout, "result"), _last_json(done.stderr))


def _last_json(data: bytes, key: str | None = None) -> Any:
    for line in reversed(data.decode("utf-8", "replace").splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                continue
            return value.get(key) if key is not None else value
    return None
