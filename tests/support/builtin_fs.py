"""Shared set-up for the file tool tests: a workspace with a prefix-twin next to it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from mcp_toolbridge.builtins.base import BuiltinTool
from mcp_toolbridge.executors.base import ExecRequest, ExecResult
from mcp_toolbridge.host import CallContext
from mcp_toolbridge.schemas import compile_schema

SESSION = "s1"
CALL_TIMEOUT_S = 120.0
"""The deadline of a :func:`call`: it only guards against a hang (the tests of deadlines make
their own requests), so it is far above what a search of a 5 MB line or the diagnostics of
a 15 MB file take on a loaded 2-core machine."""

FLIPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
folder, link = (p.encode() for p in sys.argv[1:3])
print("ready", flush=True)
while True:  # renameat2(AT_FDCWD, folder, AT_FDCWD, link, RENAME_EXCHANGE), x86_64
    libc.syscall(316, -100, folder, -100, link, 2)
"""
"""``python3 -c FLIPPER FOLDER LINK``: swaps a folder of the workspace with a symlink to
outside it, atomically, as fast as it can: what a process of another call (a bash line, a
manifest tool) can do while a file tool runs in the server."""


@asynccontextmanager
async def flipping(folder: Path, link: Path) -> AsyncIterator[None]:
    """While the block runs, a process swaps ``folder`` and ``link`` (:data:`FLIPPER`)."""
    argv = ["python3", "-c", FLIPPER, str(folder), str(link)]
    async with await anyio.open_process(argv) as flipper:
        assert flipper.stdout is not None
        assert (await flipper.stdout.receive()).startswith(b"ready")
        try:
            yield
        finally:
            flipper.kill()


@dataclass(frozen=True)
class Layout:
    ws: Path
    """The workspace (canonical)."""
    evil: Path
    """``<ws>_evil``: a sibling whose name starts with the workspace's name."""


def make_layout(tmp_path: Path) -> Layout:
    base = Path(os.path.realpath(tmp_path))
    ws = base / "ws"
    evil = base / "ws_evil"
    ws.mkdir()
    evil.mkdir()
    (evil / "secret.txt").write_text("top secret\n", encoding="utf-8")
    return Layout(ws, evil)


async def call(tool: BuiltinTool, session: str = SESSION, **arguments: Any) -> ExecResult:
    problems = compile_schema(tool.spec.input_schema).validate(arguments)
    assert problems == [], problems
    request = ExecRequest(
        spec=tool.spec,
        arguments=arguments,
        timeout_s=CALL_TIMEOUT_S,
        context=CallContext(session_id=session),
    )
    return await tool.run(request)


def err(result: ExecResult) -> str:
    """The error text of a failed result (asserting it failed)."""
    assert not result.ok and result.error is not None, result
    return result.error


def sidecar(result: ExecResult) -> Path:
    assert result.truncated and result.output_path is not None, result
    return Path(result.output_path)


def sidecar_lines(result: ExecResult) -> list[str]:
    return sidecar(result).read_text(encoding="utf-8").splitlines()
